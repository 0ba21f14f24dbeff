/**
 * Thrown at synth time when a construct prop is out of range. The message says what was expected
 * and what came, e.g. ``Expected `memoryRetentionHours` to be an integer in 1..8766, got `0` (number)``.
 */
export class PropsValidationError extends Error {
  /** Name of the offending prop, e.g. `memoryRetentionHours` or `priceOverridesUsdPerHour.p5.48xlarge`. */
  readonly prop: string;
  /** The value that came. */
  readonly value: unknown;

  /**
   * @param prop - name of the offending prop
   * @param expected - what was expected, e.g. `an integer in 1..8766`
   * @param value - the value that came
   * @param options - `cause`: the error that showed the value is bad (a JSON parse error)
   */
  constructor(prop: string, expected: string, value: unknown, options?: ErrorOptions) {
    super(`Expected \`${prop}\` to be ${expected}, got ${describeValue(value)}`, options);
    this.name = 'PropsValidationError';
    this.prop = prop;
    this.value = value;
  }
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return `\`${JSON.stringify(value)}\` (string)`;
  if (typeof value === 'number') return `\`${String(value)}\` (number)`;
  if (value === undefined || value === null) return `\`${String(value)}\``;
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return `\`${text}\` (${Array.isArray(value) ? 'array' : typeof value})`;
}
