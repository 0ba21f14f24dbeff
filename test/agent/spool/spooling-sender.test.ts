import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SendFailedError, SendRejectedError } from '../../../agent/errors';
import { Spool, type SpoolOptions } from '../../../agent/spool/spool';
import { SpoolingSender, type SubmitOutcome } from '../../../agent/spool/spooling-sender';
import { type Batch, EventSchema } from '../../../lambdas/contract';
import { FakeClock, makeBatch, makeTempDir } from './spool-fixtures';

let dir: string;
let remove: () => Promise<void>;
let clock: FakeClock;
let spool: Spool;

/** A send that fails or refuses the seqs it is told to, and records what it delivered. */
class FakeApi {
  readonly delivered: number[] = [];
  readonly attempts: number[] = [];
  down = false;
  readonly refuse = new Set<number>();
  readonly send = async (batch: Batch): Promise<unknown> => {
    this.attempts.push(batch.seq);
    if (this.down) throw new SendFailedError(batch.batch_id, 1, { lastStatus: 503 });
    if (this.refuse.has(batch.seq))
      throw new SendRejectedError(batch.batch_id, 400, { error: 'expected a number', path: 'windows[0]' });
    this.delivered.push(batch.seq);
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
  it('sends directly while the spool is empty', async () => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });

    // Act
    const outcomes = [await sender.submit(makeBatch(0)), await sender.submit(makeBatch(1))];

    // Assess
    expect(outcomes).toEqual(['sent', 'sent']);
    expect(api.delivered).toEqual([0, 1]);
    expect(spool.stats().batches).toBe(0);
    expect(sender.counters).toEqual({ sent: 2, spooled: 0, rejected: 0, dropped: 0 });
  });

  it('spools a batch that fails, and every later one without trying to send it', async () => {
    // Prepare
    const api = new FakeApi();
    const warnings: string[] = [];
    const sender = new SpoolingSender({ spool, send: api.send, onWarning: (m) => warnings.push(m) });
    api.down = true;

    // Act
    const first = await sender.submit(makeBatch(0));
    api.down = false;
    const second = await sender.submit(makeBatch(1));

    // Assess
    expect([first, second]).toEqual(['spooled', 'spooled']);
    expect(api.attempts).toEqual([0]);
    expect(spool.stats().batches).toBe(2);
    expect(warnings).toHaveLength(1);
  });

  it('drains oldest first, stops at the first failure and resumes where it stopped', async () => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });
    api.down = true;
    for (let seq = 0; seq < 4; seq++) await sender.submit(makeBatch(seq));

    // Act
    const whileDown = await sender.drain();
    api.down = false;
    const afterRecovery = await sender.drain();

    // Assess
    expect(whileDown).toMatchObject({ sent: 0, rejected: 0, remaining: 4 });
    expect(whileDown.error).toBeInstanceOf(SendFailedError);
    expect(afterRecovery).toEqual({ sent: 4, rejected: 0, remaining: 0 });
    expect(api.delivered).toEqual([0, 1, 2, 3]);
    expect(sender.counters).toEqual({ sent: 4, spooled: 4, rejected: 0, dropped: 0 });
  });

  it.each<{ name: string; spoolFirst: boolean; outcome: SubmitOutcome }>([
    { name: 'a direct send', spoolFirst: false, outcome: 'rejected' },
    { name: 'a drain', spoolFirst: true, outcome: 'spooled' },
  ])('quarantines a batch refused on $name and never retries it', async ({ spoolFirst, outcome }) => {
    // Prepare
    const api = new FakeApi();
    const sender = new SpoolingSender({ spool, send: api.send });
    api.down = spoolFirst;
    api.refuse.add(5);

    // Act
    const result = await sender.submit(makeBatch(5));
    api.down = false;
    await sender.submit(makeBatch(6));
    await sender.drain();
    await sender.drain();

    // Assess
    expect(result).toBe(outcome);
    expect(api.attempts.filter((s) => s === 5)).toHaveLength(spoolFirst ? 2 : 1);
    expect(api.delivered).toEqual([6]);
    const [file] = await readdir(join(dir, 'rejected'));
    const saved = JSON.parse(await readFile(join(dir, 'rejected', file ?? ''), 'utf8'));
    expect(saved.reason).toMatchObject({ status: 400, error: 'expected a number', path: 'windows[0]' });
    expect(saved.batch.seq).toBe(5);
    expect(sender.counters.rejected).toBe(1);
    expect(spool.stats().batches).toBe(0);
  });

  it('runs one drain at a time and spools what is submitted meanwhile after it', async () => {
    // Prepare
    const api = new FakeApi();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const send = async (batch: Batch): Promise<unknown> => {
      if (batch.seq === 0) await gate;
      return api.send(batch);
    };
    const sender = new SpoolingSender({ spool, send });
    await spool.append(makeBatch(0));
    await spool.append(makeBatch(1));

    // Act
    const first = sender.drain();
    const second = sender.drain();
    const during = sender.submit(makeBatch(2));
    release();
    const results = await Promise.all([first, second, during]);

    // Assess
    expect(results[0]).toBe(results[1]);
    expect(results[2]).toBe('spooled');
    expect(api.delivered).toEqual([0, 1, 2]);
    expect(api.attempts).toEqual([0, 1, 2]);
  });

  it('builds one data_dropped event from the spool drops, valid against the contract', async () => {
    // Prepare
    await spool.close();
    const recordBytes = JSON.stringify(makeBatch(0, clock.now(), 2)).length + 8;
    await openSpool({ maxBytes: recordBytes * 2 });
    const api = new FakeApi();
    api.down = true;
    const sender = new SpoolingSender({ spool, send: api.send });
    for (let seq = 0; seq < 5; seq++) await sender.submit(makeBatch(seq, clock.now(), 2));

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
    const api = new FakeApi();
    api.down = true;
    const sender = new SpoolingSender({ spool, send: api.send });
    await spool.close();

    // Act
    const outcome = await sender.submit(makeBatch(3));
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

    // Act
    const outcomes = [
      await sender.submit(makeBatch(0, undefined, 8)),
      await sender.submit(makeBatch(1, undefined, 8)),
    ];
    const event = sender.takeDroppedEvent(clock.now());

    // Assess
    expect(outcomes).toEqual(['sent', 'rejected']);
    expect(event).toMatchObject({ kind: 'data_dropped', count: 8 });
    expect(event?.detail).toMatch(/1 batches \(8 flush windows, seq 1\.\.1\) refused by the API/);
    expect(EventSchema.safeParse(event).success).toBe(true);
  });

  it('gives no data_dropped event when nothing was dropped', async () => {
    // Prepare
    const sender = new SpoolingSender({ spool, send: new FakeApi().send });

    // Act / Assess
    expect(sender.takeDroppedEvent(clock.now())).toBeUndefined();
  });
});
