import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GpuMetrics, GpuWindow } from '../../../lambdas/contract';
import { computeLedger, type InstancePrice, LedgerInputError, priceFor } from '../../../lambdas/domain';

const P5 = priceFor('p5.48xlarge', 'us-east-1');
const COST_10S = (55.04 / 8) * (10 / 3600);

function win(metrics: GpuMetrics, start = '2026-03-10T10:00:00Z', end = '2026-03-10T10:00:10Z'): GpuWindow {
  return { kind: 'flush', start, end, gpu: { index: 0 }, metrics };
}

describe('computeLedger', () => {
  it('prices a MIG slice at the GPU price share × its compute share, the slices of a GPU summing to the GPU', () => {
    // Prepare: an H100 split 3g + 3g + 1g (all 7 compute slices); an A30 slice is n of 4
    const slice = (id: number, profile: string, name = 'NVIDIA H100 80GB HBM3'): GpuWindow => ({
      ...win({ gpu_util: 0 }),
      gpu: { index: 0, name },
      gpu_instance_id: id,
      gpu_instance_profile: profile,
    });
    // Act
    const entries = [slice(1, '3g.40gb'), slice(2, '3g.40gb'), slice(9, '1g.10gb')].map((w) =>
      computeLedger(w, P5),
    );
    const a30 = computeLedger(slice(1, '1g.6gb', 'NVIDIA A30'), P5);
    // Assess
    expect(entries.map((e) => e.cost_usd / COST_10S)).toEqual(
      [3 / 7, 3 / 7, 1 / 7].map((x) => expect.closeTo(x, 12)),
    );
    expect(entries.reduce((sum, e) => sum + e.cost_usd, 0)).toBeCloseTo(COST_10S, 15);
    expect(entries[2]?.gpu_hours).toBeCloseTo(10 / 3600 / 7, 15);
    expect(entries[2]).toMatchObject({ waste_class: 'idle', idle_usd: entries[2]?.cost_usd });
    expect(a30.cost_usd).toBeCloseTo(COST_10S / 4, 15);
  });

  it('costs a 10 s p5.48xlarge GPU window at 55.04 / 8 × 10 / 3600 USD', () => {
    // Prepare / Act
    const entry = computeLedger(win({ sm_active: 0.5, compute_processes: 1 }), P5);
    // Assess
    expect(entry.window_s).toBe(10);
    expect(entry.gpu_hours).toBeCloseTo(10 / 3600, 15);
    expect(entry.cost_usd).toBeCloseTo(COST_10S, 15);
    expect(entry).toMatchObject({ price_usd_per_hour: 55.04, gpu_count: 8, price_source: P5.price_source });
  });

  it.each([
    ['idle', { sm_active: 0.005, compute_processes: 0 }, 'sm_active', true, { idle_usd: 1 }],
    ['held_idle', { sm_active: 0, compute_processes: 2 }, 'sm_active', true, { held_idle_usd: 1 }],
    ['idle', { sm_active: 0.001 }, 'sm_active', false, { idle_usd: 1 }],
    // Processes unknown (dcgm-exporter): the framebuffer decides (256 MiB and up is a context holding it).
    ['held_idle', { sm_active: 0, fb_used_bytes: 40 * 2 ** 30 }, 'sm_active', true, { held_idle_usd: 1 }],
    ['idle', { gpu_util: 0, fb_used_bytes: 4 * 2 ** 20 }, 'gpu_util', true, { idle_usd: 1 }],
    ['underused', { sm_active: 0.25, compute_processes: 1 }, 'sm_active', true, { underused_usd: 0.75 }],
    // Kernels run (GPU util 11 %, the H200 capture's tiny kernels) while SM activity reads 0: not idle.
    [
      'underused',
      { sm_active: 0.0004, gpu_util: 0.11, compute_processes: 1 },
      'sm_active',
      true,
      { underused_usd: 0.9996 },
    ],
    [
      'held_idle',
      { sm_active: 0, gpu_util: 0.04, compute_processes: 1 },
      'sm_active',
      true,
      { held_idle_usd: 1 },
    ],
    ['underused', { sm_active: 0.01, compute_processes: 1 }, 'sm_active', true, { underused_usd: 0.99 }],
    ['none', { sm_active: 0.995, compute_processes: 1 }, 'sm_active', true, { underused_usd: 0.005 }],
    ['underused', { gpu_util: 0.6, compute_processes: 1 }, 'gpu_util', true, { underused_usd: 0.4 }],
    ['underused', { gpu_util: 0.97, sm_active: 0.12 }, 'sm_active', false, { underused_usd: 0.88 }],
    ['unknown', { compute_processes: 1, power_w: 300 }, 'none', true, {}],
  ] as const)('classes %s for %j (source %s)', (cls, metrics, source, known, shares) => {
    // Prepare
    const expected = { idle_usd: 0, held_idle_usd: 0, underused_usd: 0, broken_usd: 0, ...shares };
    // Act
    const entry = computeLedger(win(metrics), P5);
    // Assess
    expect(entry.waste_class).toBe(cls);
    expect(entry.efficiency_source).toBe(source);
    expect(entry.processes_known).toBe(known);
    for (const [k, share] of Object.entries(expected)) {
      expect(entry[k as keyof typeof expected]).toBeCloseTo(COST_10S * share, 15);
    }
    const sum = entry.idle_usd + entry.held_idle_usd + entry.underused_usd + entry.broken_usd;
    expect(entry.wasted_usd).toBe(sum);
  });

  it.each([
    ['no compute process', { sm_active: 0, compute_processes: 0 }],
    ['an unknown process count', { sm_active: 0.002 }],
    ['GPU util only (no profiling)', { gpu_util: 0 }],
  ] as const)('classes a GPU a pod holds as held_idle with %s', (_case, metrics) => {
    // Prepare
    const held: GpuWindow = { ...win(metrics), k8s: { namespace: 'ml-train', pod: 'llama-7b-0' } };

    // Act
    const entry = computeLedger(held, P5);

    // Assess
    expect(entry).toMatchObject({ waste_class: 'held_idle', processes_known: true, idle_usd: 0 });
    expect(entry.held_idle_usd).toBeCloseTo(COST_10S, 15);
    expect(entry.wasted_usd).toBe(entry.held_idle_usd);
  });

  it('costs a working GPU a pod holds as underused, as without the pod', () => {
    // Prepare
    const metrics = { sm_active: 0.25 };
    const held: GpuWindow = { ...win(metrics), k8s: { namespace: 'ml-train', pod: 'llama-7b-0' } };

    // Act
    const entry = computeLedger(held, P5);

    // Assess
    expect(entry.waste_class).toBe('underused');
    expect(entry.underused_usd).toBe(computeLedger(win(metrics), P5).underused_usd);
  });

  it('leaves efficiency absent when neither sm_active nor gpu_util was measured', () => {
    // Prepare / Act
    const entry = computeLedger(win({}), P5);
    // Assess
    expect('efficiency' in entry).toBe(false);
    expect(entry.wasted_usd).toBe(0);
  });

  it.each([
    ['after', '2026-03-10T10:00:05Z', 'broken', COST_10S],
    ['exactly at the window end', '2026-03-10T10:00:10Z', 'underused', 0],
    ['later than', '2026-03-10T11:00:00Z', 'underused', 0],
  ])(
    'puts the whole cost in broken_usd only when the window ends %s brokenSince',
    (_n, since, cls, broken) => {
      // Prepare / Act
      const entry = computeLedger(win({ sm_active: 0.9, compute_processes: 1 }), P5, { brokenSince: since });
      // Assess
      expect(entry.waste_class).toBe(cls);
      expect(entry.broken_usd).toBeCloseTo(broken, 15);
      if (cls === 'broken') expect(entry.wasted_usd).toBe(entry.cost_usd);
    },
  );

  it('costs an unpriced instance 0 and says so', () => {
    // Prepare / Act
    const entry = computeLedger(win({ sm_active: 0 }), priceFor('x9.metal', 'us-east-1'));
    // Assess
    expect(entry).toMatchObject({
      cost_usd: 0,
      wasted_usd: 0,
      price_source: 'unpriced',
      waste_class: 'idle',
    });
  });

  it.each([
    ['an end before the start', win({}, '2026-03-10T10:00:10Z', '2026-03-10T10:00:00Z'), P5, 'window.end'],
    ['a negative price', win({}), { ...P5, price_usd_per_hour: -1 }, 'price.price_usd_per_hour'],
    ['zero GPUs', win({}), { ...P5, gpu_count: 0 }, 'price.gpu_count'],
  ])('throws LedgerInputError on %s', (_n, window, price, field) => {
    // Prepare / Act / Assess
    expect(() => computeLedger(window, price as InstancePrice)).toThrow(LedgerInputError);
    try {
      computeLedger(window, price as InstancePrice);
    } catch (e) {
      expect((e as LedgerInputError).field).toBe(field);
    }
  });

  it.each<{ case: string; metrics: GpuMetrics; brokenSince?: string; want: number }>([
    {
      case: 'a working GPU power-capped 30 % of the window: (cost − wasted) × 0.3',
      metrics: { sm_active: 0.8, compute_processes: 1, power_throttle_ratio: 0.3 },
      want: COST_10S * 0.8 * 0.3,
    },
    {
      case: 'thermal 10 % and power 25 %: the larger share (time throttled for at least one reason)',
      metrics: {
        sm_active: 1,
        compute_processes: 1,
        thermal_throttle_ratio: 0.1,
        power_throttle_ratio: 0.25,
      },
      want: COST_10S * 0.25,
    },
    {
      case: 'no efficiency measured (nothing wasted): the whole cost × the share',
      metrics: { thermal_throttle_ratio: 0.5 },
      want: COST_10S * 0.5,
    },
    {
      case: 'an idle GPU (its whole cost already wasted): nothing more',
      metrics: { sm_active: 0, compute_processes: 0, power_throttle_ratio: 1 },
      want: 0,
    },
    {
      case: 'a broken GPU: nothing more',
      metrics: { sm_active: 0.9, compute_processes: 1, thermal_throttle_ratio: 1 },
      brokenSince: '2026-03-10T09:00:00Z',
      want: 0,
    },
    { case: 'no throttle ratio measured: 0, never invented', metrics: { sm_active: 0.5 }, want: 0 },
  ])('prices throttled dollars apart from the waste: $case', ({ metrics, brokenSince, want }) => {
    // Prepare / Act
    const entry = computeLedger(win(metrics), P5, brokenSince === undefined ? {} : { brokenSince });
    // Assess
    expect(entry.throttled_usd).toBeCloseTo(want, 15);
    expect(entry.wasted_usd).toBe(
      entry.idle_usd + entry.held_idle_usd + entry.underused_usd + entry.broken_usd,
    );
  });

  it('keeps 0 <= wasted_usd + throttled_usd <= cost_usd for any valid window and price', () => {
    // Prepare
    const ratio = fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined });
    const arb = fc.record({
      startMs: fc.integer({ min: 1_700_000_000_000, max: 1_800_000_000_000 }),
      lengthMs: fc.integer({ min: 1, max: 3_600_000 }),
      sm: ratio,
      util: ratio,
      procs: fc.option(fc.integer({ min: 0, max: 4096 }), { nil: undefined }),
      thermal: ratio,
      power: ratio,
      usd: fc.double({ min: 0, max: 1000, noNaN: true }),
      gpus: fc.integer({ min: 1, max: 64 }),
      brokenOffsetMs: fc.option(fc.integer({ min: -3_600_000, max: 3_600_000 }), { nil: undefined }),
    });
    // Act / Assess
    fc.assert(
      fc.property(arb, (a) => {
        const metrics: GpuMetrics = {
          ...(a.sm === undefined ? {} : { sm_active: a.sm }),
          ...(a.util === undefined ? {} : { gpu_util: a.util }),
          ...(a.procs === undefined ? {} : { compute_processes: a.procs }),
          ...(a.thermal === undefined ? {} : { thermal_throttle_ratio: a.thermal }),
          ...(a.power === undefined ? {} : { power_throttle_ratio: a.power }),
        };
        const start = new Date(a.startMs).toISOString();
        const end = new Date(a.startMs + a.lengthMs).toISOString();
        const price: InstancePrice = {
          price_usd_per_hour: a.usd,
          price_source: 'override',
          gpu_count: a.gpus,
          gpu_count_source: 'table',
        };
        const brokenSince =
          a.brokenOffsetMs === undefined ? undefined : new Date(a.startMs + a.brokenOffsetMs).toISOString();
        const e = computeLedger(
          win(metrics, start, end),
          price,
          brokenSince === undefined ? {} : { brokenSince },
        );
        return (
          e.wasted_usd >= 0 && e.throttled_usd >= 0 && e.wasted_usd + e.throttled_usd <= e.cost_usd + 1e-12
        );
      }),
    );
  });
});
