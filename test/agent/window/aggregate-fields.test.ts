import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregateWindow, type GpuSample } from '../../../agent/window';
import { at, expectContractValid, GPU, START } from './samples';

const END = new Date(START.getTime() + 10_000);

describe('aggregateWindow of the clock, PCIe, NVLink, profiling and health fields', () => {
  it.each<{ case: string; samples: GpuSample[]; want: Record<string, unknown> }>([
    {
      case: 'the OR of the clock-event reasons and the share of thermal and power ones',
      samples: [
        at(0, { clocks_event_reasons: 0x1 }),
        at(1, { clocks_event_reasons: 0x4 }),
        at(2, {}),
        at(3, { clocks_event_reasons: 0x20 }),
        at(4, { clocks_event_reasons: 0x1 }),
      ],
      want: { clocks_event_reasons: 0x25, thermal_throttle_ratio: 0.25, power_throttle_ratio: 0.25 },
    },
    {
      case: 'a thermal throttle ratio of 3 in 10 and a power one of 1 in 10',
      samples: [0x8, 0x20, 0x40, 0x1, 0x1, 0x4, 0, 0, 0x1, 0].map((reasons, s) =>
        at(s, { clocks_event_reasons: reasons }),
      ),
      want: { clocks_event_reasons: 0x6d, thermal_throttle_ratio: 0.3, power_throttle_ratio: 0.1 },
    },
    {
      case: 'HW slowdown with the HW power brake (the real p5 capture, 0x88) as power, not heat',
      samples: [0x88, 0x88, 0xc8, 0x1].map((reasons, s) => at(s, { clocks_event_reasons: reasons })),
      want: { clocks_event_reasons: 0xc9, thermal_throttle_ratio: 0.25, power_throttle_ratio: 0.75 },
    },
    {
      case: 'the power-cap share from the violation counter (Δµs / Δwall), over the bitmask',
      samples: [
        at(0, { power_violation_us_total: 5_000_000, clocks_event_reasons: 0x4 }),
        at(2, { clocks_event_reasons: 0x4 }),
        at(4, { power_violation_us_total: 6_000_000, clocks_event_reasons: 0x4 }),
      ],
      want: { clocks_event_reasons: 0x4, thermal_throttle_ratio: 0, power_throttle_ratio: 0.25 },
    },
    {
      case: 'the thermal share from the DCGM thermal violation counter, counting only growth',
      samples: [
        at(0, { thermal_violation_us_total: 900_000_000 }),
        at(1, { thermal_violation_us_total: 900_500_000 }),
        at(2, { thermal_violation_us_total: 100 }),
        at(4, { thermal_violation_us_total: 1_000_100 }),
      ],
      want: { thermal_throttle_ratio: 0.375 },
    },
    {
      case: 'the HW power brake share when larger than the SW power-cap counter (which does not cover it)',
      samples: [
        at(0, { power_violation_us_total: 0, clocks_event_reasons: 0x88 }),
        at(2, { clocks_event_reasons: 0x88 }),
        at(4, { power_violation_us_total: 400_000, clocks_event_reasons: 0x1 }),
      ],
      want: { clocks_event_reasons: 0x89, thermal_throttle_ratio: 0, power_throttle_ratio: 2 / 3 },
    },
    {
      case: 'a violation share just above 1 (clock jitter) clamped to 1',
      samples: [at(0, { power_violation_us_total: 0 }), at(10, { power_violation_us_total: 10_200_000 })],
      want: { power_throttle_ratio: 1 },
    },
    {
      case: 'a violation share far above 1 left out, the bitmask used instead',
      samples: [
        at(0, { power_violation_us_total: 0, clocks_event_reasons: 0x1 }),
        at(10, { power_violation_us_total: 50_000_000, clocks_event_reasons: 0x1 }),
      ],
      want: { clocks_event_reasons: 0x1, thermal_throttle_ratio: 0, power_throttle_ratio: 0 },
    },
    {
      case: 'no throttle ratio from one counter reading and no bitmask (absent, never invented)',
      samples: [at(0, { power_violation_us_total: 7 }), at(1, {})],
      want: {},
    },
    {
      case: 'PCIe and NVLink rates from the counters over the first-to-last span',
      samples: [
        at(0, {
          pcie_rx_bytes_total: 0,
          pcie_tx_bytes_total: 0,
          nvlink_rx_bytes_total: 0,
          nvlink_tx_bytes_total: 8,
        }),
        at(1, {
          pcie_rx_bytes_total: 1000,
          pcie_tx_bytes_total: 40,
          nvlink_rx_bytes_total: 4,
          nvlink_tx_bytes_total: 8,
        }),
        at(2, { pcie_rx_bytes_total: 3000, pcie_tx_bytes_total: 80 }),
        at(4, {
          pcie_rx_bytes_total: 7000,
          pcie_tx_bytes_total: 160,
          nvlink_rx_bytes_total: 16,
          nvlink_tx_bytes_total: 8,
        }),
      ],
      want: {
        pcie_rx_bytes_per_s: 1750,
        max_pcie_rx_bytes_per_s: 2000,
        pcie_tx_bytes_per_s: 40,
        nvlink_rx_bytes_per_s: 4,
        nvlink_tx_bytes_per_s: 0,
      },
    },
    {
      case: 'counter rates across a reset, counting only the steps that go up',
      samples: [
        at(0, { pcie_rx_bytes_total: 5000 }),
        at(1, { pcie_rx_bytes_total: 6000 }),
        at(2, { pcie_rx_bytes_total: 100 }),
        at(4, { pcie_rx_bytes_total: 2100 }),
      ],
      want: { pcie_rx_bytes_per_s: 750, max_pcie_rx_bytes_per_s: 1000 },
    },
    {
      case: 'the mean and max of the instant rates without counters',
      samples: [
        at(0, { pcie_rx_bytes_per_s: 100, pcie_tx_bytes_per_s: 10 }),
        at(1, { pcie_rx_bytes_per_s: 300, pcie_tx_bytes_per_s: 30 }),
      ],
      want: { pcie_rx_bytes_per_s: 200, max_pcie_rx_bytes_per_s: 300, pcie_tx_bytes_per_s: 20 },
    },
    {
      case: 'the counters over the instant rates when both exist',
      samples: [
        at(0, { pcie_rx_bytes_total: 0, pcie_rx_bytes_per_s: 9 }),
        at(2, { pcie_rx_bytes_total: 4000, pcie_rx_bytes_per_s: 9 }),
      ],
      want: { pcie_rx_bytes_per_s: 2000, max_pcie_rx_bytes_per_s: 2000 },
    },
    {
      case: 'the instant rates when only one sample has the counter',
      samples: [
        at(0, { pcie_rx_bytes_total: 0, pcie_rx_bytes_per_s: 50 }),
        at(1, { pcie_rx_bytes_per_s: 70 }),
      ],
      want: { pcie_rx_bytes_per_s: 60, max_pcie_rx_bytes_per_s: 70 },
    },
    {
      case: 'replays and CRC errors at their last value, HBM temperature as a mean, retired pages as OR',
      samples: [
        at(0, { pcie_replay_count: 3, nvlink_crc_errors: 1, mem_temp_c: 70, retired_pages_pending: false }),
        at(1, { pcie_replay_count: 5, nvlink_crc_errors: 2, mem_temp_c: 80, retired_pages_pending: true }),
        at(2, { retired_pages_pending: false }),
      ],
      want: {
        pcie_replay_count: 5,
        pcie_replay_delta: 2,
        nvlink_crc_errors: 2,
        nvlink_crc_errors_delta: 1,
        mem_temp_c: 75,
        retired_pages_pending: true,
      },
    },
    {
      case: 'no growth after a counter reset (a driver reload is never growth), the end value kept',
      samples: [
        at(0, { pcie_replay_count: 90, nvlink_crc_errors: 4, ecc_sbe_volatile: 30 }),
        at(1, { pcie_replay_count: 2, nvlink_crc_errors: 0, ecc_sbe_volatile: 1 }),
        at(2, { pcie_replay_count: 3, nvlink_crc_errors: 0, ecc_sbe_volatile: 2 }),
      ],
      want: { pcie_replay_count: 3, nvlink_crc_errors: 0, ecc_sbe_volatile: 2 },
    },
    {
      case: 'the profiling ratios as means and the SM activity spread',
      samples: [
        at(0, {
          sm_active: 0.2,
          sm_occupancy: 0.1,
          tensor_active: 0,
          dram_active: 0.5,
          fp16_active: 0.25,
          fp32_active: 0.5,
          fp64_active: 0,
        }),
        at(1, {
          sm_active: 0.6,
          sm_occupancy: 0.3,
          tensor_active: 0.5,
          dram_active: 0.5,
          fp16_active: 0.75,
          fp32_active: 0.5,
          fp64_active: 0,
        }),
      ],
      want: {
        sm_active: 0.4,
        min_sm_active: 0.2,
        max_sm_active: 0.6,
        sm_active_cv: expect.closeTo(0.5, 12),
        sm_occupancy: 0.2,
        tensor_active: 0.25,
        dram_active: 0.5,
        fp16_active: 0.5,
        fp32_active: 0.5,
        fp64_active: 0,
      },
    },
    {
      case: 'SM activity rounded just above 1 clamped to 1, and a broken one left out',
      samples: [at(0, { sm_active: 1.0005 }), at(1, { sm_active: 1 }), at(2, { sm_active: 7 })],
      want: {
        sm_active: 1,
        min_sm_active: 1,
        max_sm_active: 1,
        sm_active_cv: expect.closeTo(0.00025 / 1.00025, 12),
      },
    },
    {
      case: 'the exact slope of a linear memory leak',
      samples: Array.from({ length: 10 }, (_, s) =>
        at(s, { fb_used_bytes: 20e9 + s * 1_048_576, fb_total_bytes: 80e9 }),
      ),
      want: {
        fb_used_bytes: 20e9 + 9 * 1_048_576,
        fb_used_growth_bytes_per_s: 1_048_576,
        fb_total_bytes: 80e9,
      },
    },
    {
      case: 'no memory growth from two samples',
      samples: [at(0, { fb_used_bytes: 10 }), at(1, { fb_used_bytes: 20 })],
      want: { fb_used_bytes: 20 },
    },
  ])('gives $case', ({ samples, want }) => {
    // Prepare / Act
    const window = aggregateWindow(samples, START, END, GPU);
    // Assess
    expect(window.metrics).toEqual(want);
    expectContractValid(window);
  });

  it.each<{ case: string; samples: GpuSample[]; want: unknown }>([
    {
      case: 'each pid once with its largest memory, largest first',
      samples: [
        at(0, {
          processes: [
            { pid: 7, fb_used_bytes: 100 },
            { pid: 9, fb_used_bytes: 500 },
          ],
        }),
        at(1, { processes: [{ pid: 7, fb_used_bytes: 900 }, { pid: 3 }] }),
        at(2, { processes: [{ pid: 9, fb_used_bytes: 200 }] }),
      ],
      want: [{ pid: 7, fb_used_bytes: 900 }, { pid: 9, fb_used_bytes: 500 }, { pid: 3 }],
    },
    {
      case: 'an empty list when the samples said none',
      samples: [at(0, { processes: [] }), at(1, {})],
      want: [],
    },
    {
      case: 'no list when no sample had the field',
      samples: [at(0, { compute_processes: 2 })],
      want: undefined,
    },
    {
      case: 'invalid pids and memories left out',
      samples: [at(0, { processes: [{ pid: -1 }, { pid: 1.5 }, { pid: 4, fb_used_bytes: -3 }] })],
      want: [{ pid: 4 }],
    },
    {
      case: 'the 64 largest of 100 processes',
      samples: [
        at(0, { processes: Array.from({ length: 50 }, (_, i) => ({ pid: i, fb_used_bytes: i * 10 })) }),
        at(1, {
          processes: Array.from({ length: 50 }, (_, i) => ({ pid: 50 + i, fb_used_bytes: (50 + i) * 10 })),
        }),
      ],
      want: Array.from({ length: 64 }, (_, i) => ({ pid: 99 - i, fb_used_bytes: (99 - i) * 10 })),
    },
  ])('gives processes: $case', ({ samples, want }) => {
    // Prepare / Act
    const window = aggregateWindow(samples, START, END, GPU);
    // Assess
    expect(window.processes).toEqual(want);
    expect(Object.hasOwn(window, 'processes')).toBe(want !== undefined);
    expectContractValid(window);
  });

  it('gives a contract-valid window for any samples, however broken their values', () => {
    // Prepare
    const anyNumber = fc.oneof(
      fc.double(),
      fc.integer({ min: -10, max: 5000 }),
      fc.double({ min: 0, max: 1.01, noNaN: true }),
      fc.constant(2 ** 53),
    );
    const field = fc.option(anyNumber, { nil: undefined });
    const sample = fc.record(
      {
        second: fc.integer({ min: 0, max: 9 }),
        gpu_util: field,
        sm_active: field,
        power_w: field,
        energy_mj_total: field,
        fb_used_bytes: field,
        fb_total_bytes: field,
        gpu_temp_c: field,
        mem_temp_c: field,
        clocks_event_reasons: field,
        pcie_rx_bytes_total: field,
        pcie_rx_bytes_per_s: field,
        nvlink_tx_bytes_total: field,
        pcie_replay_count: field,
        compute_processes: field,
        retired_pages_pending: fc.option(fc.boolean(), { nil: undefined }),
        processes: fc.option(
          fc.array(fc.record({ pid: anyNumber, fb_used_bytes: field }), { maxLength: 70 }),
          {
            nil: undefined,
          },
        ),
      },
      { requiredKeys: ['second'] },
    );
    // Act / Assess
    fc.assert(
      fc.property(fc.array(sample, { maxLength: 12 }), (records) => {
        const samples = records
          .sort((a, b) => a.second - b.second)
          .map(({ second, ...fields }) => at(second, fields as Partial<GpuSample>));
        expectContractValid(aggregateWindow(samples, START, END, GPU));
      }),
      { numRuns: 300 },
    );
  });
});
