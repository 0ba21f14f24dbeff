import { MIN_RECORD_BYTES } from './segment-format';

/** What the spool knows of an intact record next to a damaged region. */
export interface KnownRecord {
  /** The batch's `seq`. */
  readonly seq: number;
  /** Its flush windows. */
  readonly windows: number;
  /** Its record size, bytes. */
  readonly bytes: number;
}

/** The batches a damaged region is counted as, one entry per batch. */
export interface EstimatedLoss {
  /** One entry per lost batch: its `seq` when it can be told (−1 otherwise) and its flush windows. */
  readonly batches: readonly { readonly seq: number; readonly windows: number }[];
  /**
   * The highest `seq` the region can have held (absent when no intact record precedes it): the
   * spool's next `seq` starts above it, so no lost batch's `seq` is ever used again.
   */
  readonly seqCeiling?: number;
}

/**
 * Estimates what a damaged region of a segment held (the spool appends batches in `seq` order, so
 * the region sits between its neighbours' `seq`):
 * - with intact records on both sides, exactly the `seq` values between them;
 * - otherwise `round(bytes / neighbour's record size)` batches, at least 1.
 * Each lost batch counts the neighbour's flush windows (a host's GPU count does not change between
 * batches), 0 when no neighbour is known.
 *
 * @param bytes - the region's size, bytes ≥ 1
 * @param prev - the intact record before it, if any
 * @param next - the intact record after it, if any
 * @returns the lost batches and the `seq` ceiling
 */
export function estimateLoss(bytes: number, prev?: KnownRecord, next?: KnownRecord): EstimatedLoss {
  const windows = prev?.windows ?? next?.windows ?? 0;
  if (prev !== undefined && next !== undefined && next.seq - prev.seq > 1) {
    const batches = Array.from({ length: next.seq - prev.seq - 1 }, (_, i) => ({
      seq: prev.seq + 1 + i,
      windows,
    }));
    return { batches, seqCeiling: next.seq - 1 };
  }
  const typical = prev?.bytes ?? next?.bytes;
  const count = Math.max(1, typical === undefined ? 1 : Math.round(bytes / typical));
  if (prev === undefined) return { batches: Array.from({ length: count }, () => ({ seq: -1, windows })) };
  const seqCeiling = prev.seq + Math.max(count, Math.ceil(bytes / MIN_RECORD_BYTES));
  return {
    batches: Array.from({ length: count }, (_, i) => ({ seq: prev.seq + 1 + i, windows })),
    seqCeiling,
  };
}
