import type { Batch, GpuEvent } from '../../lambdas/contract';

/**
 * The tiny in-memory delivery of `--once`, playback and tests: keeps every submitted batch in
 * {@link submitted}, and when given a `send`, {@link drain} hands the undelivered ones to it oldest
 * first, one request each, stopping at the first failure (the batch stays queued). Nothing is
 * durable and nothing is bounded: a host runs the spool (`SpoolingSender`), never this.
 *
 * @example
 * const sink = new MemorySink();
 * const loop = new AgentLoop({ ...options, delivery: sink });
 * await loop.flush();
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
   * Sends the queued batches oldest first.
   *
   * @returns how many were sent
   * @throws whatever `send` throws; the batch it failed on and those after it stay queued
   */
  async drain(): Promise<number> {
    let sent = 0;
    for (let next = this.queue[0]; next && this.send; next = this.queue[0]) {
      await this.send(next);
      this.queue.shift();
      sent += 1;
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
