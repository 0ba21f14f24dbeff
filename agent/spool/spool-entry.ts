import type { Batch } from '../../lambdas/contract';

/**
 * What the spool knows of a queued record without reading it back: where it is, and the few facts
 * of its batch that the bounds, the order checks and the loss reports need.
 */

/** The facts of a record's batch the spool keeps in memory. */
export interface SpoolEntryMeta {
  /** The batch's `seq`; −1 for a damaged record whose `seq` cannot be told. */
  readonly seq: number;
  /** The batch's `batch_id`; empty for a damaged record. */
  readonly batchId: string;
  /** The batch's time for the age bound (its `sent_at`), ms since the epoch. */
  readonly atMs: number;
  /** Flush windows the batch carries (horizons not counted), ≥ 0. */
  readonly windows: number;
}

/** Where a queued record is (segment, byte offset, record size) and what it holds. */
export interface SpoolEntry extends SpoolEntryMeta {
  /** Index of its segment file. */
  readonly segment: number;
  /** Byte offset of the record in the segment. */
  readonly offset: number;
  /** Size of the record (payload + framing), bytes. */
  readonly bytes: number;
}

/**
 * Seq, id, time and flush windows of a record's batch JSON.
 *
 * @param payload - the record's payload (batch JSON, UTF-8)
 * @param now - the time a batch whose `sent_at` does not parse is given
 * @returns the facts, or undefined when the payload is not a batch
 */
export function readEntryMeta(payload: Buffer, now: Date): SpoolEntryMeta | undefined {
  let batch: Batch;
  try {
    batch = JSON.parse(payload.toString('utf8')) as Batch;
  } catch {
    return undefined;
  }
  if (typeof batch !== 'object' || batch === null || typeof batch.batch_id !== 'string') return undefined;
  if (typeof batch.seq !== 'number' || !Array.isArray(batch.windows)) return undefined;
  return {
    seq: batch.seq,
    batchId: batch.batch_id,
    atMs: batchTimeMs(batch, now),
    windows: flushWindows(batch),
  };
}

/**
 * A batch's time for the age bound.
 *
 * @returns its `sent_at`, ms since the epoch, or `now` when that does not parse
 */
export function batchTimeMs(batch: Batch, now: Date): number {
  const ms = Date.parse(batch.sent_at);
  return Number.isNaN(ms) ? now.getTime() : ms;
}

/** @returns the batch's flush windows (horizons are not stored, so a lost one is no loss), ≥ 0 */
export function flushWindows(batch: Batch): number {
  return batch.windows.filter((w) => w.kind !== 'horizon').length;
}
