import { describe, expect, it } from 'vitest';
import { aggregateWindow, type GpuSample, WindowAggregationError } from '../../../agent/window';
import { type GpuIdentity, GpuWindowSchema } from '../../../lambdas/contract';

const START = new Date('2026-11-21T10:00:00Z');
const END = new Date('2026-11-21T10:00:10Z');
const GPU: GpuIdentity = {
  index: 0,
  uuid: 'GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa',
  pci_bus_id: '0000:19:00.0',
};

/** A sample of GPU 0 taken `second` seconds after START. */
function at(second: number, fields: Omit<Partial<GpuSample>, 'gpu_index' | 'at_ms'> = {}): GpuSample {
  return { gpu_index: 0, at_ms: START.getTime() + second * 1000, ...fields };
}

describe('aggregateWindow', () => {
  it.each<{ case: string; samples: GpuSample[]; want: Record<string, unknown> }>([
    {
      case: 'means utilizations, temperatures and clocks',
      samples: [
        at(1, { gpu_util: 0.2, mem_copy_util: 0.1, gpu_temp_c: 40, sm_clock_mhz: 1000, mem_clock_mhz: 2619 }),
        at(2, { gpu_util: 0.6, mem_copy_util: 0.3, gpu_temp_c: 50, sm_clock_mhz: 2000, mem_clock_mhz: 2619 }),
      ],
      want: {
        gpu_util: 0.4,
        mem_copy_util: 0.2,
        gpu_temp_c: 45,
        max_gpu_temp_c: 50,
        sm_clock_mhz: 1500,
        mem_clock_mhz: 2619,
      },
    },
    {
      case: 'power from the energy counter delta over the first-to-last span',
      samples: [
        at(0, { power_w: 100, energy_mj_total: 1_000_000 }),
        at(1, { power_w: 300, energy_mj_total: 1_200_000 }),
        at(4, { power_w: 200, energy_mj_total: 1_800_000 }),
      ],
      want: { power_w: 200, energy_j: 800, max_power_w: 300, min_power_w: 100 },
    },
    {
      case: 'power as the sample mean when the counter went backwards (driver reload)',
      samples: [
        at(0, { power_w: 100, energy_mj_total: 5_000_000 }),
        at(1, { power_w: 200, energy_mj_total: 10 }),
        at(2, { power_w: 300, energy_mj_total: 6_000_000 }),
      ],
      want: { power_w: 200, max_power_w: 300, min_power_w: 100 },
    },
    {
      case: 'power as the sample mean with one energy reading',
      samples: [at(0, { power_w: 70 }), at(1, { power_w: 80, energy_mj_total: 1_000 })],
      want: { power_w: 75, min_power_w: 70, max_power_w: 80 },
    },
    {
      case: 'counters, memory and the power limit at their last value',
      samples: [
        at(0, {
          ecc_sbe_volatile: 1,
          ecc_dbe_volatile: 0,
          ecc_sbe_aggregate: 7,
          ecc_dbe_aggregate: 0,
          fb_used_bytes: 10,
          fb_total_bytes: 100,
          power_limit_w: 700,
        }),
        at(1, {
          ecc_sbe_volatile: 2,
          ecc_dbe_volatile: 1,
          ecc_sbe_aggregate: 8,
          ecc_dbe_aggregate: 1,
          fb_used_bytes: 30,
          fb_total_bytes: 100,
          power_limit_w: 500,
        }),
        at(2, {}),
      ],
      want: {
        ecc_sbe_volatile: 2,
        ecc_sbe_volatile_delta: 1,
        ecc_dbe_volatile: 1,
        ecc_sbe_aggregate: 8,
        ecc_dbe_aggregate: 1,
        fb_used_bytes: 30,
        fb_total_bytes: 100,
        power_limit_w: 500,
      },
    },
    {
      case: 'flags as OR and processes as max',
      samples: [
        at(0, { remapped_rows_pending: false, remapped_rows_failure: false, compute_processes: 2 }),
        at(1, { remapped_rows_pending: true, remapped_rows_failure: false, compute_processes: 5 }),
        at(2, { remapped_rows_pending: false, remapped_rows_failure: false, compute_processes: 0 }),
      ],
      want: { remapped_rows_pending: true, remapped_rows_failure: false, compute_processes: 5 },
    },
    {
      case: 'a ratio rounded just above 1 clamped to 1',
      samples: [at(0, { gpu_util: 1.000_001 }), at(1, { gpu_util: 1 })],
      want: { gpu_util: 1 },
    },
    {
      case: 'out-of-range readings left out (NVML 0xFFFFFFFF mW, a 150 % utilization)',
      samples: [at(0, { power_w: 4_294_967.295, gpu_util: 1.5 }), at(1, { power_w: 60, gpu_util: 0.5 })],
      want: { power_w: 60, max_power_w: 60, min_power_w: 60, gpu_util: 0.5 },
    },
    {
      case: 'no metric from an empty window',
      samples: [],
      want: {},
    },
    {
      case: 'only the fields some sample had',
      samples: [at(0, { gpu_temp_c: 30 }), at(1, {})],
      want: { gpu_temp_c: 30, max_gpu_temp_c: 30 },
    },
  ])('gives $case', ({ samples, want }) => {
    // Prepare / Act
    const window = aggregateWindow(samples, START, END, GPU);
    // Assess
    const { power_cv: _cv, ...metrics } = window.metrics;
    expect(metrics).toEqual(want);
    expect(GpuWindowSchema.safeParse(window).success).toBe(true);
  });

  it.each<{ case: string; powers: number[]; want: number | undefined }>([
    { case: 'steady power', powers: [100, 100, 100], want: 0 },
    { case: 'a sawtooth', powers: [100, 300], want: 0.5 },
    { case: 'a single sample', powers: [100], want: undefined },
    { case: 'a zero mean', powers: [0, 0], want: undefined },
  ])('gives power_cv for $case', ({ powers, want }) => {
    // Prepare
    const samples = powers.map((power_w, i) => at(i, { power_w }));
    // Act
    const window = aggregateWindow(samples, START, END, GPU);
    // Assess
    if (want === undefined) expect(window.metrics).not.toHaveProperty('power_cv');
    else expect(window.metrics.power_cv).toBeCloseTo(want, 12);
  });

  it('leaves fb_used_bytes out when it exceeds the total', () => {
    // Prepare
    const samples = [at(0, { fb_used_bytes: 200, fb_total_bytes: 100 })];
    // Act
    const window = aggregateWindow(samples, START, END, GPU);
    // Assess
    expect(window.metrics).toEqual({ fb_total_bytes: 100 });
  });

  it('copies the window bounds and the GPU identity', () => {
    // Prepare / Act
    const window = aggregateWindow([at(1, { gpu_util: 0 })], START, END, GPU);
    // Assess
    expect(window).toMatchObject({
      kind: 'flush',
      start: '2026-11-21T10:00:00.000Z',
      end: '2026-11-21T10:00:10.000Z',
      gpu: GPU,
    });
    expect(window.gpu).not.toBe(GPU);
  });

  it.each([
    { case: 'an end equal to the start', samples: [] as GpuSample[], end: START },
    { case: 'an end before the start', samples: [] as GpuSample[], end: new Date(START.getTime() - 1) },
    { case: 'a sample of another GPU', samples: [{ gpu_index: 1, at_ms: START.getTime() }], end: END },
  ])('throws WindowAggregationError for $case', ({ samples, end }) => {
    // Prepare / Act / Assess
    expect(() => aggregateWindow(samples, START, end, GPU)).toThrow(WindowAggregationError);
  });
});
