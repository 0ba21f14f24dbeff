import type { GpuEvent } from '../../lambdas/contract';

/**
 * Events known ahead of time (a replayed kernel log, a simulated fault), handed out in time order
 * by the reading that first reaches each one's `at`, as a live source reports an event at the
 * next poll after it happened.
 */
export class DueEvents {
  #queue: GpuEvent[];

  /** @param events - any order; sorted by `at` here */
  constructor(events: readonly GpuEvent[] = []) {
    this.#queue = [...events].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  }

  /**
   * Takes the events with `at` ≤ `nowMs`, oldest first; each is returned once.
   *
   * @param nowMs - the reading's time, ms since the epoch
   */
  take(nowMs: number): GpuEvent[] {
    let due = 0;
    while (due < this.#queue.length && Date.parse(this.#queue[due]?.at ?? '') <= nowMs) due++;
    if (due === 0) return [];
    const events = this.#queue.slice(0, due);
    this.#queue = this.#queue.slice(due);
    return events;
  }
}
