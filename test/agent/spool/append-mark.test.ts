import { readFile, rm, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type AppendMark,
  AppendMarkFile,
  MARK_SLOT_STRIDE,
  readAppendMark,
} from '../../../agent/spool/append-mark';
import { MARK_FILE } from '../../../agent/spool/constants';
import { segmentFileName } from '../../../agent/spool/segment-format';
import { Spool } from '../../../agent/spool/spool';
import { makeBatch, makeTempDir, T0 } from './spool-fixtures';

let dir: string;
let remove: () => Promise<void>;

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir('gpu-sentinel-mark-'));
  warnings = [];
});

afterEach(async () => {
  await remove();
});

const MARK: AppendMark = { segment: 3, bytes: 4096, lastSeq: 41, firstSeq: 30, windows: 8 };

let warnings: string[] = [];

async function openSpool(): Promise<Spool> {
  return Spool.open({ dir, clock: () => T0, onWarning: (m) => warnings.push(m) });
}

describe('append mark', () => {
  it('reads back the newest of its two slots', async () => {
    // Prepare
    const file = join(dir, 'mark');
    const marks = await AppendMarkFile.open(file, 0);
    await marks.write(MARK);
    await marks.write({ ...MARK, bytes: 5000, lastSeq: 42 });
    await marks.close();

    // Act
    const read = await readAppendMark(file);

    // Assess
    expect(read).toEqual({ mark: { ...MARK, bytes: 5000, lastSeq: 42 }, generation: 2 });
  });

  it('falls back to the previous mark when the newest slot is torn, and to none when both are', async () => {
    // Prepare: generation 2 goes to slot 0, generation 1 is in slot 1
    const file = join(dir, 'mark');
    const marks = await AppendMarkFile.open(file, 0);
    await marks.write(MARK);
    await marks.write({ ...MARK, lastSeq: 42 });
    await marks.close();
    const data = await readFile(file);
    data[20] = (data[20] ?? 0) ^ 0xff;
    await writeFile(file, data);

    // Act
    const older = await readAppendMark(file);
    await truncate(file, MARK_SLOT_STRIDE);
    const none = await readAppendMark(file);
    await unlink(file);
    const missing = await readAppendMark(file);

    // Assess
    expect(older).toEqual({ mark: MARK, generation: 1 });
    expect(none).toBeUndefined();
    expect(missing).toBeUndefined();
  });
});

describe('Spool with its append mark', () => {
  it('counts the records of a segment that is gone once, and starts seq above them', async () => {
    // Prepare: 4 acknowledged appends in segment 0, whose file then disappears
    const spool = await openSpool();
    for (let seq = 0; seq < 4; seq++) await spool.append(makeBatch(seq, T0, 2));
    await spool.close();
    await rm(join(dir, segmentFileName(0)));

    // Act
    const reopened = await openSpool();
    const report = reopened.takeDroppedReport();
    const lastSeq = reopened.stats().last_seq;
    await reopened.close();
    const again = await openSpool();
    const second = again.takeDroppedReport();
    await again.close();

    // Assess
    expect(report).toEqual({ batches: 4, windows: 8, firstSeq: 0, lastSeq: 3 });
    expect(lastSeq).toBe(3);
    expect(second).toBeUndefined();
  });

  it('counts a damaged acknowledged tail once: the mark is restated for the repaired segment', async () => {
    // Prepare
    const spool = await openSpool();
    for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
    await spool.close();
    const file = join(dir, segmentFileName(0));
    await truncate(file, (await stat(file)).size - 10);

    // Act
    const first = await openSpool();
    const report = first.takeDroppedReport();
    await first.close();
    const second = await openSpool();
    const again = second.takeDroppedReport();
    await second.append(makeBatch(3));
    await second.close();
    const third = await openSpool();
    const last = third.stats();
    await third.close();

    // Assess
    expect(report).toEqual({ batches: 1, windows: 1, firstSeq: 2, lastSeq: 2 });
    expect(again).toBeUndefined();
    expect(last).toMatchObject({ batches: 3, last_seq: 3 });
  });

  it('takes a bad tail of the last segment for a torn write when the spool has no mark (written before it existed)', async () => {
    // Prepare
    const spool = await openSpool();
    for (let seq = 0; seq < 3; seq++) await spool.append(makeBatch(seq));
    await spool.close();
    await unlink(join(dir, MARK_FILE));
    const file = join(dir, segmentFileName(0));
    await truncate(file, (await stat(file)).size - 10);

    // Act
    const reopened = await openSpool();
    const stats = reopened.stats();
    await reopened.close();

    // Assess
    expect(stats).toMatchObject({ batches: 2, dropped_total: 0, last_seq: 1 });
    expect(warnings.some((w) => w.startsWith('spool append mark missing or unreadable'))).toBe(true);
  });
});
