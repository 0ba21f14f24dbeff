import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  anyFlag,
  bitwiseOr,
  coefficientOfVariation,
  counterRate,
  lastOf,
  leastSquaresSlope,
  maxOf,
  maxStepRate,
  meanOf,
  minOf,
  monotonicDelta,
  shareMatching,
  steadySlope,
} from '../../../agent/window/statistics';
import { parseBatch } from '../../../lambdas/contract';
import { listCaptures, readCapture } from '../../setup/read-captured';

const _ = Number.NaN;
const f = (...values: number[]) => Float64Array.from(values);
/** Times, in seconds, as the ms since the epoch the statistics take. */
const seconds = (...values: number[]) => Float64Array.from(values, (s) => 1_790_000_000_000 + s * 1000);

describe('window statistics', () => {
  it.each([
    { case: 'values', values: f(0.2, 0.6), want: 0.4 },
    { case: 'a constant series, exactly', values: f(...Array<number>(10).fill(0.8)), want: 0.8 },
    { case: 'absent values skipped', values: f(_, 10, _, 20), want: 15 },
    { case: 'nothing present', values: f(_, _), want: undefined },
    { case: 'no values', values: f(), want: undefined },
  ])('meanOf gives the mean of $case', ({ values, want }) => {
    // Prepare / Act / Assess
    expect(meanOf(values)).toBe(want);
  });

  it.each([
    { values: f(3, _, 1, 2), min: 1, max: 3, last: 2 },
    { values: f(5, _), min: 5, max: 5, last: 5 },
    { values: f(_), min: undefined, max: undefined, last: undefined },
  ])('minOf, maxOf, lastOf of $values give $min, $max, $last', ({ values, min, max, last }) => {
    // Prepare / Act / Assess
    expect([minOf(values), maxOf(values), lastOf(values)]).toEqual([min, max, last]);
  });

  it.each([
    { case: 'a steady series', values: f(0.5, 0.5, 0.5), want: 0 },
    { case: 'a sawtooth', values: f(0.2, 0.6), want: 0.5 },
    { case: 'absent values skipped', values: f(100, _, 300), want: 0.5 },
    { case: 'one value', values: f(0.3, _), want: undefined },
    { case: 'a zero mean', values: f(0, 0), want: undefined },
  ])('coefficientOfVariation gives $want for $case', ({ values, want }) => {
    // Prepare / Act
    const cv = coefficientOfVariation(values);
    // Assess
    if (want === undefined) expect(cv).toBeUndefined();
    else expect(cv).toBeCloseTo(want, 12);
  });

  it.each([
    { values: f(0, 1, 0), want: true },
    { values: f(0, _, 0), want: false },
    { values: f(_, _), want: undefined },
  ])('anyFlag of $values gives $want', ({ values, want }) => {
    // Prepare / Act / Assess
    expect(anyFlag(values)).toBe(want);
  });

  it.each([
    { case: 'low bits', values: f(0x1, 0x4, _, 0x20), want: 0x25 },
    { case: 'the same bit twice', values: f(0x40, 0x40), want: 0x40 },
    { case: 'bits above 32', values: f(2 ** 40, 1, 2 ** 32), want: 2 ** 40 + 2 ** 32 + 1 },
    { case: 'bit 31', values: f(2 ** 31, 0), want: 2 ** 31 },
    { case: 'nothing present', values: f(_), want: undefined },
  ])('bitwiseOr gives the OR of $case', ({ values, want }) => {
    // Prepare / Act / Assess
    expect(bitwiseOr(values)).toBe(want);
  });

  it.each([
    { case: '3 of 10', values: f(0x8, 0x20, 0x40, 1, 1, 4, 0, 0, 1, 0), want: 0.3 },
    { case: 'a mask bit among others', values: f(0x24, 0x1), want: 0.5 },
    { case: 'absent samples not counted', values: f(0x20, _, _, 0), want: 0.5 },
    { case: 'none present', values: f(_), want: undefined },
    { case: 'only the low 32 bits tested', values: f(2 ** 32 + 0x20, 2 ** 33), want: 0.5 },
  ])('shareMatching gives $want for $case', ({ values, want }) => {
    // Prepare / Act / Assess
    expect(shareMatching(values, (r) => (r & (0x8 | 0x20 | 0x40)) !== 0)).toBe(want);
  });

  it.each([
    {
      case: 'a growing counter',
      t: seconds(0, 1, 4),
      v: f(1e6, 1.2e6, 1.8e6),
      want: { delta: 8e5, spanS: 4 },
    },
    { case: 'equal times', t: seconds(0, 0), v: f(5, 5), want: { delta: 0, spanS: 0 } },
    { case: 'a counter going backwards', t: seconds(0, 1, 2), v: f(5e6, 10, 6e6), want: undefined },
    { case: 'one value', t: seconds(0, 1), v: f(_, 10), want: undefined },
  ])('monotonicDelta gives $want for $case', ({ t, v, want }) => {
    // Prepare / Act / Assess
    expect(monotonicDelta(t, v)).toEqual(want);
  });

  it.each([
    { case: 'a steady counter', t: seconds(0, 1, 2, 4), v: f(0, 1000, 3000, 7000), rate: 1750, max: 2000 },
    { case: 'a counter reset', t: seconds(0, 1, 2, 4), v: f(5000, 6000, 100, 2100), rate: 750, max: 1000 },
    { case: 'absent samples bridged', t: seconds(0, 1, 2), v: f(0, _, 4000), rate: 2000, max: 2000 },
    { case: 'a zero span', t: seconds(3, 3), v: f(0, 10), rate: undefined, max: undefined },
    { case: 'one value', t: seconds(0, 1), v: f(10, _), rate: undefined, max: undefined },
    { case: 'only a reset', t: seconds(0, 1), v: f(10, 5), rate: 0, max: undefined },
  ])('counterRate and maxStepRate give $rate and $max for $case', ({ t, v, rate, max }) => {
    // Prepare / Act / Assess
    expect([counterRate(t, v), maxStepRate(t, v)]).toEqual([rate, max]);
  });

  it.each([
    {
      case: 'a linear leak, exactly',
      t: seconds(0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
      v: f(...Array.from({ length: 10 }, (_, s) => 20e9 + s * 1_048_576)),
      want: 1_048_576,
    },
    { case: 'memory being freed', t: seconds(0, 2, 4), v: f(300, 200, 100), want: -50 },
    { case: 'a flat line', t: seconds(0, 1, 2), v: f(7, 7, 7), want: 0 },
    { case: 'two values', t: seconds(0, 1), v: f(1, 2), want: undefined },
    { case: 'three values at one time', t: seconds(1, 1, 1), v: f(1, 2, 3), want: undefined },
    { case: 'absent samples skipped', t: seconds(0, 1, 2, 3), v: f(0, _, 20, 30), want: 10 },
  ])('leastSquaresSlope gives $want for $case', ({ t, v, want }) => {
    // Prepare / Act / Assess
    expect(leastSquaresSlope(t, v)).toBe(want);
  });

  const MiB = 1_048_576;
  const ramp = (n: number, from: number, step: number) =>
    f(...Array.from({ length: n }, (_, i) => from + i * step));
  const everySecond = (n: number) => seconds(...Array.from({ length: n }, (_, i) => i));
  it.each([
    { case: 'a linear leak, exactly', t: everySecond(10), v: ramp(10, 20e9, MiB), want: MiB },
    {
      case: 'a leak that speeds up: the slower half',
      t: everySecond(12),
      v: f(0, 1, 2, 3, 4, 5, 7, 9, 11, 13, 15, 17),
      want: 1,
    },
    {
      case: 'memory freed steadily: the slower half',
      t: everySecond(8),
      v: f(80, 70, 60, 50, 46, 42, 38, 34),
      want: -4,
    },
    {
      // PyTorch allocating its working set at the start of a job, then flat: no leak.
      case: 'a one-off allocation early on',
      t: everySecond(15),
      v: f(0, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9, 60e9),
      want: 0,
    },
    {
      case: 'allocated, then freed',
      t: everySecond(9),
      v: f(0, 0, 9e9, 9e9, 40e9, 40e9, 9e9, 0, 0),
      want: 0,
    },
    { case: 'a flat line', t: everySecond(6), v: f(7, 7, 7, 7, 7, 7), want: 0 },
    {
      case: 'too few samples for two halves: the whole slope',
      t: seconds(0, 2, 4),
      v: f(300, 200, 100),
      want: -50,
    },
    { case: 'two values', t: seconds(0, 1), v: f(1, 2), want: undefined },
  ])('steadySlope gives $want for $case', ({ t, v, want }) => {
    // Prepare / Act / Assess
    expect(steadySlope(t, v)).toBe(want);
  });

  it.each(listCaptures())(
    'steadySlope reads no growth in the framebuffer of the real capture %s, where one slope over the run reads a leak',
    (name) => {
      // Prepare: fb_used_bytes at the end of each flush window the agent sent (10 s apart): allocated in
      // steps by the load phases, then freed to 0
      const windows = readCapture(name)
        .bodies.flatMap((b) => parseBatch(b.batch, new Date(b.receivedMs)).windows)
        .filter((w) => w.kind === 'flush' && w.metrics.fb_used_bytes !== undefined);
      const t = Float64Array.from(windows.map((w) => Date.parse(w.end)));
      const v = Float64Array.from(windows.map((w) => w.metrics.fb_used_bytes as number));
      expect(v[v.length - 1]).toBeLessThan(v.reduce((a, b) => Math.max(a, b), 0) / 10);
      // Act
      const whole = leastSquaresSlope(t, v);
      const steady = steadySlope(t, v);
      // Assess: the whole-span slope calls a run that ends with its memory freed a leak; the steady trend does not
      expect(whole).toBeGreaterThan(1e6);
      expect(steady).toBeLessThanOrEqual(0);
    },
  );

  it('meanOf lies between minOf and maxOf for any present values', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e12, max: 1e12, noNaN: true }), { minLength: 1 }), (values) => {
        const column = Float64Array.from(values);
        const mean = meanOf(column)!;
        const slack = 1e-9 * Math.max(1, Math.abs(mean));
        expect(mean).toBeGreaterThanOrEqual(minOf(column)! - slack);
        expect(mean).toBeLessThanOrEqual(maxOf(column)! + slack);
      }),
    );
  });

  it('counterRate is never negative and never above maxStepRate', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 5000 }), fc.nat(2 ** 40)), { minLength: 2 }),
        (steps) => {
          let t = 0;
          const times = Float64Array.from(steps, ([dt]) => (t += dt));
          const values = Float64Array.from(steps, ([, v]) => v);
          const rate = counterRate(times, values)!;
          expect(rate).toBeGreaterThanOrEqual(0);
          expect(rate).toBeLessThanOrEqual((maxStepRate(times, values) ?? 0) * (1 + 1e-12));
        },
      ),
    );
  });
});
