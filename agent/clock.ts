/**
 * The agent's one reading of the wall clock. Every component that stamps, ages or schedules by
 * wall time takes a {@link Clock} (injected: tests and replays pass their own), and defaults to
 * {@link systemClock}; nothing else in `agent/` calls `new Date()` or `Date.now()`, so a test that
 * injects a clock controls all of the agent's time (the architecture test enforces it).
 *
 * Durations that need no wall time (timeouts, CPU budgets) use the monotonic `performance.now()`.
 */

/** Returns "now" as a `Date` (wall time, UTC). */
export type Clock = () => Date;

/** The system's wall clock. */
export const systemClock: Clock = () => new Date();

/** The system's wall clock as epoch milliseconds. */
export const systemEpochMs = (): number => Date.now();
