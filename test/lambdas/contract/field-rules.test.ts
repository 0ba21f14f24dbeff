import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GPU_METRIC_NAMES, isInRange, METRIC_RANGES } from '../../../lambdas/contract/field-rules';
import { GPU_METRIC_RULES, GpuMetricsSchema } from '../../../lambdas/contract/schema';

describe('contract field rules', () => {
  it('lists every GPU metric in the order of the metrics rules', () => {
    // Prepare
    const schemaKeys = Object.keys(GPU_METRIC_RULES);

    // Act
    const names = [...GPU_METRIC_NAMES];

    // Assess
    expect(names).toEqual(schemaKeys);
  });

  it.each([
    ['ratio', 0, true],
    ['ratio', 1, true],
    ['ratio', 1.0001, false],
    ['ratio', -0.0001, false],
    ['count', 3, true],
    ['count', 3.5, false],
    ['count', -1, false],
    ['count', 2 ** 53, false],
    ['nonNegative', 1e15, true],
    ['nonNegative', Number.POSITIVE_INFINITY, false],
    ['celsius', -40, true],
    ['celsius', 151, false],
    ['watts', 5000, true],
    ['watts', 5000.5, false],
    ['mhz', Number.NaN, false],
  ] as const)('judges %s %d in range: %s', (kind, value, expected) => {
    // Prepare
    const range = METRIC_RANGES[kind];

    // Act
    const verdict = isInRange(range, value);

    // Assess
    expect(verdict).toBe(expected);
  });

  it.each(
    Object.entries({
      gpu_util: 'ratio',
      fb_used_bytes: 'count',
      pcie_tx_bytes_per_s: 'nonNegative',
      gpu_temp_c: 'celsius',
      power_w: 'watts',
      sm_clock_mhz: 'mhz',
    } as const),
  )('gives %s the verdicts of the metrics schema (%s)', (metric, kind) => {
    // Prepare
    const values = fc.oneof(
      fc.double(),
      fc.integer(),
      fc.constantFrom(-40, 0, 1, 150, 5000, 10_000, 2 ** 53),
    );

    // Act / Assess
    fc.assert(
      fc.property(values, (value) => {
        expect(isInRange(METRIC_RANGES[kind], value)).toBe(
          GpuMetricsSchema.safeParse({ [metric]: value }).success,
        );
      }),
    );
  });
});
