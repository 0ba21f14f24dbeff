import { join } from 'node:path';
import { readdir, readFile } from '../async-fs';
import { type AppendMark, readAppendMark } from './append-mark';
import { estimateLoss, type KnownRecord } from './damage-estimate';
import { syncDir } from './durable-file';
import { SpoolCorruptError } from './errors';
import {
  isFiller,
  MIN_RECORD_BYTES,
  parseSegmentFileName,
  SEGMENT_MAGIC,
  scanSegment,
  segmentFileName,
} from './segment-format';
import { fillDamaged, setAside, truncateFile, unlinkIfExists, writeAt } from './segment-io';
import { INITIAL_CURSOR, readCursor, type SpoolCursor } from './spool-cursor';
import { readEntryMeta, type SpoolEntry, type SpoolEntryMeta } from './spool-entry';

/**
 * Recovery of the spool at open: reads the cursor, then every segment from it on, and repairs
 * what a crash or a bad disk left (a torn last record is cut off, a damaged record is overwritten
 * with a filler and counted, a segment with a damaged header gets its magic back, a file this spool
 * never wrote is set aside in `damaged/`, segments wholly acked are deleted). What it cannot save is
 * counted, never silent: the spool drops it with the loss report it returns.
 */

/** What {@link recoverSpool} needs: the directory, the clock, the warning sink. */
export interface RecoverSpoolOptions {
  /** The spool directory (it exists). */
  readonly dir: string;
  /** Path of `cursor.json`. */
  readonly cursorFile: string;
  /** Path of the append mark (`append-mark.ts`). */
  readonly markFile: string;
  /** The clock: the time of a record whose `sent_at` does not parse. */
  readonly clock: () => Date;
  /** Called once per repair, in words an operator can act on. */
  readonly warn: (message: string, data?: Record<string, unknown>) => void;
}

/** The queue as rebuilt from disk, and what was lost. */
export interface RecoveredSpool {
  /** The cursor read (or rebuilt from the first segment when unreadable or absent). */
  readonly cursor: SpoolCursor;
  /** The queued records, oldest first. */
  readonly entries: SpoolEntry[];
  /** Existing segment files: index → valid bytes. */
  readonly segments: Map<number, number>;
  /** Bytes of the queued records, ≥ 0. */
  readonly bytes: number;
  /** Highest `seq` seen (queued, gone by the cursor, or acknowledged by the append mark); undefined for a new spool. */
  readonly lastSeq: number | undefined;
  /** Generation of the append mark read (0 when none): the next mark write goes after it. */
  readonly markGeneration: number;
  /** The mark's flush windows per batch (0 when none): what a restated mark carries when no batch is queued. */
  readonly markWindows: number;
  /** Batches lost to damage, one each (seq −1 when it cannot be told), to drop and report. */
  readonly damaged: readonly SpoolEntryMeta[];
  /** The highest `seq` damaged bytes may have held: the next `seq` starts above it; undefined when none. */
  readonly seqFloor: number | undefined;
}

/**
 * Rebuilds the queue from disk: the cursor, then every segment from the cursor on, repairing torn
 * or damaged tails and records, setting foreign files aside, deleting segments already acked.
 *
 * A segment's bad or missing tail is told apart with the append mark (`append-mark.ts`): bytes
 * after the mark were being written when the agent stopped and no `append` acknowledged them (a
 * torn write: cut off, no loss); records before it were durably written and acknowledged, so what
 * of them no longer reads back (flipped, cut short, zeroed, truncated to the header, or the segment
 * gone) is counted, exactly the `seq` values between the last intact record and the mark's
 * `lastSeq`. Without a mark (a spool written before it existed, or both slots unreadable) a bad
 * tail of the last segment is taken for a torn write, as before.
 *
 * @param options - directory, cursor file, clock, warnings
 * @returns the queue and the losses, for the spool to drop (with one cursor write) and report
 * @throws {Error} the fs error when the directory or a segment cannot be read or repaired
 */
