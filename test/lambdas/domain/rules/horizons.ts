import { type Batch, type GpuMetrics, type ProfilingSource, parseBatch } from '../../../../lambdas/contract';
import {
  DEFAULT_THRESHOLDS,
  type HorizonInput,
  judgedHorizons,
  nextIdleSince,
  priceFor,
  type Thresholds,
} from '../../../../lambdas/domain';
import { HOST, NOW } from '../batch-builder';

/**
 * Test helpers for the window rules: real contract batches carrying horizon windows (validated by
 * `parseBatch`), and the `HorizonInput` the pipeline builds from them.
 */

/** End of every built horizon (the batch's last flush window end). */
export const HORIZON_END = '2026-03-10T10:00:10.000Z';

/** A busy, healthy, compute-bound H100 over a whole horizon: no window rule fires on it. */
export const COMPUTE_BOUND: GpuMetrics = {
  gpu_util: 0.98,
  sm_active: 0.85,
  min_sm_active: 0.7,
  max_sm_active: 0.95,
  sm_active_cv: 0.05,
  sm_occupancy: 0.45,
  tensor_active: 0.5,
  dram_active: 0.4,
  pcie_rx_bytes_per_s: 2e8,
  max_pcie_rx_bytes_per_s: 5e8,
  fb_used_bytes: 40e9,
  fb_total_bytes: 80e9,
  fb_used_growth_bytes_per_s: 0,
  gpu_temp_c: 65,
  max_gpu_temp_c: 70,
  thermal_throttle_ratio: 0,
  power_throttle_ratio: 0,
  power_w: 600,
  max_power_w: 650,
  min_power_w: 550,
  power_cv: 0.05,
  pcie_replay_count: 3,
  pcie_replay_delta: 0,
  nvlink_crc_errors: 0,
  nvlink_crc_errors_delta: 0,
  ecc_sbe_volatile: 0,
  ecc_sbe_volatile_delta: 0,
  compute_processes: 1,
};

/** An idle H100 over a whole horizon: no process, SM active 0 in every sample. */
export const IDLE_HORIZON: GpuMetrics = {
  ...COMPUTE_BOUND,
  gpu_util: 0,
  sm_active: 0,
  max_sm_active: 0,
  sm_active_cv: 0,
  compute_processes: 0,
};

/** A raw horizon window of GPU `index` covering `spanS` seconds up to {@link HORIZON_END}. */
export function horizon(index: number, metrics: GpuMetrics, spanS = 900): Record<string, unknown> {
  return {
    kind: 'horizon',
    start: new Date(Date.parse(HORIZON_END) - spanS * 1000).toISOString(),
    end: HORIZON_END,
    gpu: {
      index,
      name: 'NVIDIA H100 80GB HBM3',
      pci_bus_id: `0000:${(0x18 + index * 0x10).toString(16)}:00.0`,
    },
    metrics,
  };
}

/** Options of {@link horizonBatch}. */
export interface HorizonBatchOptions {
  readonly profiling?: ProfilingSource;
  readonly efa?: Record<string, unknown>[];
  readonly flush?: Record<string, unknown>[];
  readonly events?: Record<string, unknown>[];
  readonly host?: Record<string, unknown>;
  readonly seq?: number;
  readonly batchId?: string;
}

/** A validated batch with these horizon windows (and optional flush windows, EFA deltas, events). */
export function horizonBatch(
  horizons: Record<string, unknown>[],
  opts: HorizonBatchOptions = {},
  now = NOW,
): Batch {
  return parseBatch(
    {
      schema: 'gpu-sentinel/v1',
      batch_id: opts.batchId ?? '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
      seq: opts.seq ?? 1,
      sent_at: now.toISOString(),
      host: opts.host ?? HOST,
      agent: { version: '0.1.0', profiling_source: opts.profiling ?? 'gpm' },
      windows: [...(opts.flush ?? []), ...horizons],
      ...(opts.efa === undefined ? {} : { efa: opts.efa }),
      ...(opts.events === undefined ? {} : { events: opts.events }),
    },
    now,
  );
}

/** The `HorizonInput` the pipeline builds for a batch (p5.48xlarge price, idle marks from `idle`). */
export function inputFor(
  batch: Batch,
  idle: ReadonlyMap<string, string> = new Map(),
  thresholds: Thresholds = DEFAULT_THRESHOLDS,
): HorizonInput {
  const price = priceFor(batch.host.instance_type, batch.host.region, {}, undefined);
  const { gpus, shortGpus } = judgedHorizons(batch, thresholds, price);
  return { batch, gpus, shortGpus, price, idleSince: nextIdleSince(idle, gpus, thresholds).since };
}

/** `count` GPUs with the same metrics, indices 0..count−1. */
export function fleet(count: number, metrics: GpuMetrics, spanS = 900): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => horizon(i, metrics, spanS));
}
