import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SendFailedError } from '../../agent/errors';
import { HttpSender } from '../../agent/send/sender';
import { MARK_FILE } from '../../agent/spool/constants';
import { Spool } from '../../agent/spool/spool';
import { SpoolingSender } from '../../agent/spool/spooling-sender';
import type { Batch } from '../../lambdas/contract';
import { appendThenKill, killAppendLoop } from '../agent/spool/kill-fixture';
import { FakeClock, makeBatch, makeTempDir, T0 } from '../agent/spool/spool-fixtures';

/** GPUs per test batch: each batch carries this many flush windows. */
const GPUS = 8;

let dir: string;
let remove: () => Promise<void>;

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir('gpu-sentinel-chaos-'));
});

afterEach(async () => {
  killAppendLoop();
  await remove();
});

/** Seqs of every batch left in the spool, delivered in order (peek + ack). */
async function drainAll(spool: Spool): Promise<Batch[]> {
  const out: Batch[] = [];
  for (let batch = await spool.peek(); batch; batch = await spool.peek()) {
    out.push(batch);
    await spool.ack(batch.batch_id);
  }
  return out;
}

describe('chaos: agent faults', () => {
  it('loses no window in a 10-minute API outage: everything spooled is delivered once, in order', async () => {
    // Prepare: 60 flushes, the API down for the first 30
    const clock = new FakeClock();
    const spool = await Spool.open({ dir, clock: clock.now });
    const delivered: number[] = [];
    let down = true;
    const sender = new SpoolingSender({
      spool,
      send: async (b) => {
        if (down) throw new SendFailedError(b.batch_id, 3, { lastStatus: 503 });
        // A merged request carries several spooled batches: batch `seq` ends at T0 + seq × 10 s.
        for (const end of new Set(b.windows.map((w) => Date.parse(w.end))))
          delivered.push((end - T0.getTime()) / 10_000);
      },
    });

    // Act
    for (let seq = 0; seq < 60; seq += 1) {
      if (seq === 30) down = false;
      await sender.append(makeBatch(seq, clock.now(), GPUS));
      await sender.drain();
      clock.advance(10_000);
    }
    const dropped = sender.takeDroppedEvent(clock.now());
    await spool.close();

    // Assess
    console.log(
      `chaos agent outage: 60 batches, 30 during the outage; delivered ${delivered.length}; windows lost ${dropped?.count ?? 0}`,
    );
    expect(delivered).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(dropped).toBeUndefined();
  });

  describe('against an API that answers 403', () => {
    let server: Server;
    let endpoint: string;
    /** Per request: the status to answer (202 when the script is empty). */
    let script: number[];
    let requests = 0;

    beforeEach(async () => {
      script = [];
      requests = 0;
      server = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          requests += 1;
          const status = script.shift() ?? 202;
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify(
              status === 202
                ? { accepted: GPUS }
                : { message: 'The security token included in the request is expired' },
            ),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
    });

    afterEach(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it('delivers every batch through expired credentials, holds what a lasting 403 refuses and resends it in order once credentials recover, counting only what aged out', async () => {
      // Prepare: 10 batches each meet one 403 (credentials expired, a refresh fixes it); then 5 meet
      // nothing but 403 for 11 minutes; the spool keeps batches 10 minutes
      const clock = new FakeClock();
      const spool = await Spool.open({ dir, clock: clock.now, maxAgeS: 600 });
      let refreshes = 0;
      const http = new HttpSender({
        endpoint,
        region: 'us-east-1',
        credentials: async (options?: Record<string, unknown>) => {
          if (options?.forceRefresh) refreshes += 1;
          return { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
        },
        clock: clock.now,
        retries: 2,
        authRetries: 3,
        minTimeoutMs: 1,
        maxTimeoutMs: 2,
      });
      const delivered: number[] = [];
      const sender = new SpoolingSender({
        spool,
        send: async (b) => {
          const result = await http.send(b);
          delivered.push(b.seq);
          return result;
        },
      });
      const totals = { sent: 0, held: 0, resent: 0 };
      const drain = async (): Promise<void> => {
        const result = await sender.drain();
        totals.sent += result.sent;
        totals.held += result.held;
        totals.resent += result.resent;
      };

      // Act
      for (let seq = 0; seq < 15; seq += 1) {
        if (seq === 12) clock.advance(9 * 60_000);
        script = seq < 10 ? [403] : [403, 403, 403, 403];
        await sender.append(makeBatch(seq, clock.now(), GPUS));
        await drain();
        clock.advance(10_000);
      }
      clock.advance(60_000);
      script = [];
      await sender.append(makeBatch(15, clock.now(), GPUS));
      await drain();
      const dropped = sender.takeDroppedEvent(clock.now());
      const stillHeld = await spool.heldBatches();
      await spool.close();

      // Assess: 10 and 11 were sent 11 minutes before the recovery, past the 10-minute bound
      console.log(
        `chaos agent 403: ${requests} requests; delivered ${totals.sent} directly, credential refreshes ${refreshes}, held ${totals.held}, ` +
          `resent after recovery ${totals.resent} (seq ${delivered.slice(11).join(',')}); windows reported lost ${dropped?.count ?? 0}`,
      );
      expect(delivered).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 12, 13, 14]);
      expect(totals).toEqual({ sent: 11, held: 5, resent: 3 });
      expect(dropped?.count).toBe(2 * GPUS);
      expect(dropped?.detail).toMatch(/seq 10\.\.11\) dropped by the on-disk spool/);
      expect(stillHeld).toEqual([]);
      expect(refreshes).toBe(10 + 5 * 3);
    });
  });

  it('keeps every acknowledged append through three kill -9s of the appending process', async () => {
    // Act: three runs of the append loop on one spool, each killed mid-stream
    const printed: number[] = [];
    for (let kill = 0; kill < 3; kill += 1) printed.push(...(await appendThenKill(dir, 10)));
    const spool = await Spool.open({ dir });
    const found = (await drainAll(spool)).map((b) => b.seq);
    const dropped = spool.takeDroppedReport();
    await spool.close();

    // Assess
    const lost = printed.filter((seq) => !found.includes(seq));
    console.log(
      `chaos agent kill -9: 3 kills; acknowledged ${printed.length}, found ${found.length}; windows lost ${lost.length * GPUS}; drops reported ${dropped?.batches ?? 0}`,
    );
    expect(lost).toEqual([]);
    expect(found).toEqual([...found].sort((a, b) => a - b));
    expect(new Set(found).size).toBe(found.length);
  });

  it('survives random spool damage: opens, loses only what is damaged, reports at least that, and reuses no seq', async () => {
    // Prepare: one spool of 24 batches over several segments, copied (not re-appended) into each run
    const template = join(dir, 'template');
    const spool = await Spool.open({ dir: template, segmentBytes: 16 * 1024 });
    for (let seq = 0; seq < 24; seq += 1) await spool.append(makeBatch(seq, new Date(), GPUS));
    await spool.close();
    const segments = (await readdir(template)).filter((n) => n.endsWith('.seg')).sort();
    const files = new Map(
      await Promise.all(segments.map(async (n) => [n, await readFile(join(template, n))] as const)),
    );
    // The append mark goes with the segments: it tells a damaged acknowledged record (any byte,
    // the last record's included) from a write cut short.
    const mark = await readFile(join(template, MARK_FILE));
    const totals = { runs: 0, flipped: 0, batchesLost: 0, windowsLost: 0, windowsReported: 0, setAside: 0 };

    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            segment: fc.nat(),
            at: fc.nat(),
            xor: fc.integer({ min: 1, max: 255 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        fc.boolean(),
        async (flips, stray) => {
          const run = join(dir, `run-${totals.runs++}`);
          const damaged = new Map([...files].map(([n, data]) => [n, Buffer.from(data)]));
          for (const flip of flips) {
            const name = segments[flip.segment % segments.length] ?? '';
            const data = damaged.get(name) ?? Buffer.alloc(0);
            const offset = flip.at % data.length;
            data[offset] = (data[offset] ?? 0) ^ flip.xor;
            totals.flipped += 1;
          }
          await mkdir(run);
          for (const [name, data] of damaged) await writeFile(join(run, name), data);
          await writeFile(join(run, MARK_FILE), mark);
          if (stray) await writeFile(join(run, '000000009999.seg'), 'a stray file, not a segment');

          // Act
          const reopened = await Spool.open({ dir: run, segmentBytes: 16 * 1024 });
          const report = reopened.takeDroppedReport();
          const found = await drainAll(reopened);
          const nextSeq = (reopened.stats().last_seq ?? -1) + 1;
          await reopened.close();

          // Assess
          const foundSeqs = found.map((b) => b.seq);
          const lost = Array.from({ length: 24 }, (_, s) => s).filter((s) => !foundSeqs.includes(s));
          totals.batchesLost += lost.length;
          totals.windowsLost += lost.length * GPUS;
          totals.windowsReported += report?.windows ?? 0;
          if (stray) totals.setAside += 1;
          expect(
            found.every(
              (b) => JSON.stringify(b) === JSON.stringify(makeBatch(b.seq, new Date(b.sent_at), GPUS)),
            ),
          ).toBe(true);
          expect(foundSeqs).toEqual([...foundSeqs].sort((a, b) => a - b));
          expect(report?.batches ?? 0).toBeGreaterThanOrEqual(lost.length);
          expect(report?.windows ?? 0).toBeGreaterThanOrEqual(lost.length * GPUS);
          expect(nextSeq).toBeGreaterThanOrEqual(24);
        },
      ),
      { numRuns: 25, seed: 20_261_123 },
    );

    // Assess
    console.log(
      `chaos agent spool damage: ${totals.runs} spools, ${totals.flipped} bytes flipped, ${totals.setAside} stray files set aside; ` +
        `batches lost ${totals.batchesLost} (${totals.windowsLost} windows), windows reported lost ${totals.windowsReported}`,
    );
  }, 300_000);
});
