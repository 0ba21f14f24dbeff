import { isAbsent, remainder32 } from './absent';

/**
 * The window statistics, one implementation each, over `Float64Array` columns in which `NaN`
 * means "absent in this sample" (see `SampleColumns`). Every function skips absent values and
 * returns `undefined` when it has too few values to say anything: a statistic of nothing is
 * absent, never 0. Times are ms since the Unix epoch, ascending; rates come out per second.
 */

/**
 * Arithmetic mean of the present values, as a running mean (mean += (value − mean) / count,
 * Welford), which keeps a constant series exactly at its value (a plain sum of ten 0.8 gives
 * 0.7999…).
 *
 * @returns the mean, or `undefined` when no value is present
 */
export function meanOf(values: Float64Array): number | undefined {
  let mean = 0;
  let count = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (isAbsent(value)) continue;
    count++;
    // A step of exactly 0 leaves the mean as it is (the mean is never −0): skipping the division
    // changes nothing, and keeps a constant series' long columns cheap.
    const step = value - mean;
    if (step !== 0) mean += step / count;
  }
  lastMeanCount = count;
  return count === 0 ? undefined : mean;
}

/**
 * The number of present values the last {@link meanOf} call counted, so that a caller needing both
 * (the coefficient of variation) reads the column once instead of twice. Read it right after the
 * call: the next call overwrites it.
 */
let lastMeanCount = 0;

/** Smallest present value, or `undefined` when none is present. */
export function minOf(values: Float64Array): number | undefined {
  let min: number | undefined;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (!isAbsent(value) && (min === undefined || value < min)) min = value;
  }
  return min;
}

/** Largest present value, or `undefined` when none is present. */
export function maxOf(values: Float64Array): number | undefined {
  let max: number | undefined;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (!isAbsent(value) && (max === undefined || value > max)) max = value;
  }
  return max;
}

/** Last present value (the newest reading of a counter or a setting), or `undefined` when none is present. */
export function lastOf(values: Float64Array): number | undefined {
  for (let i = values.length - 1; i >= 0; i--) if (!isAbsent(values[i]!)) return values[i]!;
  return undefined;
}

/**
 * Coefficient of variation: population standard deviation / mean, computed in two passes
 * (mean first, then the mean squared deviation from it), ≥ 0.
 *
 * @returns the CV, or `undefined` with fewer than 2 present values or a mean of 0
 */
export function coefficientOfVariation(values: Float64Array): number | undefined {
  const mean = meanOf(values);
  const count = lastMeanCount;
  if (count < 2 || mean === undefined || mean === 0) return undefined;
  let squares = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (!isAbsent(value)) squares += (value - mean) * (value - mean);
  }
  return Math.sqrt(squares / count) / Math.abs(mean);
}

/**
 * OR of flags stored as 1/0.
 *
 * @returns `true` when any present value is 1, `false` when all present are 0, `undefined` when none is present
 */
export function anyFlag(values: Float64Array): boolean | undefined {
  let seen = false;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (value === 1) return true;
    if (value === 0) seen = true;
  }
  return seen ? false : undefined;
}

const TWO_POW_32 = 2 ** 32;

/**
 * Bitwise OR of the present bitmasks, exact up to 2^53 (JavaScript's `|` works on 32 bits, so the
 * high and low 32-bit halves are ORed apart).
 *
 * @returns the OR, or `undefined` when none is present
 */
export function bitwiseOr(values: Float64Array): number | undefined {
  let high = 0;
  let low = 0;
  let seen = false;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (isAbsent(value)) continue;
    seen = true;
    if (value >= 0 && value < TWO_POW_32) {
      low = (low | value) >>> 0; // the high half is 0
      continue;
    }
    high = (high | Math.floor(value / TWO_POW_32)) >>> 0;
    low = (low | remainder32(value)) >>> 0;
  }
  return seen ? high * TWO_POW_32 + low : undefined;
}

/**
 * Share of the present bitmasks whose low 32 bits pass `test`: count passing / count present, 0..1.
 *
 * @returns the share, or `undefined` when none is present
 */
export function shareMatching(values: Float64Array, test: (low32: number) => boolean): number | undefined {
  let count = 0;
  let hits = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (isAbsent(value)) continue;
    count++;
    if (test(remainder32(value))) hits++;
  }
  return count === 0 ? undefined : hits / count;
}

/**
 * Delta of a cumulative counter that must not go backwards (the energy counter: a decrease
 * means a driver reload, and the window's energy is then unknown): last − first present value.
 *
 * @returns `{ delta, spanS }` (counter units; seconds between the first and last present
 *   samples, may be 0), or `undefined` with fewer than 2 present values or any decrease
 */
export function monotonicDelta(
  atMs: Float64Array,
  values: Float64Array,
): { readonly delta: number; readonly spanS: number } | undefined {
  let first = -1;
  let last = -1;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (isAbsent(value)) continue;
    if (last >= 0 && value < values[last]!) return undefined;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0 || first === last) return undefined;
  return { delta: values[last]! - values[first]!, spanS: (atMs[last]! - atMs[first]!) / 1000 };
}

/**
 * Mean rate of a cumulative counter that may wrap or reset (PCIe and NVLink byte counters):
 * the sum of the non-negative steps between consecutive present values, / (t_last − t_first)
 * of the first and last present samples. A decrease (wrap, driver reload) adds nothing, so the
 * rate never goes negative and a reset costs at most the one step it hides.
 *
 * @returns units per second, or `undefined` with fewer than 2 present values or a zero span
 */
