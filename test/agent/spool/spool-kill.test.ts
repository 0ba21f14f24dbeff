import { type ChildProcess, spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool } from '../../../agent/spool/spool';
import { makeBatch, makeTempDir } from './spool-fixtures';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..', '..');
const SCRIPT = join(HERE, 'fixtures', 'append-loop.ts');

let dir: string;
let remove: () => Promise<void>;
let child: ChildProcess | undefined;

/** Runs the append loop until it has printed `appends` seqs, then SIGKILLs it; returns the seqs it printed. */
async function appendThenKill(appends: number): Promise<number[]> {
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

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
});

afterEach(async () => {
  child?.kill('SIGKILL');
  await remove();
});

describe('Spool after kill -9', () => {
  it.each([3, 40])(
    'keeps every acknowledged append intact and in order when killed after %i appends',
    async (appends) => {
      // Prepare
      const printed = await appendThenKill(appends);
      const segments = (await readdir(dir)).filter((n) => n.endsWith('.seg'));

      // Act
      const spool = await Spool.open({ dir });
      const next = (spool.stats().last_seq ?? -1) + 1;
      await spool.append(makeBatch(next, new Date(), 8, true));
      const seqs: number[] = [];
      for (let batch = await spool.peek(); batch; batch = await spool.peek()) {
        seqs.push(batch.seq);
        await spool.ack(batch.batch_id);
      }
      const stats = spool.stats();
      await spool.close();

      // Assess
      expect(segments.length).toBeGreaterThanOrEqual(1);
      expect(printed.length).toBeGreaterThanOrEqual(appends);
      // The child may have completed one or a few appends it had no time to print.
      expect(next).toBeGreaterThanOrEqual(printed.length);
      expect(seqs).toEqual(Array.from({ length: next + 1 }, (_, seq) => seq));
      expect(stats).toMatchObject({ batches: 0, bytes: 0, dropped_total: 0 });
    },
  );
});
