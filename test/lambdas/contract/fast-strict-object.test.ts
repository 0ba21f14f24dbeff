import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { ContractValidationError, parseBatch } from '../../../lambdas/contract';
import { fastStrictObject } from '../../../lambdas/contract/fast-strict-object';
import { GPU_METRIC_NAMES } from '../../../lambdas/contract/field-rules';
import { GPU_METRIC_RULES, GpuMetricsSchema } from '../../../lambdas/contract/schema';
import { refuseCodeGeneration } from '../../setup/refuse-code-generation';
import { NOW, validBatch } from './batches';

/** The metrics schema as zod alone builds it from the same rules: the schema of record. */
const FIELD_BY_FIELD = z.strictObject(GPU_METRIC_RULES).superRefine((m, ctx) => {
  if (m.fb_used_bytes !== undefined && m.fb_total_bytes !== undefined && m.fb_used_bytes > m.fb_total_bytes)
    ctx.addIssue({
      code: 'custom',
      path: ['fb_used_bytes'],
      message: 'expected fb_used_bytes <= fb_total_bytes',
    });
  if (m.min_power_w !== undefined && m.max_power_w !== undefined && m.min_power_w > m.max_power_w)
    ctx.addIssue({ code: 'custom', path: ['min_power_w'], message: 'expected min_power_w <= max_power_w' });
});

/** Values near and past every metric range's edges, wrong types and non-finite numbers. */
const metricValue = fc.oneof(
  fc.constantFrom(0, 1, 0.5, -1, 1.0001, -40, -41, 150, 151, 5000, 5001, 10_000, 10_001, 64, 65),
  fc.constantFrom(2 ** 53, -(2 ** 53), 1e12, 1e13, -1e13, 3.5, Number.NaN, Number.POSITIVE_INFINITY),
  fc.double(),
  fc.integer(),
  fc.constantFrom('1', true, false, null, [], {}),
);

/** Metrics objects with any subset of the fields, sometimes with an unknown field. */
const metricsObject = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...GPU_METRIC_NAMES), metricValue, { maxKeys: 12 }),
    fc.option(fc.constantFrom('gpu_utilization', 'sm', '__extra'), { nil: undefined }),
  )
  .map(([metrics, unknown]) => (unknown === undefined ? metrics : { ...metrics, [unknown]: 1 }));

/** The metrics that are booleans (`remapped_rows_pending`, …). */
const BOOLEAN_METRICS = new Set<string>(
  GPU_METRIC_NAMES.filter((key) => GPU_METRIC_RULES[key].unwrap() instanceof z.ZodBoolean),
);

/** Metrics objects valid field by field (0 and 1 fit every number rule), now and then one value off. */
const mostlyValid = fc
  .tuple(
    fc.dictionary(fc.constantFrom(...GPU_METRIC_NAMES), fc.constantFrom(0, 1), { minKeys: 20, maxKeys: 46 }),
    fc.option(fc.tuple(fc.constantFrom(...GPU_METRIC_NAMES), metricValue), { nil: undefined, freq: 3 }),
  )
  .map(([metrics, off]) => {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(metrics))
      out[key] = BOOLEAN_METRICS.has(key) ? value === 1 : value;
    if (off !== undefined) out[off[0]] = off[1];
    return out;
  });

/** Any metrics value: fuzzed objects, mostly valid ones, and values that are not objects. */
const anyMetrics = fc.oneof(metricsObject, mostlyValid, fc.constantFrom(null, 'x', [], 3, undefined));

/** Asserts that `schema` decides `metrics` as the schema of record does: verdict, issues, value. */
function assertSameAsZod(schema: typeof GpuMetricsSchema, metrics: unknown): void {
  const fast = schema.safeParse(metrics);
  const reference = FIELD_BY_FIELD.safeParse(metrics);
  expect(fast.success).toBe(reference.success);
  expect(fast.error?.issues).toEqual(reference.error?.issues);
  if (fast.success) expect(fast.data).toEqual(reference.data);
}

