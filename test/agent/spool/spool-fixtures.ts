import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Batch, GpuWindow } from '../../../lambdas/contract';

/** Start of simulated time in the spool tests. */
export const T0 = new Date('2026-03-10T12:00:00Z');

/** A deterministic uuid v4 for `seq`. */
export function batchIdOf(seq: number): string {
  return `00000000-0000-4000-8000-${String(seq).padStart(12, '0')}`;
}

/**
 * A valid contract batch with `gpus` flush windows (and as many horizons when `horizons`), sent at `at`.
 * With 8 GPUs and horizons it serializes to ~6 KB, a typical p4d/p5 batch.
 */
export function makeBatch(seq: number, at: Date = T0, gpus = 1, horizons = false): Batch {
  const end = at.toISOString();
  const start = new Date(at.getTime() - 10_000).toISOString();
  const windows: GpuWindow[] = [];
  for (const kind of horizons ? (['flush', 'horizon'] as const) : (['flush'] as const)) {
    for (let index = 0; index < gpus; index++) {
      windows.push({
        kind,
        start: kind === 'flush' ? start : new Date(at.getTime() - 900_000).toISOString(),
        end,
        gpu: {
          index,
          uuid: `GPU-1d2c3b4a-0000-1111-2222-33334444555${index}`,
          name: 'NVIDIA H100 80GB HBM3',
          pci_bus_id: `00000000:${(0x18 + index * 0x10).toString(16).padStart(2, '0')}:00.0`,
        },
        metrics: {
          gpu_util: 0.97,
          mem_copy_util: 0.41,
          sm_active: 0.62,
          sm_occupancy: 0.31,
          tensor_active: 0.44,
          dram_active: 0.52,
          pcie_tx_bytes_per_s: 1_234_567,
          pcie_rx_bytes_per_s: 7_654_321,
          nvlink_tx_bytes_per_s: 98_765_432,
          nvlink_rx_bytes_per_s: 87_654_321,
          fb_used_bytes: 71_000_000_000,
          fb_total_bytes: 85_899_345_920,
          gpu_temp_c: 61,
          max_gpu_temp_c: 64,
          mem_temp_c: 58,
          power_w: 612.5,
          max_power_w: 688.1,
          min_power_w: 540.2,
          power_cv: 0.04,
          power_limit_w: 700,
          energy_j: 6125,
          sm_clock_mhz: 1980,
          mem_clock_mhz: 2619,
          clocks_event_reasons: 0,
          ecc_sbe_volatile: 0,
          ecc_dbe_volatile: 0,
          ecc_sbe_aggregate: 0,
          ecc_dbe_aggregate: 0,
          retired_pages_pending: false,
          remapped_rows_pending: false,
          remapped_rows_failure: false,
          pcie_replay_count: 0,
          nvlink_crc_errors: 0,
          compute_processes: 1,
        },
      });
    }
  }
  return {
    schema: 'gpu-sentinel/v1',
    batch_id: batchIdOf(seq),
    seq,
    sent_at: end,
    host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
    agent: { version: '0.1.0', profiling_source: 'gpm' },
    windows,
  };
}

/** A settable clock for simulated time. */
export class FakeClock {
  private ms: number;
  /** @param start - the first time it reads */
  constructor(start: Date = T0) {
    this.ms = start.getTime();
  }
  /** The current simulated time. */
  readonly now = (): Date => new Date(this.ms);
  /** Moves time forward by `ms`. */
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** A fresh temp directory under os.tmpdir(), and a function that removes it. */
export async function makeTempDir(
  prefix = 'gpu-sentinel-spool-',
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
