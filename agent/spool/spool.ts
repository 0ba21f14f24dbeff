import type { Batch } from '../../lambdas/contract';
import { mkdir } from '../async-fs';
import type { QuarantineReason } from './dead-letter';
import { type HeldBatch, heldPastBounds, listHeld, readHeld, removeHeld, writeHeld } from './held-batches';
import { resolveSpoolOptions, type SpoolOptions } from './spool-options';
import { SpoolQueue } from './spool-queue';

export type { SpoolStats } from './spool-queue';

/**
 * The agent's spool: the durable FIFO of {@link SpoolQueue} (segments, cursor, append mark, bounds,
 * quarantine), plus the batches set aside outside the queue: `held/` for batches refused with 401
 * or 403 (not their fault: resent once a send succeeds again, bounded by the queue's age and bytes,
 * `held-batches.ts`) and `rejected/` for batches refused on a direct send.
 *
 * @example
 * const spool = await Spool.open({ dir: '/var/lib/gpu-sentinel/spool' });
 * await spool.append(batch);
 * const oldest = await spool.peek();
 * if (oldest) { await sender.send(oldest); await spool.ack(oldest.batch_id); }
 */
export class Spool extends SpoolQueue {
  /**
   * Opens (or creates) the spool in `dir`: repairs torn or damaged segment tails, deletes segments
   * already acked, then drops batches past the age or byte bound.
   *
   * @param opts - see {@link SpoolOptions}
   * @returns the open spool
   * @throws {RangeError} when a number option is out of range
   * @throws {SpoolCorruptError} when a `*.seg` file in `dir` is not a spool segment (foreign file)
   * @throws {Error} the fs error when `dir` cannot be created, read or written (EACCES, EROFS, …)
   */
  static async open(opts: SpoolOptions = {}): Promise<Spool> {
    const spool = new Spool(resolveSpoolOptions(opts));
    await mkdir(spool.dir, { recursive: true });
    await spool.recover();
    return spool;
  }

  /**
   * Moves the oldest batch, which the API refused with 401 or 403 after every credential refresh
   * (not the batch's fault), to `held/` to be resent once a send succeeds again (see
   * {@link heldBatches}). The file is written durably before the batch leaves the queue; held
   * batches past the age or byte bound (the queue's `maxAgeS` and `maxBytes`) are then dropped and
   * counted.
   *
   * @param batchId - `batch_id` of the oldest batch
   * @param reason - the refusal
   * @returns the held file's path; undefined when no queued batch has that id, or when the record no longer reads back (then dropped and counted)
   * @throws {SpoolOrderError} when the batch is queued but is not the oldest
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error; the batch then stays queued
   */
  hold(batchId: string, reason: QuarantineReason): Promise<string | undefined> {
    return this.exclusive(async () => {
      if (!this.isHead(batchId)) return undefined;
      const batch = await this.readHead();
      const head = this.entries[0];
      if (batch?.batch_id !== batchId || !head) return undefined;
      const file = await writeHeld(this.heldDir, batch, head.atMs, head.windows, reason, this.clock());
      await this.remove(1, 'quarantine');
      await this.dropHeld(await heldPastBounds(await listHeld(this.heldDir), this.cutoffMs(), this.maxBytes));
      return file;
    });
  }

  /**
   * The held batches (refused with 401/403), lowest `seq` first, after dropping (and counting)
   * those past the age or byte bound.
   *
   * @returns the batches still held, as listed (read one with {@link readHeldBatch})
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error
   */
  heldBatches(): Promise<HeldBatch[]> {
    return this.exclusive(async () => {
      const held = await listHeld(this.heldDir);
      const past = await heldPastBounds(held, this.cutoffMs(), this.maxBytes);
      await this.dropHeld(past);
      return held.filter((h) => !past.includes(h));
    });
  }

  /**
   * Reads a held batch back; one that no longer reads back is dropped and counted.
   *
   * @param held - from {@link heldBatches}
   * @returns the batch, or undefined when it was dropped
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error
   */
  readHeldBatch(held: HeldBatch): Promise<Batch | undefined> {
    return this.exclusive(async () => {
      const batch = await readHeld(held);
      if (batch === undefined) {
        await this.dropHeld([held], 'held batch no longer reads back; dropped');
      }
      return batch;
    });
  }

  /**
   * Settles a held batch: `delivered` deletes it; a refusal moves it to `rejected/` with the reason
   * (like {@link quarantine}).
   *
   * @param held - from {@link heldBatches}
   * @param outcome - `{ delivered: true }`, or the batch and the refusal
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error; the batch then stays held
   */
  settleHeld(
    held: HeldBatch,
    outcome: { readonly delivered: true } | { readonly batch: Batch; readonly reason: QuarantineReason },
  ): Promise<void> {
    return this.exclusive(async () => {
      if ('batch' in outcome) await this.writeRejected(outcome.batch, outcome.reason);
      await removeHeld(held);
    });
  }

  /**
   * Saves a batch that never entered the queue (refused on a direct send) to
   * `rejected/<seq>-<batch_id>.json`, like {@link quarantine}.
   *
   * @param batch - the refused batch
   * @param reason - the API's refusal
   * @returns the quarantine file's path
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error
   */
  saveRejected(batch: Batch, reason: QuarantineReason): Promise<string> {
    return this.exclusive(() => this.writeRejected(batch, reason));
  }

  /** Counts held batches as dropped (one cursor write), then deletes their files. */
  private async dropHeld(
    held: readonly HeldBatch[],
    why = 'held batches past the spool bound (age or bytes); dropped',
  ): Promise<void> {
    if (held.length === 0) return;
    this.warn(why, {
      dropped: held.length,
      max_bytes: this.maxBytes,
      max_age_s: this.maxAgeS,
    });
    await this.remove(
      0,
      'drop',
      held.map((h) => ({ seq: h.seq, batchId: h.batchId, atMs: h.atMs, windows: h.windows })),
    );
    for (const h of held) await removeHeld(h);
  }
}