describe('fastStrictObject', () => {
  it('gives the GPU metrics the verdicts and issues of the fields checked one by one', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(anyMetrics, (metrics) => assertSameAsZod(GpuMetricsSchema, metrics)),
      { numRuns: 3000 },
    );
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    ['a ratio above 1', { gpu_util: 1.5 }, ['gpu_util: Too big: expected number to be <=1']],
    [
      'a fractional count',
      { ecc_dbe_volatile: 1.5 },
      ['ecc_dbe_volatile: Invalid input: expected int, received number'],
    ],
    [
      'a count past the safe integers',
      { pcie_replay_count: 2 ** 53 },
      ['pcie_replay_count: Too big: expected int to be <=9007199254740991'],
    ],
    [
      'range issues in field order, around a type issue, before an unknown field',
      { power_w: 6000, gpu_util: 2, mem_copy_util: 'x', extra: 1 },
      [
        'gpu_util: Too big: expected number to be <=1',
        'mem_copy_util: Invalid input: expected number, received string',
        'power_w: Too big: expected number to be <=5000',
        ': Unrecognized key: "extra"',
      ],
    ],
    [
      'a range issue and a cross-field rule, both',
      { gpu_temp_c: -50, fb_used_bytes: 10, fb_total_bytes: 5 },
      [
        'gpu_temp_c: Too small: expected number to be >=-40',
        'fb_used_bytes: expected fb_used_bytes <= fb_total_bytes',
      ],
    ],
    [
      'no cross-field rule after an aborting issue',
      { compute_processes: 0.5, min_power_w: 10, max_power_w: 5 },
      ['compute_processes: Invalid input: expected int, received number'],
    ],
  ])('reports %s as zod field by field does', (_name, metrics, expected) => {
    // Act
    const fast = GpuMetricsSchema.safeParse(metrics);
    const reference = FIELD_BY_FIELD.safeParse(metrics);

    // Assess
    const lines = fast.error?.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    expect(lines).toEqual(expected);
    expect(fast.error?.issues).toEqual(reference.error?.issues);
  });

  it('names the first bad metric of a batch, as before', () => {
    // Prepare
    const batch = structuredClone(validBatch()) as { windows: { metrics: Record<string, unknown> }[] };
    const metrics = batch.windows[1]?.metrics ?? {};
    metrics.sm_clock_mhz = 20_000;
    metrics.gpu_util = 97;

    // Act
    const refused = (() => {
      try {
        parseBatch(batch, NOW);
      } catch (err) {
        return err;
      }
      return undefined;
    })();

    // Assess
    expect(refused).toBeInstanceOf(ContractValidationError);
    expect((refused as Error).message).toBe(
      'windows[1].metrics.gpu_util: Too big: expected number to be <=1',
    );
  });

  it.each<[string, z.core.$ZodLooseShape, RegExp]>([
    [
      'a multipleOf check',
      { gpu_util: z.number().multipleOf(0.5).optional() },
      /gpu_util has a multiple_of check/,
    ],
    ['an exclusive bound', { gpu_util: z.number().gt(0).optional() }, /gpu_util has a greater_than check/],
    ['a 32-bit integer', { seq: z.int32().optional() }, /seq has a number_format check/],
    ['a string field', { name: z.string().optional() }, /name is not an optional number or boolean/],
    ['a required number', { seq: z.number() }, /seq is not an optional number or boolean/],
  ])('refuses at load %s, which the loop does not know', (_name, shape, message) => {
    // Act / Assess
    expect(() => fastStrictObject(shape)).toThrow(message);
  });

  it.each<[string, unknown]>([
    ['an own __proto__ key', JSON.parse('{"gpu_util": 0.5, "__proto__": 1}')],
    ['an object of another class', new Date(0)],
    ['an object without a prototype', Object.assign(Object.create(null), { gpu_util: 0.5 })],
    ['a value that is present but undefined', { gpu_util: undefined, power_w: 100 }],
  ])('decides %s as zod does', (_name, metrics) => {
    // Act
    const fast = GpuMetricsSchema.safeParse(metrics);
    const reference = FIELD_BY_FIELD.safeParse(metrics);

    // Assess
    expect(fast.success).toBe(reference.success);
    expect(fast.error?.issues).toEqual(reference.error?.issues);
  });

  describe('where the runtime refuses code generation (--disallow-code-generation-from-strings)', () => {
    afterEach(() => {
      vi.unstubAllGlobals();
      vi.resetModules();
      z.config({ jitless: false });
    });

    it('decides as zod does with the plain loop', async () => {
      // Prepare
      const codeGeneration = refuseCodeGeneration();
      z.config({ jitless: true }); // zod itself, as it finds out at its first parse under the flag
      vi.resetModules();

      // Act
      const fresh = await import('../../../lambdas/contract/schema');

      // Assess
      expect(codeGeneration.refused).toBeGreaterThan(0);
      fc.assert(
        fc.property(anyMetrics, (metrics) => assertSameAsZod(fresh.GpuMetricsSchema, metrics)),
        { numRuns: 500 },
      );
    });
  });
});