export async function recoverSpool(options: RecoverSpoolOptions): Promise<RecoveredSpool> {
  const { dir, cursorFile, clock, warn } = options;
  await unlinkIfExists(`${cursorFile}.tmp`);
  const readMark = await readAppendMark(options.markFile);
  const mark = readMark?.mark;
  let read: SpoolCursor | undefined;
  try {
    read = await readCursor(cursorFile);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    warn('spool cursor unreadable; every segment is replayed (the API stores repeats once)', {
      error: error.message,
    });
  }
  const indices = (await readdir(dir))
    .map(parseSegmentFileName)
    .filter((index): index is number => index !== undefined)
    .sort((a, b) => a - b);
  const cursor: SpoolCursor = read ?? { ...INITIAL_CURSOR, segment: indices[0] ?? 0 };
  if (mark === undefined && indices.length > 0)
    warn(
      'spool append mark missing or unreadable; a bad tail of the last segment is taken for a torn write (not counted) until the next append writes one',
      { file: options.markFile },
    );
  const entries: SpoolEntry[] = [];
  const segments = new Map<number, number>();
  let bytes = 0;
  let lastSeq = cursor.lastRemovedSeq;
  let dirChanged = false;
  const damaged: SpoolEntryMeta[] = [];
  let seqFloor: number | undefined;
  const lose = (bytes: number, prev?: KnownRecord, next?: KnownRecord): void => {
    const loss = estimateLoss(bytes, prev, next);
    for (const b of loss.batches) damaged.push({ seq: b.seq, batchId: '', atMs: 0, windows: b.windows });
    if (loss.seqCeiling !== undefined) seqFloor = Math.max(seqFloor ?? loss.seqCeiling, loss.seqCeiling);
  };
  let prev: KnownRecord | undefined;
  /** The last intact record before the mark's segment (for a mark segment that is missing). */
  let beforeMark: KnownRecord | undefined;
  let pastMark = false;
  let foreignBytes = 0;
  for (const index of indices) {
    if (mark !== undefined && !pastMark && index > mark.segment) {
      beforeMark = prev;
      pastMark = true;
    }
    const file = join(dir, segmentFileName(index));
    if (index < cursor.segment) {
      await unlinkIfExists(file);
      dirChanged = true;
      continue;
    }
    const data = await readFile(file);
    let scan: ReturnType<typeof scanSegment>;
    try {
      scan = scanSegment(file, data);
    } catch (error) {
      if (!(error instanceof SpoolCorruptError)) throw error;
      // A bad magic: ours with a damaged header when intact batch records follow it (the magic is
      // rewritten and the records kept), else a file this spool never wrote (set aside, counted).
      const behind =
        data.length > SEGMENT_MAGIC.length
          ? scanSegment(file, Buffer.concat([SEGMENT_MAGIC, data.subarray(SEGMENT_MAGIC.length)]))
          : undefined;
      if (behind?.records.some((r) => readEntryMeta(r.payload, clock()) !== undefined)) {
        await writeAt(file, 0, SEGMENT_MAGIC);
        warn('spool segment header damaged; rewritten, its records kept', {
          segment: segmentFileName(index),
        });
        scan = behind;
      } else {
        const moved = await setAside(dir, file, index);
        foreignBytes += data.length;
        // Counted as one batch of unknown size: what (if anything) it held is unknowable (the
        // mark's segment is counted from the mark below).
        if (index !== mark?.segment) damaged.push({ seq: -1, batchId: '', atMs: 0, windows: 0 });
        warn('spool file is not a spool segment; moved aside, the agent goes on', {
          segment: segmentFileName(index),
          moved_to: moved,
          bytes: data.length,
          error: error.message,
        });
        dirChanged = true;
        continue;
      }
    }
    if (scan.validBytes === 0) {
      // Created but its magic never reached the disk: no record can be in it.
      await unlinkIfExists(file);
      dirChanged = true;
      continue;
    }
    const known = scan.records.map((record) => ({
      record,
      meta: isFiller(record.payload) ? undefined : readEntryMeta(record.payload, clock()),
      filler: isFiller(record.payload),
    }));
    const knownAt = (i: number): KnownRecord | undefined => {
      const k = known[i];
      return k?.meta === undefined ? undefined : { ...k.meta, bytes: k.record.bytes };
    };
    const skipped = (offset: number): boolean => index === cursor.segment && offset < cursor.offset;
    // Damage between intact records: each region loses only what it held, then is overwritten
    // with a filler record so a later open does not count it again.
    for (const region of scan.damaged) {
      if (skipped(region.offset)) continue;
      const after = known.findIndex((k) => k.record.offset > region.offset);
      const before = after === -1 ? known.length - 1 : after - 1;
      lose(region.bytes, knownAt(before) ?? (before < 0 ? prev : undefined), knownAt(after));
      await fillDamaged(file, region.offset, region.bytes);
      warn('spool segment has a damaged record; it alone is dropped and counted', {
        segment: segmentFileName(index),
        offset: region.offset,
        bytes: region.bytes,
      });
    }
    const last = lastIntact(known, prev);
    if (mark !== undefined && index === mark.segment) {
      // The mark's segment: what is missing before the mark was acknowledged; what is after it was not.
      const from = Math.max(scan.validBytes, index === cursor.segment ? cursor.offset : 0);
      if (from < mark.bytes) {
        damaged.push(
          ...lostBeforeMark(mark, last, from > scan.validBytes ? cursor.lastRemovedSeq : undefined),
        );
        warn(
          'spool segment lost records that were durably written (before the append mark); dropped and counted',
          {
            segment: segmentFileName(index),
            valid_bytes: scan.validBytes,
            mark_bytes: mark.bytes,
            tail: scan.tail,
          },
        );
      }
    }
    if (scan.tail !== 'clean') {
      await truncateFile(file, scan.validBytes);
      // A torn tail is a write cut short, never acknowledged: no loss. With a mark, that is any bad
      // tail after it (a tail before it was counted above); without one, a bad tail of the last
      // segment. A bad tail of an earlier segment is counted (over-reported, never silent).
      const torn =
        mark !== undefined ? index >= mark.segment : scan.tail === 'torn' && index === indices.at(-1);
      if (!torn) lose(data.length - scan.validBytes, last);
      warn(
        torn
          ? 'spool segment ended in a torn record (a write cut short); truncated'
          : 'spool segment ends in damaged bytes with no intact record after them; dropped and counted',
        { segment: segmentFileName(index), valid_bytes: scan.validBytes },
      );
    }
    for (const { record, meta, filler } of known) {
      if (filler || (meta === undefined && skipped(record.offset))) continue;
      if (!meta) {
        damaged.push({ seq: -1, batchId: '', atMs: 0, windows: prev?.windows ?? 0 });
        continue;
      }
      prev = { ...meta, bytes: record.bytes };
      if (skipped(record.offset)) continue;
      entries.push({ segment: index, offset: record.offset, bytes: record.bytes, ...meta });
      bytes += record.bytes;
      lastSeq = Math.max(lastSeq ?? meta.seq, meta.seq);
    }
    segments.set(index, scan.validBytes);
  }
  if (!pastMark) beforeMark = prev;
  if (
    mark !== undefined &&
    mark.segment >= cursor.segment &&
    !segments.has(mark.segment) &&
    mark.bytes > Math.max(SEGMENT_MAGIC.length, mark.segment === cursor.segment ? cursor.offset : 0)
  ) {
    // The mark's segment is gone (deleted, or set aside above): every record in it was acknowledged.
    damaged.push(
      ...lostBeforeMark(
        mark,
        beforeMark,
        mark.segment === cursor.segment ? cursor.lastRemovedSeq : undefined,
      ),
    );
    warn('spool segment holding acknowledged records is missing; its records are dropped and counted', {
      segment: segmentFileName(mark.segment),
      mark_bytes: mark.bytes,
    });
  }
  if (mark !== undefined) lastSeq = Math.max(lastSeq ?? mark.lastSeq, mark.lastSeq);
  if (foreignBytes > 0) {
    // A set-aside file may have held batches of this agent: skip past every seq it could have held.
    const top = Math.max(seqFloor ?? -1, lastSeq ?? -1);
    if (top >= 0) seqFloor = top + Math.ceil(foreignBytes / MIN_RECORD_BYTES);
  }
  if (dirChanged) await syncDir(dir);
  return {
    cursor,
    entries,
    segments,
    bytes,
    lastSeq,
    damaged,
    seqFloor,
    markGeneration: readMark?.generation ?? 0,
    markWindows: mark?.windows ?? 0,
  };
}

