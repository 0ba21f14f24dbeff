/**
 * The pipeline's one reading of the wall clock (the clock is the outside world, so it lives with
 * the adapters). Handlers, the local pipeline and the CLI take a {@link Clock} and default to
 * {@link systemClock}; domain code never reads time, it is given `now`. Nothing else in
 * `lambdas/` or `bin/` calls `new Date()` or `Date.now()` (the architecture test enforces it), so
 * a test that injects a clock controls all of the pipeline's time.
 */

/** Returns "now" as a `Date` (wall time, UTC). */
export type Clock = () => Date;

/** The system's wall clock. */
export const systemClock: Clock = () => new Date();