export function counterRate(atMs: Float64Array, values: Float64Array): number | undefined {
  let first = -1;
  let previous = -1;
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (isAbsent(value)) continue;
    if (previous >= 0 && value >= values[previous]!) sum += value - values[previous]!;
    if (first < 0) first = i;
    previous = i;
  }
  if (first < 0 || previous === first) return undefined;
  const spanS = (atMs[previous]! - atMs[first]!) / 1000;
  return spanS > 0 ? sum / spanS : undefined;
}

/**
 * Highest step rate of a cumulative counter: max over consecutive present values of
 * (value − previous) / (Δt s), over steps with Δt > 0 that do not go backwards.
 *
 * @returns units per second, or `undefined` when no such step exists
 */
export function maxStepRate(atMs: Float64Array, values: Float64Array): number | undefined {
  let previous = -1;
  let max: number | undefined;
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (isAbsent(value)) continue;
    if (previous >= 0) {
      const step = value - values[previous]!;
      const spanS = (atMs[i]! - atMs[previous]!) / 1000;
      if (step >= 0 && spanS > 0 && (max === undefined || step / spanS > max)) max = step / spanS;
    }
    previous = i;
  }
  return max;
}

/**
 * Least-squares slope of the present values against time, per second: Σ(t − t̄)(y − ȳ) / Σ(t − t̄)²,
 * with t in seconds since the first present sample and the means taken first (two passes), so
 * a perfectly linear series gives its slope exactly for moderate integers.
 *
 * @param fromMs - only samples at or after this time count (default: all)
 * @param toMs - only samples at or before this time count (default: all)
 * @returns units per second, or `undefined` with fewer than 3 present values or all at one time
 */
export function leastSquaresSlope(
  atMs: Float64Array,
  values: Float64Array,
  fromMs = Number.NEGATIVE_INFINITY,
  toMs = Number.POSITIVE_INFINITY,
): number | undefined {
  return slopeOfRows(atMs, values, fromMs, toMs, 0, values.length);
}

/**
 * {@link leastSquaresSlope} over rows `begin` (inclusive) to `end` (exclusive) only: the same sums
 * in the same order whenever every row with a time in [fromMs, toMs] lies in that range (times
 * ascending), so the same result.
 */
function slopeOfRows(
  atMs: Float64Array,
  values: Float64Array,
  fromMs: number,
  toMs: number,
  begin: number,
  end: number,
): number | undefined {
  let count = 0;
  let t0 = Number.NaN;
  let sumT = 0;
  let sumY = 0;
  for (let i = begin; i < end; i++) {
    const value = values[i]!;
    const at = atMs[i]!;
    if (isAbsent(value) || at < fromMs || at > toMs) continue;
    if (count === 0) t0 = at;
    count++;
    sumT += (at - t0) / 1000;
    sumY += value;
  }
  if (count < 3) return undefined;
  const meanT = sumT / count;
  const meanY = sumY / count;
  let covariance = 0;
  let variance = 0;
  for (let i = begin; i < end; i++) {
    const value = values[i]!;
    const at = atMs[i]!;
    if (isAbsent(value) || at < fromMs || at > toMs) continue;
    const dt = (at - t0) / 1000 - meanT;
    covariance += dt * (value - meanY);
    variance += dt * dt;
  }
  return variance > 0 ? covariance / variance : undefined;
}

/**
 * The steady trend of a series, per second: the least-squares slopes ({@link leastSquaresSlope}) of
 * the two halves of its time span (first to last present sample, split at the middle), and of
 * those the one nearer zero when both have the same sign; 0 when they disagree (a step, or growth
 * then release, is no trend). A leak grows in both halves; a one-off allocation (a step) is flat in
 * one of them, and memory allocated then freed rises then falls, where one slope over the whole
 * span reads growth (the H200 capture: 80 MB/s of "growth" over a horizon ending at 0 bytes used).
 * With too few samples for two halves (fewer than 3 in either) the whole span's slope.
 *
 * @returns units per second, or `undefined` with fewer than 3 present values or all at one time
 */
export function steadySlope(atMs: Float64Array, values: Float64Array): number | undefined {
  let first = Number.NaN;
  let last = Number.NaN;
  let ascending = true;
  for (let i = 0; i < values.length; i++) {
    if (i > 0 && !(atMs[i]! >= atMs[i - 1]!)) ascending = false; // a NaN time too: every row is read
    if (isAbsent(values[i]!)) continue;
    if (isAbsent(first)) first = atMs[i]!;
    last = atMs[i]!;
  }
  if (isAbsent(first)) return undefined;
  const middle = first + (last - first) / 2;
  // With times ascending each half's rows are one run: each slope reads its half, not every row.
  const length = values.length;
  const earlyEnd = ascending ? firstRowAfter(atMs, middle, length) : length;
  const lateBegin = ascending ? firstRowFrom(atMs, middle, length) : 0;
  const early = slopeOfRows(atMs, values, first, middle, 0, earlyEnd);
  const late = slopeOfRows(atMs, values, middle, last, lateBegin, length);
  if (early === undefined || late === undefined) return leastSquaresSlope(atMs, values);
  if (early > 0 && late > 0) return Math.min(early, late);
  if (early < 0 && late < 0) return Math.max(early, late);
  return 0;
}

/** First row of ascending times `atMs` (of `length` rows) later than `ms` (`length` when none): binary search. */
function firstRowAfter(atMs: Float64Array, ms: number, length: number): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (atMs[mid]! <= ms) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** First row of ascending times `atMs` (of `length` rows) at or after `ms` (`length` when none): binary search. */
function firstRowFrom(atMs: Float64Array, ms: number, length: number): number {
  let low = 0;
  let high = length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (atMs[mid]! < ms) low = mid + 1;
    else high = mid;
  }
  return low;
}
