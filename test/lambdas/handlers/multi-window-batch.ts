import type { Batch } from '../../../lambdas/contract';
import { P5_BUS_IDS, validBatch } from '../contract/batches';
import { COMPUTE_BOUND } from '../domain/rules/horizons';

/** Flush window length, s (the agent's default). */
const FLUSH_S = 10;
/** Horizon length, s (the agent's 15-minute horizon). */
const HORIZON_S = 900;

/**
 * The batch the agent sends every 60 s by default (`sendIntervalS`): `windows` consecutive 10 s
 * flush windows per GPU ending at `end`, one 15-minute horizon per GPU, for a p5.48xlarge of
 * `gpus` H100s running a healthy compute-bound job (every metric present), no events.
 *
 * @param seq - the batch's sequence number (the store's record version)
 * @param endMs - end of the last window, ms since the epoch
 * @param windows - flush windows per GPU, ≥ 1. @default 6
 * @param gpus - GPUs, 1..64. @default 8
 */
export function multiWindowBatch(seq: number, endMs: number, windows = 6, gpus = 8): Batch {
  const base = validBatch({}, gpus);
  const iso = (ms: number): string => new Date(ms).toISOString();
  const gpu = (index: number) => ({
    index,
    uuid: `GPU-c4529c8d-69c4-b61d-e0bc-7b24600960${String(index).padStart(2, '0')}`,
    name: 'NVIDIA H100 80GB HBM3',
    pci_bus_id: P5_BUS_IDS[index % P5_BUS_IDS.length],
  });
  const flush = Array.from({ length: gpus }, (_, index) =>
    Array.from({ length: windows }, (_, w) => ({
      kind: 'flush' as const,
      start: iso(endMs - (windows - w) * FLUSH_S * 1000),
      end: iso(endMs - (windows - w - 1) * FLUSH_S * 1000),
      gpu: gpu(index),
      metrics: { ...COMPUTE_BOUND, sm_active: 0.8 + 0.01 * w, power_w: 600 + index },
    })),
  ).flat();
  const horizons = Array.from({ length: gpus }, (_, index) => ({
    kind: 'horizon' as const,
    start: iso(endMs - HORIZON_S * 1000),
    end: iso(endMs),
    gpu: gpu(index),
    metrics: COMPUTE_BOUND,
  }));
  return {
    ...base,
    batch_id: `8a7f3c52-6a0e-4b8e-9f3d-${String(seq).padStart(12, '0')}`,
    seq,
    sent_at: iso(endMs),
    agent: { ...base.agent, profiling_source: 'gpm' },
    windows: [...flush, ...horizons],
    events: [],
  };
}
