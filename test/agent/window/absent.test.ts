import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isAbsent, isFiniteNumber, remainder32 } from '../../../agent/window/absent';
import { checkColumnValue, FIELD_CHECK_CODE } from '../../../agent/window/sample-columns';
import {
  bitwiseOr,
  coefficientOfVariation,
  leastSquaresSlope,
  meanOf,
  shareMatching,
  steadySlope,
} from '../../../agent/window/statistics';

const TWO_POW_32 = 2 ** 32;
/** Values where the inlined forms could differ from the built-ins: zeros, limits, the 2^32 and 2^53 edges. */
const EDGES = [
  0,
  -0,
  1,
  -1,
  0.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
  TWO_POW_32 - 1,
  TWO_POW_32,
  TWO_POW_32 + 1,
  -TWO_POW_32,
  -TWO_POW_32 + 1,
  -TWO_POW_32 - 1,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 1,
  Number.MAX_SAFE_INTEGER + 2,
  -Number.MAX_SAFE_INTEGER,
  2 ** 53 + 0.5,
  4096.5,
];
const anyNumber = fc.oneof(fc.double(), fc.constantFrom(...EDGES), fc.integer(), fc.nat(2 ** 40));
/** A column as the statistics take it: values, `NaN` for absent, constant runs, every edge. */
const anyColumn = fc
  .array(fc.oneof(anyNumber, fc.constant(Number.NaN), fc.constant(0.8)), { maxLength: 60 })
  .map((values) => Float64Array.from(values));

// The statistics as they were written with the built-ins (the reference the inlined forms must equal).
function referenceMean(values: Float64Array): number | undefined {
  let mean = 0;
  let count = 0;
  for (const value of values) {
    if (Number.isNaN(value)) continue;
    count++;
    mean += (value - mean) / count;
  }
  return count === 0 ? undefined : mean;
}

function referenceCv(values: Float64Array): number | undefined {
  let count = 0;
  for (const value of values) if (!Number.isNaN(value)) count++;
  const mean = referenceMean(values);
  if (count < 2 || mean === undefined || mean === 0) return undefined;
  let squares = 0;
  for (const value of values) if (!Number.isNaN(value)) squares += (value - mean) * (value - mean);
  return Math.sqrt(squares / count) / Math.abs(mean);
}

function referenceOr(values: Float64Array): number | undefined {
  let high = 0;
  let low = 0;
  let seen = false;
  for (const value of values) {
    if (Number.isNaN(value)) continue;
    seen = true;
    high = (high | Math.floor(value / TWO_POW_32)) >>> 0;
    low = (low | (value % TWO_POW_32)) >>> 0;
  }
  return seen ? high * TWO_POW_32 + low : undefined;
}

function referenceSteadySlope(atMs: Float64Array, values: Float64Array): number | undefined {
  let first = Number.NaN;
  let last = Number.NaN;
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(values[i]!)) continue;
    if (Number.isNaN(first)) first = atMs[i]!;
    last = atMs[i]!;
  }
  if (Number.isNaN(first)) return undefined;
  const middle = first + (last - first) / 2;
  const early = leastSquaresSlope(atMs, values, first, middle);
  const late = leastSquaresSlope(atMs, values, middle, last);
  if (early === undefined || late === undefined) return leastSquaresSlope(atMs, values);
  if (early > 0 && late > 0) return Math.min(early, late);
  if (early < 0 && late < 0) return Math.max(early, late);
  return 0;
}

describe('the inlined number tests', () => {
  it('equal Number.isNaN, Number.isFinite and % 2^32 on every edge and any number', () => {
    // Prepare
    const same = (value: number): void => {
      // Act / Assess
      expect(isAbsent(value)).toBe(Number.isNaN(value));
      expect(isFiniteNumber(value)).toBe(Number.isFinite(value));
      expect(Object.is(remainder32(value), value % TWO_POW_32)).toBe(true);
    };
    EDGES.forEach(same);
    fc.assert(fc.property(anyNumber, same));
  });

  it('check counts exactly as Number.isSafeInteger does', () => {
    // Prepare
    const reference = (value: number, max: number): number =>
      Number.isFinite(value) && Number.isSafeInteger(value) && value >= 0 && value <= max
        ? value
        : Number.NaN;
    const same = (value: number): void => {
      // Act / Assess
      expect(Object.is(checkColumnValue(FIELD_CHECK_CODE.count, value), reference(value, Infinity))).toBe(
        true,
      );
      expect(Object.is(checkColumnValue(FIELD_CHECK_CODE.processCount, value), reference(value, 4096))).toBe(
        true,
      );
    };
    EDGES.forEach(same);
    fc.assert(fc.property(anyNumber, same));
  });
});

describe('the window statistics against their built-in forms', () => {
  it('give the same mean, coefficient of variation and bitwise OR, bit for bit', () => {
    fc.assert(
      fc.property(anyColumn, (values) => {
        // Act / Assess
        expect(Object.is(meanOf(values), referenceMean(values))).toBe(true);
        expect(Object.is(coefficientOfVariation(values), referenceCv(values))).toBe(true);
        expect(Object.is(bitwiseOr(values), referenceOr(values))).toBe(true);
        const odd = (low32: number): boolean => (low32 & 1) === 1;
        let count = 0;
        let hits = 0;
        for (const value of values)
          if (!Number.isNaN(value)) {
            count++;
            if (odd(value % TWO_POW_32)) hits++;
          }
        expect(Object.is(shareMatching(values, odd), count === 0 ? undefined : hits / count)).toBe(true);
      }),
    );
  });

  it('give the same steady slope over any times, ascending or not, as slopes over every row', () => {
    // Prepare: times in steps of 0–2 s by 0.5 s (repeats, and rows right at the span's middle), values
    // mostly small integers, sometimes reversed or with a NaN time.
    const value = fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: 100 }) },
      { weight: 1, arbitrary: anyNumber },
      { weight: 1, arbitrary: fc.constant(Number.NaN) },
    );
    const series = fc
      .array(fc.tuple(fc.integer({ min: 0, max: 4 }), value), { maxLength: 40 })
      .chain((rows) =>
        fc.tuple(
          fc.constant(rows),
          fc.constantFrom('ascending', 'reversed', 'nan-time'),
          fc.nat(Math.max(0, rows.length - 1)),
        ),
      )
      .map(([rows, order, at]) => {
        let t = 1_790_000_000_000;
        const times = rows.map(([step]) => (t += step * 500));
        if (order === 'reversed') times.reverse();
        if (order === 'nan-time' && rows.length > 0) times[at] = Number.NaN;
        return { atMs: Float64Array.from(times), values: Float64Array.from(rows, ([, v]) => v) };
      });
    fc.assert(
      fc.property(series, ({ atMs, values }) => {
        // Act / Assess
        expect(Object.is(steadySlope(atMs, values), referenceSteadySlope(atMs, values))).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });
});
