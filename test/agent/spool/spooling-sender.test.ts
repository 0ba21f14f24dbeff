import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SendFailedError, SendRejectedError } from '../../../agent/errors';
import { Spool } from '../../../agent/spool/spool';
import type { SpoolOptions } from '../../../agent/spool/spool-options';
import { SpoolingSender } from '../../../agent/spool/spooling-sender';
import { type Batch, EventSchema, parseBatch } from '../../../lambdas/contract';
import { FakeClock, makeBatch, makeTempDir, T0 } from './spool-fixtures';

let dir: string;
let remove: () => Promise<void>;
let clock: FakeClock;
let spool: Spool;

/** Spooled batch `seq`: its flush windows end at T0 + seq × 10 s, so a merged request still names its members. */
function batchAt(seq: number, gpus = 1, horizons = false): Batch {
  return makeBatch(seq, new Date(T0.getTime() + seq * 10_000), gpus, horizons);
}

/** The seqs of the spooled batches a (merged) request carries, from its flush windows' ends. */
function membersOf(request: Batch): number[] {
  const ends = request.windows.filter((w) => w.kind === 'flush').map((w) => Date.parse(w.end));
  return [...new Set(ends)].map((ms) => (ms - T0.getTime()) / 10_000);
}

/** An API that is down or refuses requests carrying the seqs it is told to; records what it got. */
class FakeApi {
  readonly delivered: number[] = [];
  /** Per request, the seqs it carried. */
  readonly requests: number[][] = [];
  down = false;
  readonly refuse = new Set<number>();
  /** Every request answered 403 (credentials refused), after the sender's own refreshes. */
  forbidAll = false;
  /** Requests carrying these seqs answered 403 (an identity the API does not accept). */
  readonly forbid = new Set<number>();
  readonly send = async (batch: Batch): Promise<unknown> => {
    parseBatch(JSON.parse(JSON.stringify(batch)), new Date(T0.getTime() + 3600_000));
    const members = membersOf(batch);
    this.requests.push(members);
    if (this.down) throw new SendFailedError(batch.batch_id, 1, { lastStatus: 503 });
    if (this.forbidAll || members.some((seq) => this.forbid.has(seq)))
      throw new SendRejectedError(batch.batch_id, 403, {
        error: 'The security token included in the request is expired',
      });
    if (members.some((seq) => this.refuse.has(seq)))
      throw new SendRejectedError(batch.batch_id, 400, { error: 'expected a number', path: 'windows[0]' });
    this.delivered.push(...members);
    return { status: 202, accepted: batch.windows.length };
  };
}

async function openSpool(opts: Omit<SpoolOptions, 'dir' | 'clock'> = {}): Promise<Spool> {
  spool = await Spool.open({ dir, clock: clock.now, ...opts });
  return spool;
}

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
  clock = new FakeClock();
  await openSpool();
});

afterEach(async () => {
  await spool.close();
  await remove();
});

