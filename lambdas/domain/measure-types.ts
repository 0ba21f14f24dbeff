import type { GpuMetrics } from '../contract';
import type { LedgerEntry } from './types';

/** Timestream scalar measure type (also the DuckDB column type family). */
export type MeasureType = 'DOUBLE' | 'BIGINT' | 'BOOLEAN' | 'VARCHAR';

/**
 * Fixed type per GPU metric name, so a column never changes type across records (Timestream
 * rejects a measure whose type differs from earlier records): ratios, rates, power, temperatures,
 * clocks DOUBLE; byte counts, counters and bitmasks BIGINT; flags BOOLEAN. Exhaustive over
 * `GpuMetrics`: adding a metric to the contract fails to compile until it is typed here.
 */
export const GPU_METRIC_TYPES: { readonly [K in keyof Required<GpuMetrics>]: MeasureType } = {
  gpu_util: 'DOUBLE',
  mem_copy_util: 'DOUBLE',
  sm_active: 'DOUBLE',
  min_sm_active: 'DOUBLE',
  max_sm_active: 'DOUBLE',
  sm_active_cv: 'DOUBLE',
  sm_occupancy: 'DOUBLE',
  tensor_active: 'DOUBLE',
  dram_active: 'DOUBLE',
  fp16_active: 'DOUBLE',
  fp32_active: 'DOUBLE',
  fp64_active: 'DOUBLE',
  pcie_tx_bytes_per_s: 'DOUBLE',
  pcie_rx_bytes_per_s: 'DOUBLE',
  max_pcie_rx_bytes_per_s: 'DOUBLE',
  nvlink_tx_bytes_per_s: 'DOUBLE',
  nvlink_rx_bytes_per_s: 'DOUBLE',
  fb_used_bytes: 'BIGINT',
  fb_used_growth_bytes_per_s: 'DOUBLE',
  fb_total_bytes: 'BIGINT',
  gpu_temp_c: 'DOUBLE',
  max_gpu_temp_c: 'DOUBLE',
  mem_temp_c: 'DOUBLE',
  power_w: 'DOUBLE',
  max_power_w: 'DOUBLE',
  min_power_w: 'DOUBLE',
  power_cv: 'DOUBLE',
  power_limit_w: 'DOUBLE',
  energy_j: 'DOUBLE',
  sm_clock_mhz: 'DOUBLE',
  mem_clock_mhz: 'DOUBLE',
  clocks_event_reasons: 'BIGINT',
  thermal_throttle_ratio: 'DOUBLE',
  power_throttle_ratio: 'DOUBLE',
  ecc_sbe_volatile: 'BIGINT',
  ecc_sbe_volatile_delta: 'BIGINT',
  ecc_dbe_volatile: 'BIGINT',
  ecc_sbe_aggregate: 'BIGINT',
  ecc_dbe_aggregate: 'BIGINT',
  retired_pages_pending: 'BOOLEAN',
  remapped_rows_pending: 'BOOLEAN',
  remapped_rows_failure: 'BOOLEAN',
  pcie_replay_count: 'BIGINT',
  pcie_replay_delta: 'BIGINT',
  nvlink_crc_errors: 'BIGINT',
  nvlink_crc_errors_delta: 'BIGINT',
  compute_processes: 'BIGINT',
};

/** Fixed type per ledger field (docs/design.md §5), stored as measures next to the metrics. Exhaustive over `LedgerEntry`. */
export const LEDGER_MEASURE_TYPES: { readonly [K in keyof Required<LedgerEntry>]: MeasureType } = {
  window_s: 'DOUBLE',
  gpu_hours: 'DOUBLE',
  price_usd_per_hour: 'DOUBLE',
  price_source: 'VARCHAR',
  gpu_count: 'BIGINT',
  cost_usd: 'DOUBLE',
  efficiency: 'DOUBLE',
  efficiency_source: 'VARCHAR',
  processes_known: 'BOOLEAN',
  waste_class: 'VARCHAR',
  idle_usd: 'DOUBLE',
  held_idle_usd: 'DOUBLE',
  underused_usd: 'DOUBLE',
  broken_usd: 'DOUBLE',
  wasted_usd: 'DOUBLE',
  throttled_usd: 'DOUBLE',
  diagnosis: 'VARCHAR',
};

/** GPU metric names in a stable order (the key order of {@link GPU_METRIC_TYPES}). */
export const GPU_METRIC_NAMES = Object.keys(GPU_METRIC_TYPES) as ReadonlyArray<keyof GpuMetrics>;

/** Ledger field names in a stable order (the key order of {@link LEDGER_MEASURE_TYPES}). */
export const LEDGER_FIELD_NAMES = Object.keys(LEDGER_MEASURE_TYPES) as ReadonlyArray<keyof LedgerEntry>;
