import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { HttpSender } from '../../../agent/send/sender';
import { Spool } from '../../../agent/spool/spool';
import { SpoolingSender } from '../../../agent/spool/spooling-sender';
import type { Batch } from '../../../lambdas/contract';
import { FakeClock, makeBatch, makeTempDir, T0 } from './spool-fixtures';

/** Flush interval of the simulated agent, ms. */
const FLUSH_MS = 10_000;

let server: Server;
let endpoint: string;
let down = false;
/** Seqs of the batches the API accepted (answered 202), in arrival order; batch `seq` ends at T0 + (seq + 1) flushes. */
let accepted: number[] = [];
/** Requests the API accepted. */
let requests = 0;
/** Attempts refused with 503. */
let refused = 0;
let dir: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (down) {
        refused += 1;
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end('{"message":"Service Unavailable"}');
        return;
      }
      const batch = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as Batch;
      requests += 1;
      const ends = new Set(batch.windows.map((w) => Date.parse(w.end)));
      for (const end of ends) accepted.push((end - T0.getTime()) / FLUSH_MS - 1);
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ accepted: batch.windows.length }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
  down = false;
  accepted = [];
  requests = 0;
  refused = 0;
});

afterEach(async () => {
  await remove();
});

describe('SpoolingSender with HttpSender against an API that goes down', () => {
  it('delivers every batch exactly once and in seq order after a 10-minute outage, the backlog in one merged request', async () => {
    // Prepare
    const clock = new FakeClock();
    const spool = await Spool.open({ dir, clock: clock.now });
    const http = new HttpSender({ endpoint, auth: 'none', retries: 0, clock: clock.now });
    const sender = new SpoolingSender({ spool, send: (b) => http.send(b) });
    const downFrom = 12;
    const downUntil = downFrom + 60; // 60 windows of 10 s: 10 simulated minutes
    const total = downUntil + 12;
    let maxSpooled = 0;

    // Act
    for (let seq = 0; seq < total; seq++) {
      down = seq >= downFrom && seq < downUntil;
      clock.advance(FLUSH_MS);
      await sender.append(makeBatch(seq, clock.now(), 8));
      await sender.drain();
      maxSpooled = Math.max(maxSpooled, spool.stats().batches);
    }
    const stats = spool.stats();
    await spool.close();

    // Assess
    expect(accepted).toEqual(Array.from({ length: total }, (_, seq) => seq));
    expect(refused).toBeGreaterThanOrEqual(60);
    expect(maxSpooled).toBe(60);
    expect(stats).toEqual({ batches: 0, bytes: 0, dropped_total: 0, last_seq: total - 1 });
    // The first batch after the outage goes out behind the 60 spooled ones, all in one request.
    expect(requests).toBe(total - 60);
    expect(sender.counters).toEqual({ sent: total, spooled: total, rejected: 0, dropped: 0 });
    expect(sender.takeDroppedEvent(clock.now())).toBeUndefined();
  });
});
