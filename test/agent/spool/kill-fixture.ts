import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let child: ChildProcess | undefined;

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..', '..');
const SCRIPT = join(HERE, 'fixtures', 'append-loop.ts');

/**
 * Runs `script` (TypeScript, through tsx) in a child process until it has printed `count` lines
 * matching `line` (whose first group is a number), then SIGKILLs it.
 *
 * @param script - absolute path of the child script
 * @param args - its arguments
 * @param line - the line to count, e.g. `/^appended (\d+)$/`
 * @param count - lines to wait for, ≥ 1
 * @returns the numbers of the lines it printed
 * @throws when the child exits on its own
 */
export async function runThenKill(
  script: string,
  args: readonly string[],
  line: RegExp,
  count: number,
): Promise<number[]> {
  const proc = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
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
    for (const text of lines) {
      const match = line.exec(text);
      if (match) printed.push(Number(match[1]));
    }
    if (printed.length >= count) proc.kill('SIGKILL');
  });
  const signal = await exit;
  child = undefined;
  if (signal !== 'SIGKILL') throw new Error(`${script} exited on its own (signal ${signal}): ${stderr}`);
  return printed;
}

/**
 * Runs the append loop (fixtures/append-loop.ts) on the spool in `dir` until it has printed
 * `appends` seqs, then SIGKILLs it.
 *
 * @param dir - the spool directory
 * @param appends - acknowledged appends to wait for, ≥ 1
 * @returns the seqs it printed (each appended and fdatasync'd)
 * @throws when the loop exits on its own
 */
export function appendThenKill(dir: string, appends: number): Promise<number[]> {
  return runThenKill(SCRIPT, [dir], /^appended (\d+)$/, appends);
}

/** SIGKILLs the child of {@link runThenKill} still running, if any (for afterEach). */
export function killAppendLoop(): void {
  child?.kill('SIGKILL');
  child = undefined;
}
