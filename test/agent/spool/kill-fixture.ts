import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let child: ChildProcess | undefined;

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..', '..');
const SCRIPT = join(HERE, 'fixtures', 'append-loop.ts');

/**
 * Runs the append loop (fixtures/append-loop.ts) on the spool in `dir` until it has printed
 * `appends` seqs, then SIGKILLs it.
 *
 * @param dir - the spool directory
 * @param appends - acknowledged appends to wait for, ≥ 1
 * @returns the seqs it printed (each appended and fdatasync'd)
 * @throws when the loop exits on its own
 */
export async function appendThenKill(dir: string, appends: number): Promise<number[]> {
  const proc = spawn(process.execPath, ['--import', 'tsx', SCRIPT, dir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child = proc;
  const printed: number[] = [];
  let stderr = '';
  let buffered = '';
  proc.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const exit = new Promise<NodeJS.Signals | null>((resolve) =>
    proc.on('exit', (_code, signal) => resolve(signal)),
  );
  proc.stdout?.on('data', (c: Buffer) => {
    buffered += c.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const match = /^appended (\d+)$/.exec(line);
      if (match) printed.push(Number(match[1]));
    }
    if (printed.length >= appends) proc.kill('SIGKILL');
  });
  const signal = await exit;
  child = undefined;
  if (signal !== 'SIGKILL') throw new Error(`append loop exited on its own (signal ${signal}): ${stderr}`);
  return printed;
}

/** SIGKILLs the append loop still running, if any (for afterEach). */
export function killAppendLoop(): void {
  child?.kill('SIGKILL');
  child = undefined;
}
