import type { Batch, GpuEvent } from '../../lambdas/contract';
import { mergeableCount, mergeBatches } from './merge-batches';

/**
 * The tiny in-memory delivery of `--once`, playback and tests (`composeAgent`'s memory delivery):
 * keeps every submitted batch in {@link submitted}, and when given a `send`, {@link drain} hands the
 * undelivered ones to it oldest first, merged as the spool's drain merges them, stopping at the
 * first failure (they stay queued). Nothing is durable and nothing is bounded: a host runs the
 * spool (`SpoolingSender`), never this.
 *
 * @example
 * const sink = new MemorySink();
 * await sink.submit(batch);
 * print(sink.submitted);
 */
export class MemorySink {
  /** Every batch submitted, in order (delivered or not). */
  readonly submitted: Batch[] = [];
  private readonly queue: Batch[] = [];

  /** @param send - delivers one batch, throws when it could not; none: batches are only kept in {@link submitted} */
  constructor(private readonly send?: (batch: Batch) => Promise<unknown>) {}

  /** Keeps a batch (and queues it for {@link drain} when there is a `send`). */
  async submit(batch: Batch): Promise<void> {
    this.submitted.push(batch);
    if (this.send) this.queue.push(batch);
  }

  /**
   * Sends the queued batches oldest first, consecutive ones merged into one request (`mergeBatches`).
   *
   * @returns how many batches were sent
   * @throws whatever `send` throws; the batches it failed on and those after them stay queued
   */
  async drain(): Promise<number> {
    let sent = 0;
    for (let n = mergeableCount(this.queue); n > 0 && this.send; n = mergeableCount(this.queue)) {
      await this.send(mergeBatches(this.queue.slice(0, n)));
      this.queue.splice(0, n);
      sent += n;
    }
    return sent;
  }

  /** Never anything: this sink drops nothing. */
  takeDroppedEvent(_now: Date): GpuEvent | undefined {
    return undefined;
  }

  /** Batches queued for `send`, not delivered yet. */
  pending(): number {
    return this.queue.length;
  }
}
