import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { BatchSchema } from '../../../lambdas/contract/schema';
import { zodAccepts } from '../../../lambdas/contract/zod-accepts';
import { refuseCodeGeneration } from '../../setup/refuse-code-generation';
import { ago, validBatch } from './batches';

// biome-ignore lint/suspicious/noExplicitAny: the tests mutate arbitrary JSON
type Loose = any;

/** A valid batch that has every kind of node of the contract: processes, pods, EFA, tags, events. */
function richBatch(): Loose {
  const batch: Loose = structuredClone(validBatch());
  batch.host.ami_id = 'ami-0123456789abcdef0';
  batch.agent.stats = { samples: 60, spooled: 0, dropped: 0, nvml_errors: 0 };
  batch.windows[0].processes = [
    { pid: 4001, fb_used_bytes: 402_653_184, k8s_pod_uid: '8a7f3c52-6a0e-4b8e-9f3d-2f6c1e0b9a11' },
    { pid: 4000, slurm_job_id: 1234 },
    { pid: 17, systemd_unit: 'train.service' },
  ];
  batch.windows[1].k8s = { namespace: 'ml', pod: 'train-0', container: 'main' };
  batch.windows[2].metrics = {
    ...batch.windows[2].metrics,
    sm_active: 0.5,
    min_power_w: 60,
    max_power_w: 70,
  };
  batch.windows.push({
    kind: 'horizon',
    start: ago(600),
    end: ago(0),
    gpu: { index: 0 },
    metrics: { sm_active: 0.4, remapped_rows_pending: false, compute_processes: 2 },
  });
  batch.windows.push({
    ...structuredClone(batch.windows[3]),
    gpu_instance_id: 1,
    gpu_instance_profile: '1g.10gb',
  });
  batch.efa = [
    { start: ago(10), end: ago(0), device: 'rdmap16s27', port: 1, deltas: { rx_bytes: 5, tx_bytes: 7 } },
  ];
  batch.events.push({ at: ago(3), kind: 'gpu_lost', source: 'nvml', gpu_index: 2 });
  return batch;
}

/** Every path to a value of `value` (object keys and array indexes). */
function pathsOf(value: Loose, at: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [at];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [at, ...keys.flatMap((key) => pathsOf(value[key], [...at, key]))];
}

const BASE = richBatch();
const PATHS = pathsOf(BASE).filter((path) => path.length > 0);
/** Every value of the base batch, to put where another belongs (a time for a uuid, a pod for a unit…). */
const BASE_VALUES = PATHS.map((path) => path.reduce((v: Loose, key) => v[key], BASE));

/** Values JSON can carry (and NaN, ±Infinity, which both refuse); absence is the `delete` change. */
const replacement = fc.oneof(
  fc.constantFrom(...BASE_VALUES),
  fc.constantFrom(0, -1, 1, 0.5, 1.5, 63, 64, 65, 255, 256, 999, 1000, 2 ** 32, 2 ** 53, -(2 ** 53), 1e13),
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, null, true, false, [], {}),
  fc.constantFrom(
    '',
    'x',
    'GPU-',
    'MIG-abc',
    'i-0abc',
    'a'.repeat(300),
    '2026-01-01T00:00:00Z',
    '1g.10gb',
    '9g.80gb',
  ),
  fc.string({ maxLength: 12 }),
  fc.double(),
  fc.integer(),
);

/** A valid batch with one change: a value replaced, a key deleted, or an unknown key added. */
const mutated = fc
  .tuple(fc.constantFrom(...PATHS), replacement, fc.constantFrom('set', 'delete', 'add'))
  .map(([path, value, op]) => {
    const batch = structuredClone(BASE);
    const parent = path.slice(0, -1).reduce((v: Loose, key) => v[key], batch);
    const key = path[path.length - 1] as string | number;
    if (op === 'delete' && !Array.isArray(parent)) delete parent[key];
    else if (
      op === 'add' &&
      typeof parent[key] === 'object' &&
      parent[key] !== null &&
      !Array.isArray(parent[key])
    )
      parent[key].unknown_field = value;
    else parent[key] = value;
    return batch;
  });

