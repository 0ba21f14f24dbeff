/**
 * The caller gave `aggregateWindow` inputs it cannot aggregate: an end not after the start, or a
 * sample of another GPU. A bug in the caller, never a hardware condition.
 */
export class WindowAggregationError extends Error {
  override readonly name = 'WindowAggregationError';
}
