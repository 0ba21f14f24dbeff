import { readFile } from '../async-fs';
import { writeFileAtomic } from './durable-file';

/** Batches dropped (bound or age) and not yet reported in a `data_dropped` event. */
export interface DroppedReport {
  /** Batches dropped, ≥ 1. */
  readonly batches: number;
  /** Flush windows those batches carried (horizons not counted: they are not stored), ≥ 0. */
  readonly windows: number;
  /** Lowest `seq` dropped, when known (not for a damaged record). */
  readonly firstSeq?: number;
  /** Highest `seq` dropped, when known. */
  readonly lastSeq?: number;
}

/**
 * The spool's small state file (`cursor.json`), replaced atomically (write-tmp + fsync + rename +
 * fsync of the directory) at every removal. Records before (`segment`, `offset`) have left the spool.
 */
export interface SpoolCursor {
  /** Index of the segment holding the oldest record still in the spool (or the next segment to create), ≥ 0. */
  readonly segment: number;
  /** Byte offset in `segment` of that record; 0 = from the segment's start. */
  readonly offset: number;
  /** `seq` of the last batch that left the spool (acked, quarantined or dropped); absent before the first. */
  readonly lastRemovedSeq?: number;
  /** Batches dropped since the spool directory was created, ≥ 0. */
  readonly droppedTotal: number;
  /** Drops not yet reported, kept here so a crash cannot make them silent; absent when none. */
  readonly unreported?: DroppedReport;
}

/** The cursor of a spool with nothing removed yet. */
export const INITIAL_CURSOR: SpoolCursor = { segment: 0, offset: 0, droppedTotal: 0 };

/**
 * Reads the cursor file.
 *
 * @param file - path of `cursor.json`
 * @returns the cursor; undefined when the file does not exist
 * @throws {RangeError} when the file is not a cursor (bad JSON or fields)
 * @throws {Error} any other fs error
 */
export async function readCursor(file: string): Promise<SpoolCursor | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new RangeError(
      `Expected cursor file ${file} to be JSON, got ${JSON.stringify(text.slice(0, 40))}`,
      {
        cause,
      },
    );
  }
  const v = raw as Record<string, unknown>;
  const u = v.unreported as Record<string, unknown> | undefined;
  if (
    v === null ||
    typeof v !== 'object' ||
    v.v !== 1 ||
    !isCount(v.segment) ||
    !isCount(v.offset) ||
    !isCount(v.dropped_total) ||
    (v.last_removed_seq !== undefined && !isCount(v.last_removed_seq)) ||
    (u !== undefined && (typeof u !== 'object' || u === null || !isCount(u.batches) || !isCount(u.windows)))
  )
    throw new RangeError(`Expected cursor file ${file} to be a v1 cursor, got ${text.slice(0, 200)}`);
  return {
    segment: v.segment as number,
    offset: v.offset as number,
    droppedTotal: v.dropped_total as number,
    ...(v.last_removed_seq !== undefined ? { lastRemovedSeq: v.last_removed_seq as number } : {}),
    ...(u !== undefined && (u.batches as number) > 0
      ? {
          unreported: {
            batches: u.batches as number,
            windows: u.windows as number,
            ...(isCount(u.first_seq) ? { firstSeq: u.first_seq } : {}),
            ...(isCount(u.last_seq) ? { lastSeq: u.last_seq } : {}),
          },
        }
      : {}),
  };
}

/**
 * Replaces the cursor file atomically and durably.
 *
 * @param file - path of `cursor.json`
 * @param cursor - the new cursor
 * @throws {Error} the fs error; the old cursor then stays in force
 */
export async function writeCursor(file: string, cursor: SpoolCursor): Promise<void> {
  const u = cursor.unreported;
  const json = {
    v: 1,
    segment: cursor.segment,
    offset: cursor.offset,
    ...(cursor.lastRemovedSeq !== undefined ? { last_removed_seq: cursor.lastRemovedSeq } : {}),
    dropped_total: cursor.droppedTotal,
    ...(u
      ? {
          unreported: {
            batches: u.batches,
            windows: u.windows,
            ...(u.firstSeq !== undefined ? { first_seq: u.firstSeq } : {}),
            ...(u.lastSeq !== undefined ? { last_seq: u.lastSeq } : {}),
          },
        }
      : {}),
  };
  await writeFileAtomic(file, `${JSON.stringify(json)}\n`);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A loss report with more dropped batches added: their count and flush windows added, the seq range
 * widened to their known `seq` (a damaged record's −1 is not a `seq`).
 *
 * @param base - the report so far, if any
 * @param dropped - the batches dropped now
 * @returns the report; `base` unchanged when nothing was dropped
 */
export function addDropped(
  base: DroppedReport | undefined,
  dropped: readonly { readonly seq: number; readonly windows: number }[],
): DroppedReport | undefined {
  if (dropped.length === 0) return base;
  const seqs = dropped.map((d) => d.seq).filter((s) => s >= 0);
  const firstSeq = base?.firstSeq ?? (seqs.length > 0 ? Math.min(...seqs) : undefined);
  const lastSeq = seqs.length > 0 ? Math.max(...seqs) : base?.lastSeq;
  return {
    batches: (base?.batches ?? 0) + dropped.length,
    windows: (base?.windows ?? 0) + dropped.reduce((sum, d) => sum + d.windows, 0),
    ...(firstSeq !== undefined ? { firstSeq } : {}),
    ...(lastSeq !== undefined ? { lastSeq } : {}),
  };
}
