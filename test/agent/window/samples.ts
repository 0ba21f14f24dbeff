import { expect } from 'vitest';
import type { GpuSample } from '../../../agent/window';
import { type GpuIdentity, type GpuWindow, GpuWindowSchema } from '../../../lambdas/contract';

/** Start of the windows in these tests. */
export const START = new Date('2026-11-21T10:00:00Z');

/** GPU 0 of an 8-GPU p5. */
export const GPU: GpuIdentity = {
  index: 0,
  uuid: 'GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa',
  pci_bus_id: '0000:19:00.0',
};

/** A sample of GPU `gpu` taken `second` seconds after START. */
export function at(
  second: number,
  fields: Omit<Partial<GpuSample>, 'gpu_index' | 'at_ms'> = {},
  gpu = 0,
): GpuSample {
  return { gpu_index: gpu, at_ms: START.getTime() + second * 1000, ...fields };
}

/** The date `second` seconds after START. */
export function dateAt(second: number): Date {
  return new Date(START.getTime() + second * 1000);
}

/** Asserts that a window passes the contract, showing the issues when it does not. */
export function expectContractValid(window: GpuWindow | undefined): void {
  expect(GpuWindowSchema.safeParse(window).error?.issues ?? []).toEqual([]);
}

/**
 * A busy, varied sample for second `second` of GPU `gpu`: every field set, values that move
 * (sawtooth power and SM activity, a leaking framebuffer, counters that grow and once reset,
 * a thermal event now and then, a changing process list, sometimes no process list at all).
 */
export function busySample(second: number, gpu = 0): GpuSample {
  const phase = (second * 7 + gpu) % 13;
  const processCount = second % 97 === 0 ? 64 : phase % 4;
  return at(
    second,
    {
      gpu_util: 0.9 + (phase % 3) * 0.03,
      mem_copy_util: phase / 13,
      sm_active: 0.1 + (phase % 5) * 0.2,
      sm_occupancy: 0.05 * (phase % 4),
      tensor_active: phase % 2 === 0 ? 0 : 0.33,
      dram_active: 0.81,
      fp16_active: 0.1,
      fp32_active: 0.2,
      fp64_active: 0,
      pcie_tx_bytes_total: second * 1_000_003,
      pcie_rx_bytes_total: (second % 400) * 9_000_011 + phase * 77,
      pcie_tx_bytes_per_s: 1_000_000 + phase,
      pcie_rx_bytes_per_s: 9_000_000 + phase * 10,
      nvlink_tx_bytes_total: second * 2 ** 30,
      nvlink_rx_bytes_total: second * 2 ** 29,
      fb_used_bytes: 20e9 + second * 1_048_576,
      fb_total_bytes: 81_559_289_856,
      gpu_temp_c: 60 + phase,
      mem_temp_c: 70 + (phase % 5),
      power_w: 300 + phase * 20.5,
      power_limit_w: 700,
      energy_mj_total: 1e9 + second * 400_000,
      sm_clock_mhz: 1980 - phase,
      mem_clock_mhz: 2619,
      clocks_event_reasons: phase === 3 ? 0x20 : phase === 8 ? 0x8 | 0x4 : 0x1,
      ecc_sbe_volatile: Math.floor(second / 100),
      ecc_dbe_volatile: 0,
      ecc_sbe_aggregate: 10 + Math.floor(second / 100),
      ecc_dbe_aggregate: 0,
      retired_pages_pending: false,
      remapped_rows_pending: phase === 5,
      remapped_rows_failure: false,
      pcie_replay_count: Math.floor(second / 50),
      nvlink_crc_errors: Math.floor(second / 300),
      compute_processes: processCount,
      ...(phase === 11
        ? {}
        : {
            processes: Array.from({ length: processCount }, (_, i) => ({
              pid: 1000 + ((second + i) % 70),
              ...(i === 1 ? {} : { fb_used_bytes: (i + 1) * 1_000_000 + phase }),
            })),
          }),
    },
    gpu,
  );
}
