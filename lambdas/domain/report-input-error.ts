import { DomainError } from './errors';

/**
 * A finance report asked for something that cannot be reported: an unknown grouping, a period that
 * ends before it starts. `field` names the input, `value` is what came.
 */
export class ReportInputError extends DomainError {
  override readonly name = 'ReportInputError';
  /** The offending input, e.g. `by` or `period`. */
  readonly field: string;
  /** What came. */
  readonly value: unknown;

  /**
   * @param field - the offending input
   * @param value - what came
   * @param message - what was expected and what to do
   */
  constructor(field: string, value: unknown, message: string) {
    super(message);
    this.field = field;
    this.value = value;
  }
}
