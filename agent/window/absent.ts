/**
 * Number tests for the agent's per-value loops (ring writes, window statistics), exact equivalents
 * of `Number.isNaN`, `Number.isFinite` and `value % 2^32` written so that V8's Maglev compiles them
 * inline. The agent runs without TurboFan (`--no-turbofan`, the unit's flags), and Maglev (Node.js
 * 24) calls those built-ins out of line: ≈ 7–10 ns a value against ≈ 1 ns for the forms here,
 * measured over 900-value columns (BENCHMARKS.md, 2026-11-28 "the agent's CPU per poll and window").
 * Small functions: Maglev inlines them where they are called.
 */

/**
 * Whether `value` is `NaN`, the columns' "absent": exactly `Number.isNaN(value)` for a number
 * (`NaN` is the only number not equal to itself).
 */
export function isAbsent(value: number): boolean {
  // biome-ignore lint/suspicious/noSelfCompare: the inlined form of Number.isNaN (see the file's TSDoc)
  return value !== value;
}

/**
 * Whether `value` is finite: exactly `Number.isFinite(value)` for a number (`x − x` is 0 for a
 * finite `x`, `NaN` for ±Infinity and `NaN`).
 */
export function isFiniteNumber(value: number): boolean {
  return value - value === 0;
}

const TWO_POW_32 = 2 ** 32;

/**
 * `value % 2^32`, exactly, without the floating-point remainder where it is not needed: a value in
 * (−2^32, 2^32) is its own remainder (JavaScript's `%` keeps the dividend's sign).
 */
export function remainder32(value: number): number {
  return value < TWO_POW_32 && value > -TWO_POW_32 ? value : value % TWO_POW_32;
}
