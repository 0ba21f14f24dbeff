import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool } from '../../agent/spool/spool';
import type { Batch } from '../../lambdas/contract';
import { killAppendLoop, runThenKill } from './spool/kill-fixture';
import { makeTempDir } from './spool/spool-fixtures';

const HERE = dirname(fileURLToPath(import.meta.url));
const CHILD = join(HERE, 'fixtures', 'delivery-kill-child.ts');

let dir: string;
let remove: () => Promise<void>;
let server: Server;
let sink: string;
/** Flush-window ends (ms) the sink received. */
let received: Set<number>;

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
  received = new Set();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const batch = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as Batch;
      for (const w of batch.windows) if (w.kind === 'flush') received.add(Date.parse(w.end));
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ accepted: batch.windows.length }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  sink = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
});

afterEach(async () => {
  killAppendLoop();
  await new Promise((resolve) => server.close(resolve));
  await remove();
});

/**
 * Runs the agent loop in a child process (spool delivery, 200 ms windows, sent every 1.2 s) until it
 * has closed `windows` windows, then SIGKILLs it.
 * @returns the ends of the windows it closed, ms
 */
function runThenKillLoop(windows: number): Promise<number[]> {
  return runThenKill(CHILD, ['spool', dir, sink, '200', '1200'], /^closed (\d+)$/, windows);
}

describe('delivery after kill -9 of the agent', () => {
  it.each([4, 9])(
    'loses at most one closed window when killed after %i windows, sent or not',
    async (windows) => {
      // Act
      const closed = await runThenKillLoop(windows);
      const spool = await Spool.open({ dir });
      const spooled = new Set<number>();
      for (let batch = await spool.peek(); batch; batch = await spool.peek()) {
        for (const w of batch.windows) if (w.kind === 'flush') spooled.add(Date.parse(w.end));
        await spool.ack(batch.batch_id);
      }
      await spool.close();

      // Assess
      const lost = closed.filter((end) => !received.has(end) && !spooled.has(end));
      expect(closed.length).toBeGreaterThanOrEqual(windows);
      expect(lost.length).toBeLessThanOrEqual(1);
    },
    30_000,
  );
});
