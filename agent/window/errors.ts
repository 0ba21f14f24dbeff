/**
 * The caller gave `aggregateWindow` or `HorizonTracker` inputs it cannot aggregate: an end not
 * after the start, an invalid date, a sample of another GPU, a sample without a valid GPU index
 * or time. A bug in the caller, never a hardware condition.
 */
export class WindowAggregationError extends Error {
  override readonly name = 'WindowAggregationError';
}

/**
 * An option of the window room (`HorizonTracker`) is out of its documented range. The message
 * names the option, the expected range and the value given, e.g.
 * ``Expected `horizonS` to be a number in 1..3600, got `-5` (number)``.
 */
export class WindowOptionsError extends Error {
  override readonly name = 'WindowOptionsError';
  /** The option that was refused, e.g. `horizonS`. */
  readonly option: string;
  /** The value it was given. */
  readonly value: unknown;

  constructor(option: string, expected: string, value: unknown) {
    super(`Expected \`${option}\` to be ${expected}, got \`${String(value)}\` (${typeof value})`);
    this.option = option;
    this.value = value;
  }
}
