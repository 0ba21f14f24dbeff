import type {
  EfaWindowRow,
  EventRow,
  GpuWindowRow,
  LedgerEntry,
  StoreRows,
} from '../../lambdas/domain/types';

/** p5.48xlarge on-demand price, USD/hour (us-east-1, June 2025 list price). */
export const P5_PRICE_USD_PER_HOUR = 55.04;

/**
 * A plausible ledger: p5.48xlarge (8 GPUs), `window_s` seconds, `efficiency` from SM active
 * (undefined: not measured), working GPU (underused waste).
 */
export function ledger(overrides: Partial<LedgerEntry> & { window_s?: number } = {}): LedgerEntry {
  const window_s = overrides.window_s ?? 10;
  const cost_usd = (P5_PRICE_USD_PER_HOUR / 8) * (window_s / 3600);
  const efficiency = 'efficiency' in overrides ? overrides.efficiency : 0.4;
  const underused_usd = efficiency === undefined ? 0 : cost_usd * (1 - efficiency);
  return {
    window_s,
    gpu_hours: window_s / 3600,
    price_usd_per_hour: P5_PRICE_USD_PER_HOUR,
    price_source: 'builtin:aws-2025-06',
    gpu_count: 8,
    cost_usd,
    ...(efficiency === undefined ? {} : { efficiency }),
    efficiency_source: efficiency === undefined ? 'none' : 'sm_active',
    processes_known: true,
    waste_class: efficiency === undefined ? 'unknown' : 'underused',
    idle_usd: 0,
    held_idle_usd: 0,
    underused_usd,
    broken_usd: 0,
    wasted_usd: underused_usd,
    throttled_usd: 0,
    ...overrides,
  };
}

/** A GPU window row of a p5.48xlarge, ending at `time` (10 s window), seq 7, GPU 0. */
export function gpuRow(overrides: Partial<GpuWindowRow> = {}): GpuWindowRow {
  const time = overrides.time ?? '2026-03-10T12:00:10.000Z';
  const l = overrides.ledger ?? ledger();
  return {
    time,
    start: new Date(Date.parse(time) - l.window_s * 1000).toISOString(),
    instance_id: 'i-0123456789abcdef0',
    instance_type: 'p5.48xlarge',
    region: 'us-east-1',
    az: 'us-east-1a',
    gpu_index: 0,
    gpu_uuid: 'GPU-7f3c2a1e-0000-4000-8000-000000000000',
    gpu_name: 'NVIDIA H100 80GB HBM3',
    team: 'vision',
    job: 'train-42',
    batch_id: '0b7e6f7a-1f2b-4c3d-8e9f-000000000007',
    seq: 7,
    metrics: {
      gpu_util: 0.97,
      sm_active: 0.4,
      fb_used_bytes: 60_000_000_000,
      fb_total_bytes: 85_520_809_984,
      power_w: 512.5,
      max_gpu_temp_c: 71,
      ecc_dbe_volatile: 0,
      remapped_rows_failure: false,
      compute_processes: 1,
    },
    ledger: l,
    ...overrides,
  };
}

/** An EFA window row (device rdmap16s27 port 1), seq 7. */
export function efaRow(overrides: Partial<EfaWindowRow> = {}): EfaWindowRow {
  return {
    time: '2026-03-10T12:00:10.000Z',
    start: '2026-03-10T12:00:00.000Z',
    instance_id: 'i-0123456789abcdef0',
    instance_type: 'p5.48xlarge',
    device: 'rdmap16s27',
    port: 1,
    seq: 7,
    deltas: { rx_drops: 0, rx_pkts: 1200, tx_pkts: 1100 },
    ...overrides,
  };
}

/** An XID 79 event on GPU 3, seq 7. */
export function eventRow(overrides: Partial<EventRow> = {}): EventRow {
  return {
    time: '2026-03-10T12:00:05.250Z',
    instance_id: 'i-0123456789abcdef0',
    instance_type: 'p5.48xlarge',
    gpu_index: 3,
    pci_bus_id: '0000:53:00.0',
    kind: 'xid',
    xid: 79,
    source: 'kmsg',
    detail: 'GPU has fallen off the bus.',
    batch_id: '0b7e6f7a-1f2b-4c3d-8e9f-000000000007',
    seq: 7,
    ...overrides,
  };
}

/** A batch: `gpus` GPU windows (indices 0..gpus−1), one EFA window, one event. */
export function batchRows(gpus = 8, overrides: Partial<GpuWindowRow> = {}): StoreRows {
  return {
    gpu: Array.from({ length: gpus }, (_, gpu_index) => gpuRow({ gpu_index, ...overrides })),
    efa: [efaRow(overrides.seq === undefined ? {} : { seq: overrides.seq })],
    events: [eventRow(overrides.seq === undefined ? {} : { seq: overrides.seq })],
  };
}
