import { readdir, readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DAMAGED_DIR, MAX_SPOOL_MAX_AGE_S } from '../../../agent/spool/constants';
import { SpoolClosedError, SpoolOrderError } from '../../../agent/spool/errors';
import {
  encodeRecord,
  MIN_RECORD_BYTES,
  SEGMENT_MAGIC,
  scanSegment,
} from '../../../agent/spool/segment-format';
import { Spool } from '../../../agent/spool/spool';
import type { SpoolOptions } from '../../../agent/spool/spool-options';
import { FakeClock, makeBatch, makeTempDir, T0 } from './spool-fixtures';

let dir: string;
let remove: () => Promise<void>;
let clock: FakeClock;
let warnings: string[];
const open: Spool[] = [];

async function openSpool(opts: Omit<SpoolOptions, 'dir' | 'clock'> = {}): Promise<Spool> {
  const spool = await Spool.open({ dir, clock: clock.now, onWarning: (m) => warnings.push(m), ...opts });
  open.push(spool);
  return spool;
}

async function segmentFiles(): Promise<string[]> {
  return (await readdir(dir)).filter((n) => n.endsWith('.seg')).sort();
}

/** Peeks and acks every batch; returns their seqs. */
async function drainSeqs(spool: Spool): Promise<number[]> {
  const seqs: number[] = [];
  for (let batch = await spool.peek(); batch; batch = await spool.peek()) {
    seqs.push(batch.seq);
    await spool.ack(batch.batch_id);
  }
  return seqs;
}

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
  clock = new FakeClock();
  warnings = [];
});

afterEach(async () => {
  for (const spool of open.splice(0)) await spool.close();
  await remove();
});

