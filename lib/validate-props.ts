import { Token } from 'aws-cdk-lib';
import { PropsValidationError } from './props-validation-error';

/**
 * Prop validators shared by the constructs. Each returns the value when it is valid and throws a
 * {@link PropsValidationError} naming the prop, the expectation and the value otherwise. Unresolved
 * tokens (CloudFormation parameters, references) are accepted as they are: they are only known at
 * deploy time.
 */

/**
 * @param prop - prop name used in the message
 * @param value - the value to check
 * @param min - smallest allowed integer, inclusive
 * @param max - largest allowed integer, inclusive
 * @returns `value`
 * @throws {PropsValidationError} when `value` is not an integer in `min..max`
 */
export function validateIntegerInRange(prop: string, value: number, min: number, max: number): number {
  if (Token.isUnresolved(value)) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new PropsValidationError(prop, `an integer in ${min}..${max}`, value);
  }
  return value;
}

/**
 * @param prop - prop name used in the message
 * @param value - the value to check
 * @returns `value`
 * @throws {PropsValidationError} when `value` is not a finite number > 0
 */
export function validatePositiveNumber(prop: string, value: number): number {
  if (Token.isUnresolved(value)) return value;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new PropsValidationError(prop, 'a finite number > 0', value);
  }
  return value;
}

/**
 * @param prop - prop name used in the message
 * @param value - the value to check
 * @param allowed - the allowed values
 * @returns `value`, narrowed to the allowed union
 * @throws {PropsValidationError} when `value` is not one of `allowed`
 */
export function validateOneOf<T extends string>(prop: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) {
    throw new PropsValidationError(prop, `one of ${allowed.map((a) => `\`${a}\``).join(', ')}`, value);
  }
  return value as T;
}

/**
 * @param prop - prop name used in the message
 * @param value - the value to check
 * @param pattern - the pattern the whole value must match
 * @param expected - words for the message, e.g. `an organization id like o-a1b2c3d4e5`
 * @returns `value`
 * @throws {PropsValidationError} when `value` is not a string matching `pattern`
 */
export function validatePattern(prop: string, value: string, pattern: RegExp, expected: string): string {
  if (Token.isUnresolved(value)) return value;
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new PropsValidationError(prop, expected, value);
  }
  return value;
}