/** The last record of the segment that holds a batch, else the one before the segment. */
function lastIntact(
  known: readonly {
    readonly record: { readonly bytes: number };
    readonly meta: SpoolEntryMeta | undefined;
  }[],
  before: KnownRecord | undefined,
): KnownRecord | undefined {
  for (let i = known.length - 1; i >= 0; i--) {
    const k = known[i];
    if (k?.meta !== undefined) return { ...k.meta, bytes: k.record.bytes };
  }
  return before;
}

/**
 * The batches lost between the last intact record and the append mark: the spool appends in `seq`
 * order, so exactly the `seq` values above the last intact one (or above `acked`, when the lost
 * bytes reach into records already acked, or from the mark's `firstSeq`) up to the mark's `lastSeq`;
 * at least one (bytes before the mark held a record), each with the neighbour's flush windows.
 */
function lostBeforeMark(
  mark: AppendMark,
  before: KnownRecord | undefined,
  acked: number | undefined,
): SpoolEntryMeta[] {
  const lower = Math.max(before?.seq ?? -1, mark.firstSeq - 1, acked ?? -1);
  const windows = before?.windows ?? mark.windows;
  const count = mark.lastSeq - lower;
  if (count < 1) return [{ seq: -1, batchId: '', atMs: 0, windows }];
  return Array.from({ length: count }, (_, i) => ({ seq: lower + 1 + i, batchId: '', atMs: 0, windows }));
}
