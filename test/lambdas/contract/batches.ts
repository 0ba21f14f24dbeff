import type { Batch } from '../../../lambdas/contract';

/** PCI bus ids of the 8 H100s of a p5.48xlarge (real dcgm-exporter capture). */
export const P5_BUS_IDS = [
  '0000:53:00.0',
  '0000:64:00.0',
  '0000:75:00.0',
  '0000:86:00.0',
  '0000:97:00.0',
  '0000:a8:00.0',
  '0000:b9:00.0',
  '0000:ca:00.0',
];

/** The fixed server clock the contract tests judge times against. */
export const NOW = new Date('2026-11-21T10:00:00.000Z');

/** Seconds before {@link NOW}, as ISO 8601. */
export function ago(seconds: number, now: Date = NOW): string {
  return new Date(now.getTime() - seconds * 1000).toISOString();
}

/**
 * A valid p5.48xlarge batch: `gpus` flush windows of 10 s ending at `now`, the metrics an idle
 * H100 shows in the real dcgm-exporter capture, and one Xid 48 event.
 */
export function validBatch(overrides: Partial<Batch> = {}, gpus = 8, now: Date = NOW): Batch {
  return {
    schema: 'gpu-sentinel/v1',
    batch_id: '8a7f3c52-6a0e-4b8e-9f3d-2f6c1e0b9a11',
    seq: 42,
    sent_at: ago(0, now),
    host: {
      instance_id: 'i-0a5e00000000000a1',
      instance_type: 'p5.48xlarge',
      region: 'us-east-1',
      az: 'us-east-1a',
      lifecycle: 'on-demand',
      asg_name: 'gpu-train-p5',
      tags: { team: 'training', job: 'llm-pretrain' },
    },
    agent: {
      version: '0.1.0',
      driver_version: '580.105.08',
      profiling_source: 'none',
      stats: { samples: 10 },
    },
    windows: Array.from({ length: gpus }, (_, index) => ({
      kind: 'flush' as const,
      start: ago(10, now),
      end: ago(0, now),
      gpu: {
        index,
        uuid: `GPU-c4529c8d-69c4-b61d-e0bc-7b246009600${index}`,
        name: 'NVIDIA H100 80GB HBM3',
        pci_bus_id: P5_BUS_IDS[index % 8],
      },
      metrics: {
        gpu_util: 0,
        mem_copy_util: 0,
        gpu_temp_c: 29,
        power_w: 67.3,
        fb_used_bytes: 0,
        fb_total_bytes: 85_520_809_984,
      },
    })),
    events: [
      { at: ago(5, now), kind: 'xid', xid: 48, source: 'kmsg', pci_bus_id: '0000:19:00.0', detail: 'DBE' },
    ],
    ...overrides,
  };
}