describe('Spool', () => {
  it('returns batches oldest first and removes each on ack', async () => {
    // Prepare
    const spool = await openSpool();
    for (const seq of [10, 11, 12]) await spool.append(makeBatch(seq));

    // Act
    const first = await spool.peek();
    const again = await spool.peek();
    const removed = await spool.ack(first?.batch_id ?? '');
    const second = await spool.peek();

    // Assess
    expect([first?.seq, again?.seq, removed, second?.seq]).toEqual([10, 10, true, 11]);
    expect(first).toEqual(makeBatch(10));
    expect(spool.stats()).toMatchObject({
      batches: 2,
      dropped_total: 0,
      last_seq: 12,
      oldest_at: T0.toISOString(),
    });
  });

  describe('several at once (one merged request)', () => {
    it.each([
      { maxCount: 2, maxBytes: 1 << 20, seqs: [10, 11] },
      { maxCount: 10, maxBytes: 1 << 20, seqs: [10, 11, 12, 13] },
      { maxCount: 10, maxBytes: 0, seqs: [10] }, // the first batch comes whatever its size
    ])('peekMany($maxCount, $maxBytes) returns $seqs, oldest first', async ({ maxCount, maxBytes, seqs }) => {
      // Prepare
      const spool = await openSpool();
      for (const seq of [10, 11, 12, 13]) await spool.append(makeBatch(seq));

      // Act
      const batches = await spool.peekMany(maxCount, maxBytes);

      // Assess
      expect(batches.map((b) => b.seq)).toEqual(seqs);
      expect(spool.stats().batches).toBe(4);
    });

    it('acks the leading batches with one cursor write, durably across a reopen', async () => {
      // Prepare
      const spool = await openSpool();
      for (const seq of [10, 11, 12]) await spool.append(makeBatch(seq));
      const ids = (await spool.peekMany(2, 1 << 20)).map((b) => b.batch_id);

      // Act
      const removed = await spool.ackMany(ids);
      await spool.close();
      const reopened = await openSpool();

      // Assess
      expect(removed).toBe(2);
      expect(await drainSeqs(reopened)).toEqual([12]);
    });

    it('acks none when the first id is gone, and throws SpoolOrderError when it is queued but not the oldest', async () => {
      // Prepare
      const spool = await openSpool();
      for (const seq of [10, 11]) await spool.append(makeBatch(seq));
      const [first, second] = await spool.peekMany(2, 1 << 20);

      // Act / Assess
      expect(await spool.ackMany(['00000000-0000-4000-8000-999999999999'])).toBe(0);
      await expect(spool.ackMany([second?.batch_id ?? ''])).rejects.toBeInstanceOf(SpoolOrderError);
      expect(await spool.ackMany([first?.batch_id ?? '', 'not-queued'])).toBe(1);
    });
  });

  it('appends on in the same segment after the queue empties, and a reopen finds only what came after', async () => {
    // Prepare
    const spool = await openSpool();
    for (const seq of [1, 2]) await spool.append(makeBatch(seq));

    // Act: empty the queue, append again, reopen
    await spool.ackMany((await spool.peekMany(2, 1 << 20)).map((b) => b.batch_id));
    const afterEmpty = await segmentFiles();
    await spool.append(makeBatch(3));
    await spool.close();
    const reopened = await openSpool();

    // Assess
    expect(afterEmpty).toEqual(['000000000000.seg']);
    expect(await segmentFiles()).toEqual(['000000000000.seg']);
    expect(await drainSeqs(reopened)).toEqual([3]);
    expect(reopened.stats().last_seq).toBe(3);
  });

  it('keeps stats.bytes equal to the queued records', async () => {
    // Prepare
    const spool = await openSpool();
    const sizes = [1, 2, 3].map((seq) => JSON.stringify(makeBatch(seq)).length + 8);

    // Act
    for (const seq of [1, 2, 3]) await spool.append(makeBatch(seq));
    await spool.ack((await spool.peek())?.batch_id ?? '');

    // Assess
    expect(spool.stats().bytes).toBe(sizes[1]! + sizes[2]!);
  });

  it('throws SpoolOrderError when acking a batch that is not the oldest, and returns false for an unknown one', async () => {
    // Prepare
    const spool = await openSpool();
    await spool.append(makeBatch(1));
    await spool.append(makeBatch(2));

    // Act
    const unknown = await spool.ack(makeBatch(99).batch_id);

    // Assess
    expect(unknown).toBe(false);
    await expect(spool.ack(makeBatch(2).batch_id)).rejects.toBeInstanceOf(SpoolOrderError);
    expect(spool.stats().batches).toBe(2);
  });

  it('resumes exactly after a clean close', async () => {
    // Prepare
    const first = await openSpool();
    for (let seq = 0; seq < 5; seq++) await first.append(makeBatch(seq));
    for (let i = 0; i < 2; i++) await first.ack((await first.peek())?.batch_id ?? '');
    await first.close();

    // Act
    const second = await openSpool();
    await second.append(makeBatch(5));
    const seqs = await drainSeqs(second);

    // Assess
    expect(seqs).toEqual([2, 3, 4, 5]);
  });

  it('forgets acked batches across a reopen and deletes fully acked segments', async () => {
    // Prepare
    const spool = await openSpool({ segmentBytes: 1024 });
    for (let seq = 0; seq < 8; seq++) await spool.append(makeBatch(seq));
    const segmentsBefore = (await segmentFiles()).length;
    for (let i = 0; i < 5; i++) await spool.ack((await spool.peek())?.batch_id ?? '');
    const segmentsAfterAcks = (await segmentFiles()).length;
    await spool.close();

    // Act
    const reopened = await openSpool({ segmentBytes: 1024 });
    const seqs = await drainSeqs(reopened);

    // Assess
    expect(segmentsBefore).toBeGreaterThan(2);
    expect(segmentsAfterAcks).toBeLessThan(segmentsBefore);
    expect(seqs).toEqual([5, 6, 7]);
    expect(await segmentFiles()).toEqual([]);
    expect(reopened.stats()).toMatchObject({ batches: 0, bytes: 0, last_seq: 7 });
  });

  it('keeps last_seq after every batch was acked and the spool reopened', async () => {
    // Prepare
    const spool = await openSpool();
    await spool.append(makeBatch(41));
    await spool.ack(makeBatch(41).batch_id);
    await spool.close();

    // Act
    const reopened = await openSpool();

    // Assess
    expect(reopened.stats()).toEqual({ batches: 0, bytes: 0, dropped_total: 0, last_seq: 41 });
  });

  const CUTS = [
    { name: 'the last byte missing', keep: (record: number) => record - 1 },
    { name: 'half the payload missing', keep: (record: number) => record - Math.floor((record - 8) / 2) },
    { name: 'only 3 header bytes left', keep: () => 3 },
    { name: 'only the header left', keep: () => 8 },
  ];

  it.each(CUTS)(
    'truncates a torn write after the append mark ($name) on open, counts nothing and goes on appending',
    async ({ keep }) => {
      // Prepare: 3 acknowledged appends, then the agent dies while writing seq 3's record
      const spool = await openSpool();
      for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
      await spool.close();
      const file = join(dir, (await segmentFiles())[0] ?? '');
      const size = (await stat(file)).size;
      const torn = encodeRecord(Buffer.from(JSON.stringify(makeBatch(3))));
      await writeFile(file, torn.subarray(0, keep(torn.length)), { flag: 'a' });

      // Act
      const reopened = await openSpool();
      const sizeAfterOpen = (await stat(file)).size;
      await reopened.append(makeBatch(3));
      const seqs = await drainSeqs(reopened);

      // Assess
      expect(sizeAfterOpen).toBe(size);
      expect(seqs).toEqual([0, 1, 2, 3]);
      expect(reopened.stats().dropped_total).toBe(0);
      expect(warnings.some((w) => w.includes('torn'))).toBe(true);
    },
  );

  it.each(CUTS)(
    'counts an acknowledged last record cut short ($name) as dropped and never reuses its seq',
    async ({ keep }) => {
      // Prepare: 3 acknowledged appends; the last record is cut short on disk afterwards
      const spool = await openSpool();
      for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
      await spool.close();
      const file = join(dir, (await segmentFiles())[0] ?? '');
      const size = (await stat(file)).size;
      const last = JSON.stringify(makeBatch(2)).length + 8;
      await truncate(file, size - last + keep(last));

      // Act
      const reopened = await openSpool();
      const report = reopened.takeDroppedReport();
      const lastSeq = reopened.stats().last_seq;
      const seqs = await drainSeqs(reopened);

      // Assess
      expect(seqs).toEqual([0, 1]);
      expect(report).toEqual({ batches: 1, windows: 1, firstSeq: 2, lastSeq: 2 });
      expect(lastSeq).toBe(2);
    },
  );

  it('truncates garbage after the last record on open', async () => {
    // Prepare
    const spool = await openSpool();
    await spool.append(makeBatch(0));
    await spool.close();
    const file = join(dir, (await segmentFiles())[0] ?? '');
    const size = (await stat(file)).size;
    await writeFile(file, Buffer.from([0x20, 0, 0, 0, 1, 2]), { flag: 'a' });

    // Act
    const reopened = await openSpool();

    // Assess
    expect((await stat(file)).size).toBe(size);
    expect(await drainSeqs(reopened)).toEqual([0]);
  });

  it('skips only a damaged record between intact ones, reports its seq and windows once, and never reuses its seq', async () => {
    // Prepare: seq 0..5 in one segment; a byte of seq 2's payload flipped
    const spool = await openSpool();
    for (let seq = 0; seq < 6; seq++) await spool.append(makeBatch(seq, T0, 8));
    await spool.close();
    const file = join(dir, (await segmentFiles())[0] ?? '');
    const data = await readFile(file);
    const seq2 = scanSegment(file, data).records[2]!;
    data[seq2.offset + 40] = (data[seq2.offset + 40] ?? 0) ^ 0xff;
    await writeFile(file, data);

    // Act
    const reopened = await openSpool();
    const report = reopened.takeDroppedReport();
    const lastSeq = reopened.stats().last_seq;
    const seqs = await drainSeqs(reopened);
    await reopened.close();
    const again = await openSpool();

    // Assess
    expect(seqs).toEqual([0, 1, 3, 4, 5]);
    expect(report).toEqual({ batches: 1, windows: 8, firstSeq: 2, lastSeq: 2 });
    expect(lastSeq).toBe(5);
    expect(again.takeDroppedReport()).toBeUndefined();
  });

  it('counts damaged bytes at the end of an earlier segment by size, and skips every seq they could hold', async () => {
    // Prepare: seq 0 in segment 0 followed by 1,000 bytes of zeros, seq 1 in segment 1
    const spool = await openSpool({ segmentBytes: 1024 });
    for (let seq = 0; seq < 2; seq++) await spool.append(makeBatch(seq));
    await spool.close();
    const [first, second] = await segmentFiles();
    const file = join(dir, first ?? '');
    await writeFile(file, Buffer.concat([await readFile(file), Buffer.alloc(1000)]));

    // Act
    const reopened = await openSpool({ segmentBytes: 1024 });
    const report = reopened.takeDroppedReport();

    // Assess
    expect(second).toBeDefined();
    expect(report?.batches).toBeGreaterThanOrEqual(1);
    expect(reopened.stats().last_seq).toBeGreaterThanOrEqual(0 + Math.ceil(1000 / MIN_RECORD_BYTES));
  });

  it('counts a damaged last record of an earlier segment as dropped (it was acknowledged once)', async () => {
    // Prepare
    const spool = await openSpool({ segmentBytes: 1024 });
    for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
    await spool.close();
    const first = join(dir, (await segmentFiles())[0] ?? '');
    const data = await readFile(first);
    data[40] = (data[40] ?? 0) ^ 0xff;
    await writeFile(first, data);

    // Act
    const reopened = await openSpool({ segmentBytes: 1024 });

    // Assess
    expect(await drainSeqs(reopened)).toEqual([1, 2]);
    expect(reopened.takeDropped()).toBe(1);
  });

  it('deletes a segment whose magic never reached the disk', async () => {
    // Prepare
    const spool = await openSpool();
    await spool.append(makeBatch(0));
    await spool.close();
    await writeFile(join(dir, '000000000007.seg'), SEGMENT_MAGIC.subarray(0, 3));

    // Act
    const reopened = await openSpool();
    await reopened.append(makeBatch(1));

    // Assess
    expect(await segmentFiles()).toEqual(['000000000000.seg']);
    expect(await drainSeqs(reopened)).toEqual([0, 1]);
  });

  it('moves a .seg file that is not a spool segment to damaged/, counts it, and goes on', async () => {
    // Prepare: seq 0..2 queued, then a foreign file under a segment name
    const spool = await openSpool();
    for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
    await spool.close();
    await writeFile(join(dir, '000000000005.seg'), 'not a spool segment at all');

    // Act
    const reopened = await openSpool();
    await reopened.append(makeBatch(9));

    // Assess
    expect(await readdir(join(dir, DAMAGED_DIR))).toEqual(['000000000005.seg']);
    expect(await drainSeqs(reopened)).toEqual([0, 1, 2, 9]);
    expect(reopened.takeDropped()).toBe(1);
    expect(reopened.stats().last_seq).toBeGreaterThan(2);
  });

  it('removes a stray cursor tmp file and segments already acked on open', async () => {
    // Prepare
    const spool = await openSpool({ segmentBytes: 1024 });
    for (let seq = 0; seq < 4; seq++) await spool.append(makeBatch(seq));
    await spool.close();
    await writeFile(join(dir, 'cursor.json.tmp'), '{"v":1,"segm');
    await writeFile(
      join(dir, 'cursor.json'),
      JSON.stringify({ v: 1, segment: 1, offset: 0, last_removed_seq: 1, dropped_total: 0 }),
    );

    // Act
    const reopened = await openSpool({ segmentBytes: 1024 });

    // Assess
    expect(await readdir(dir)).not.toContain('cursor.json.tmp');
    expect(await segmentFiles()).not.toContain('000000000000.seg');
    expect(await drainSeqs(reopened)).toEqual([1, 2, 3]);
  });

  it('replays every segment when the cursor file is unreadable', async () => {
    // Prepare
    const spool = await openSpool();
    for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
    await spool.ack(makeBatch(0).batch_id);
    await spool.close();
    await writeFile(join(dir, 'cursor.json'), 'garbage');

    // Act
    const reopened = await openSpool();

    // Assess
    expect(await drainSeqs(reopened)).toEqual([0, 1, 2]);
    expect(warnings.some((w) => w.includes('cursor'))).toBe(true);
  });

  describe('bounds', () => {
    it('drops the oldest batches past maxBytes and counts them once', async () => {
      // Prepare
      const recordBytes = JSON.stringify(makeBatch(0)).length + 8;
      const spool = await openSpool({ maxBytes: recordBytes * 3 + 10 });

      // Act
      for (let seq = 0; seq < 7; seq++) await spool.append(makeBatch(seq));
      const report = spool.takeDroppedReport();
      const again = spool.takeDropped();

      // Assess
      expect(report).toEqual({ batches: 4, windows: 4, firstSeq: 0, lastSeq: 3 });
      expect(again).toBe(0);
      expect(spool.stats()).toMatchObject({ batches: 3, dropped_total: 4 });
      expect(await drainSeqs(spool)).toEqual([4, 5, 6]);
    });

    it('keeps unreported drops across a crash, and forgets them once taken and closed', async () => {
      // Prepare
      const recordBytes = JSON.stringify(makeBatch(0)).length + 8;
      const first = await openSpool({ maxBytes: recordBytes * 2 });
      for (let seq = 0; seq < 4; seq++) await first.append(makeBatch(seq));
      // No close: the process "dies" here with 2 drops unreported.

      // Act
      const second = await Spool.open({ dir, clock: clock.now, maxBytes: recordBytes * 2 });
      const afterCrash = second.takeDropped();
      await second.close();
      const third = await openSpool({ maxBytes: recordBytes * 2 });

      // Assess
      expect(afterCrash).toBe(2);
      expect(third.takeDropped()).toBe(0);
      expect(third.stats().dropped_total).toBe(2);
    });

    it('does not write a batch larger than maxBytes, and counts it', async () => {
      // Prepare
      const spool = await openSpool({ maxBytes: 4096 });
      await spool.append(makeBatch(0));

      // Act
      await spool.append(makeBatch(1, T0, 8, true));

      // Assess
      expect(spool.stats().batches).toBe(1);
      expect(spool.takeDroppedReport()).toEqual({ batches: 1, windows: 8, firstSeq: 1, lastSeq: 1 });
    });

    it('drops batches older than maxAgeS on open', async () => {
      // Prepare
      const spool = await openSpool({ maxAgeS: 3600 });
      await spool.append(makeBatch(0, T0));
      await spool.append(makeBatch(1, new Date(T0.getTime() + 1_800_000)));
      await spool.close();
      clock.advance(4_200_000);

      // Act
      const reopened = await openSpool({ maxAgeS: 3600 });

      // Assess
      expect(reopened.takeDropped()).toBe(1);
      expect(await drainSeqs(reopened)).toEqual([1]);
    });

    it('drops aged batches on append, and a batch already too old', async () => {
      // Prepare
      const spool = await openSpool({ maxAgeS: 600 });
      await spool.append(makeBatch(0, T0));
      clock.advance(700_000);

      // Act
      await spool.append(makeBatch(1, clock.now()));
      await spool.append(makeBatch(2, T0));

      // Assess
      expect(spool.takeDroppedReport()).toMatchObject({ batches: 2, firstSeq: 0, lastSeq: 2 });
      expect(await drainSeqs(spool)).toEqual([1]);
    });
  });

  describe('quarantine', () => {
    it('moves the oldest batch to rejected/<seq>-<batch_id>.json with the reason', async () => {
      // Prepare
      const spool = await openSpool();
      await spool.append(makeBatch(7));
      await spool.append(makeBatch(8));
      const reason = {
        message: 'refused',
        status: 400,
        error: 'expected number',
        path: 'windows[0].metrics',
      };

      // Act
      const file = await spool.quarantine(makeBatch(7).batch_id, reason);
      const next = await spool.peek();

      // Assess
      expect(file).toBe(join(dir, 'rejected', `7-${makeBatch(7).batch_id}.json`));
      const saved = JSON.parse(await readFile(file ?? '', 'utf8'));
      expect(saved).toEqual({ rejected_at: T0.toISOString(), reason, batch: makeBatch(7) });
      expect(next?.seq).toBe(8);
      expect(spool.stats()).toMatchObject({ batches: 1, dropped_total: 0 });
    });

    it('keeps at most maxRejectedFiles, deleting the lowest seq', async () => {
      // Prepare
      const spool = await openSpool({ maxRejectedFiles: 2 });

      // Act
      for (const seq of [9, 10, 11]) await spool.saveRejected(makeBatch(seq), { message: 'no' });

      // Assess
      expect((await readdir(join(dir, 'rejected'))).sort()).toEqual([
        `10-${makeBatch(10).batch_id}.json`,
        `11-${makeBatch(11).batch_id}.json`,
      ]);
    });
  });

  it.each([
    { maxAgeS: MAX_SPOOL_MAX_AGE_S + 1 },
    { maxAgeS: 59 },
    { maxBytes: 100 },
    { maxBytes: Number.NaN },
    { segmentBytes: 10 },
    { maxRejectedFiles: 0 },
  ])('throws RangeError for %o', async (opts) => {
    // Act / Assess
    await expect(Spool.open({ dir, ...opts })).rejects.toThrow(RangeError);
  });

  it('throws SpoolClosedError after close', async () => {
    // Prepare
    const spool = await openSpool();
    await spool.close();

    // Act / Assess
    await expect(spool.append(makeBatch(0))).rejects.toBeInstanceOf(SpoolClosedError);
    await expect(spool.close()).resolves.toBeUndefined();
  });
});