describe('SpoolingSender', () => {
  it('keeps an appended batch on disk and sends nothing until a drain', async () => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });

    // Act
    const outcomes = [await sender.append(batchAt(0)), await sender.append(batchAt(1))];

    // Assess
    expect(outcomes).toEqual(['spooled', 'spooled']);
    expect(api.requests).toEqual([]);
    expect(spool.stats().batches).toBe(2);
    expect(sender.counters).toEqual({ sent: 0, spooled: 2, rejected: 0, dropped: 0 });
  });

  it('drains the spool in one merged request, oldest first, and acks every batch it carried', async () => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });
    for (let seq = 0; seq < 6; seq++) await sender.append(batchAt(seq, 8, true));

    // Act
    const result = await sender.drain();

    // Assess
    expect(result).toEqual({ sent: 6, requests: 1, rejected: 0, held: 0, resent: 0, remaining: 0 });
    expect(api.requests).toEqual([[0, 1, 2, 3, 4, 5]]);
    expect(spool.stats().batches).toBe(0);
  });

  it.each([
    { gpus: 15, batches: 40, requests: [33, 7] }, // 15 × 33 flush + 15 horizon = 510 ≤ 512 windows
    { gpus: 8, batches: 70, requests: [63, 7] }, // 8 × 63 flush + 8 horizon = 512 windows
    { gpus: 1, batches: 70, requests: [64, 6] }, // at most 64 batches per request
  ])(
    'splits $batches spooled batches of $gpus GPUs at the contract limits: $requests',
    async ({ gpus, batches, requests }) => {
      // Prepare
      const api = new FakeApi();
      const sender = new SpoolingSender({ spool, send: api.send });
      for (let seq = 0; seq < batches; seq++) await spool.append(batchAt(seq, gpus, true));

      // Act
      const result = await sender.drain();

      // Assess
      expect(api.requests.map((r) => r.length)).toEqual(requests);
      expect(api.delivered).toEqual([...Array(batches).keys()]);
      expect(result).toMatchObject({ sent: batches, requests: requests.length, remaining: 0 });
    },
  );

  it('drains oldest first, stops at the first failure and resumes where it stopped', async () => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });
    for (let seq = 0; seq < 4; seq++) await sender.append(batchAt(seq));
    api.down = true;

    // Act
    const whileDown = await sender.drain();
    api.down = false;
    const afterRecovery = await sender.drain();

    // Assess
    expect(whileDown).toMatchObject({ sent: 0, rejected: 0, remaining: 4 });
    expect(whileDown.error).toBeInstanceOf(SendFailedError);
    expect(afterRecovery).toEqual({ sent: 4, requests: 1, rejected: 0, held: 0, resent: 0, remaining: 0 });
    expect(api.delivered).toEqual([0, 1, 2, 3]);
    expect(sender.counters).toEqual({ sent: 4, spooled: 4, rejected: 0, dropped: 0 });
  });

  it('retries a refused merged request batch by batch, quarantines only the refused batch and never retries it', async () => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });
    for (let seq = 4; seq < 8; seq++) await sender.append(batchAt(seq));
    api.refuse.add(5);

    // Act
    const first = await sender.drain();
    await sender.append(batchAt(8));
    await sender.drain();

    // Assess
    expect(first).toEqual({ sent: 3, requests: 3, rejected: 1, held: 0, resent: 0, remaining: 0 });
    expect(api.requests).toEqual([[4, 5, 6, 7], [4], [5], [6], [7], [8]]);
    expect(api.delivered).toEqual([4, 6, 7, 8]);
    const [file] = await readdir(join(dir, 'rejected'));
    const saved = JSON.parse(await readFile(join(dir, 'rejected', file ?? ''), 'utf8'));
    expect(saved.reason).toMatchObject({ status: 400, error: 'expected a number', path: 'windows[0]' });
    expect(saved.batch.seq).toBe(5);
    expect(sender.counters.rejected).toBe(1);
    expect(spool.stats().batches).toBe(0);
  });

  it('runs one drain at a time; a batch appended meanwhile goes out after it', async () => {
    // Prepare
    const api = new FakeApi();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let first = true;
    const send = async (batch: Batch): Promise<unknown> => {
      if (first) {
        first = false;
        await gate;
      }
      return api.send(batch);
    };
    const sender = new SpoolingSender({ spool, send });
    await sender.append(batchAt(0));
    await sender.append(batchAt(1));

    // Act
    const one = sender.drain();
    const two = sender.drain();
    const during = sender.append(batchAt(2));
    release();
    const results = await Promise.all([one, two, during]);

    // Assess
    expect(results[0]).toBe(results[1]);
    expect(results[2]).toBe('spooled');
    expect(api.requests).toEqual([[0, 1], [2]]);
  });

  it('builds one data_dropped event from the spool drops, valid against the contract', async () => {
    // Prepare
    await spool.close();
    const recordBytes = JSON.stringify(batchAt(0, 2)).length + 8;
    await openSpool({ maxBytes: recordBytes * 2 });
    const sender = new SpoolingSender({ spool, send: new FakeApi().send });
    for (let seq = 0; seq < 5; seq++) await sender.append(batchAt(seq, 2));

    // Act
    const event = sender.takeDroppedEvent(clock.now());
    const again = sender.takeDroppedEvent(clock.now());

    // Assess
    expect(EventSchema.safeParse(event).success).toBe(true);
    expect(event).toMatchObject({
      kind: 'data_dropped',
      source: 'agent',
      count: 6,
      at: clock.now().toISOString(),
    });
    expect(event?.detail).toContain('seq 0..2');
    expect(again).toBeUndefined();
    expect(sender.counters.dropped).toBe(3);
  });

  it('counts a batch the spool cannot write as dropped and reports it', async () => {
    // Prepare
    const sender = new SpoolingSender({ spool, send: new FakeApi().send });
    await spool.close();

    // Act
    const outcome = await sender.append(batchAt(3));
    const event = sender.takeDroppedEvent(clock.now());

    // Assess
    expect(outcome).toBe('dropped');
    expect(EventSchema.safeParse(event).success).toBe(true);
    expect(event).toMatchObject({ count: 1 });
    expect(sender.counters.dropped).toBe(1);
  });

  it('counts a batch the API refused (set aside in rejected/) in the data_dropped event', async () => {
    // Prepare
    const api = new FakeApi();
    api.refuse.add(1);
    const sender = new SpoolingSender({ spool, send: api.send });
    await sender.append(batchAt(0, 8));
    await sender.append(batchAt(1, 8));

    // Act
    const result = await sender.drain();
    const event = sender.takeDroppedEvent(clock.now());

    // Assess
    expect(result).toMatchObject({ sent: 1, rejected: 1 });
    expect(event).toMatchObject({ kind: 'data_dropped', count: 8 });
    expect(event?.detail).toMatch(/1 batches \(8 flush windows, seq 1\.\.1\) refused by the API/);
    expect(EventSchema.safeParse(event).success).toBe(true);
  });

  describe('batches refused with 401/403', () => {
    it('holds one per drain while credentials are refused, then resends them in order, once each, after a send succeeds', async () => {
      // Prepare: 3 spooled batches, the API refusing every request with 403
      const api = new FakeApi();
      api.forbidAll = true;
      const sender = new SpoolingSender({ spool, send: api.send });
      for (let seq = 0; seq < 3; seq++) await sender.append(batchAt(seq, 8));

      // Act
      const first = await sender.drain();
      const second = await sender.drain();
      api.forbidAll = false;
      await sender.append(batchAt(3, 8));
      const recovered = await sender.drain();
      const again = await sender.drain();

      // Assess
      expect(first).toMatchObject({ sent: 0, held: 1, remaining: 2 });
      expect(second).toMatchObject({ sent: 0, held: 1, remaining: 1 });
      expect(recovered).toEqual({ sent: 2, requests: 3, rejected: 0, held: 0, resent: 2, remaining: 0 });
      expect(again).toMatchObject({ sent: 0, resent: 0 });
      expect(api.delivered).toEqual([2, 3, 0, 1]);
      expect(await readdir(join(dir, 'held'))).toEqual([]);
      expect(sender.takeDroppedEvent(clock.now())).toBeUndefined();
    });

    it('drops and counts held batches past the age bound, and quarantines one refused again while others are accepted', async () => {
      // Prepare: seq 0 and 1 held; then seq 0 ages past maxAgeS and seq 1 is refused for itself
      await spool.close();
      await openSpool({ maxAgeS: 60 });
      const api = new FakeApi();
      api.forbidAll = true;
      const sender = new SpoolingSender({ spool, send: api.send });
      for (let seq = 0; seq < 2; seq++) await sender.append(batchAt(seq, 8));
      await sender.drain();
      await sender.drain();
      clock.advance(65_000);
      api.forbidAll = false;
      api.forbid.add(1);

      // Act
      await sender.append(batchAt(2, 8));
      const result = await sender.drain();
      const event = sender.takeDroppedEvent(clock.now());

      // Assess
      expect(result).toMatchObject({ sent: 1, rejected: 1, resent: 0, remaining: 0 });
      expect(api.delivered).toEqual([2]);
      expect(event).toMatchObject({ kind: 'data_dropped', count: 16 });
      expect(event?.detail).toMatch(/seq 0\.\.0\) dropped by the on-disk spool/);
      expect(event?.detail).toMatch(/seq 1\.\.1\) refused by the API/);
      expect(await readdir(join(dir, 'held'))).toEqual([]);
      expect((await readdir(join(dir, 'rejected'))).map((n) => n.split('-')[0])).toEqual(['1']);
    });
  });

  it('gives no data_dropped event when nothing was dropped', async () => {
    // Prepare
    const sender = new SpoolingSender({ spool, send: new FakeApi().send });

    // Act / Assess
    expect(sender.takeDroppedEvent(clock.now())).toBeUndefined();
  });
});