const accepts = zodAccepts(BatchSchema);

/** Asserts that `test` says yes exactly where zod accepts, and that zod then returns the value as it is. */
function assertAsZod(test: ((value: unknown) => boolean) | undefined, batch: unknown): void {
  const parsed = BatchSchema.safeParse(batch);
  expect(test?.(batch)).toBe(parsed.success);
  if (parsed.success) expect(parsed.data).toEqual(batch);
}

describe('zodAccepts', () => {
  it('reads every node of the wire contract and accepts a valid batch', () => {
    // Act / Assess
    expect(accepts).toBeDefined();
    expect(accepts?.(BASE)).toBe(true);
    expect(accepts?.(validBatch())).toBe(true);
  });

  it('says yes exactly where zod accepts a batch, on thousands of one-change batches', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(mutated, (batch) => assertAsZod(accepts, batch)),
      { numRuns: 4000 },
    );
  });

  it.each<[string, unknown]>([
    ['not an object', 'batch'],
    ['an array', [BASE]],
    ['an object of another class', Object.assign(new (class Batch {})(), structuredClone(BASE))],
    ['an own __proto__ key', JSON.parse(JSON.stringify(BASE).replace('{', '{"__proto__":{},'))],
    [
      'a tag under __proto__',
      JSON.parse(JSON.stringify(BASE).replace('"tags":{', '"tags":{"__proto__":"x",')),
    ],
    ['a field present as undefined (never in JSON)', { ...structuredClone(BASE), efa: undefined }],
  ])('leaves %s to zod', (_name, batch) => {
    // Act / Assess
    expect(accepts?.(batch)).toBe(false);
  });

  it.each<[string, z.ZodType]>([
    ['a union', z.strictObject({ a: z.union([z.string(), z.number()]) })],
    ['a stripping object', z.object({ a: z.string() })],
    ['a transform', z.strictObject({ a: z.string().transform((s) => s.length) })],
    ['a default', z.strictObject({ a: z.number().default(1) })],
    ['a coercion', z.strictObject({ a: z.coerce.number() })],
  ])('gives no test for a schema with %s', (_name, schema) => {
    // Act / Assess
    expect(zodAccepts(schema)).toBeUndefined();
  });

  it.each<[string, z.ZodType, unknown[]]>([
    ['exclusive bounds', z.number().gt(0).lt(1), [0, 0.5, 1]],
    ['lengths', z.string().min(2).max(3), ['a', 'ab', 'abc', 'abcd']],
    ['array sizes', z.array(z.int()).max(2), [[], [1, 2], [1, 2, 3], [1.5]]],
    ['a refinement', z.string().refine((s) => s.startsWith('x')), ['xa', 'ax']],
    ['a record', z.record(z.string().regex(/^[a-z]+$/), z.int()), [{ a: 1 }, { A: 1 }, { a: 1.5 }, []]],
  ])('decides %s as zod does', (_name, schema, values) => {
    // Prepare
    const test = zodAccepts(schema);

    // Act / Assess
    for (const value of values) expect(test?.(value)).toBe(schema.safeParse(value).success);
  });

  describe('where the runtime refuses code generation (--disallow-code-generation-from-strings)', () => {
    afterEach(() => {
      vi.unstubAllGlobals();
      vi.resetModules();
      z.config({ jitless: false });
    });

    it('decides as zod does with the plain loops', async () => {
      // Prepare
      const codeGeneration = refuseCodeGeneration();
      z.config({ jitless: true }); // zod itself, as it finds out at its first parse under the flag
      vi.resetModules();

      // Act
      const fresh = await import('../../../lambdas/contract/zod-accepts');
      const test = fresh.zodAccepts(BatchSchema);

      // Assess
      expect(codeGeneration.refused).toBeGreaterThan(0);
      expect(test?.(BASE)).toBe(true);
      fc.assert(
        fc.property(mutated, (batch) => assertAsZod(test, batch)),
        { numRuns: 500 },
      );
    });
  });
});
