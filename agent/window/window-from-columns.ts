import { GPU_METRIC_NAMES, METRIC_RANGES } from '../../lambdas/contract/field-rules';
import type { GpuIdentity, GpuMetrics, GpuWindow } from '../../lambdas/contract/schema';
import { unionProcesses } from './process-union';
import type { SampleColumns } from './sample-columns';
import {
  anyFlag,
  bitwiseOr,
  coefficientOfVariation,
  counterRate,
  lastOf,
  leastSquaresSlope,
  maxOf,
  maxStepRate,
  meanOf,
  minOf,
  monotonicDelta,
  shareWithAnyBit,
} from './statistics';

/**
 * Clocks-event reason bits that count as thermal throttling: HW slowdown 0x8 (thermal or power
 * brake), SW thermal slowdown 0x20, HW thermal slowdown 0x40
 * (`nvmlClocksEventReasonHwSlowdown | …SwThermalSlowdown | …HwThermalSlowdown`).
 */
export const THERMAL_THROTTLE_REASONS_MASK = 0x8 | 0x20 | 0x40;

/** Contract bounds the aggregates are checked against before they go out. */
const POWER_MAX_W = METRIC_RANGES.watts.max;
const CV_MAX = 100;
const GROWTH_MAX_BYTES_PER_S = 1e12;

/** The contract's metric order (JSON keeps insertion order, so windows read the same in every batch). */
const METRIC_ORDER: readonly (keyof GpuMetrics)[] = GPU_METRIC_NAMES;

/**
 * Builds a contract `GpuWindow` from one GPU's {@link SampleColumns}: the one place where each
 * metric is defined, shared by flush windows (`aggregateWindow`) and horizon windows
 * (`HorizonTracker`). Values outside the contract's range never reach a column (see
 * `FieldCheck`); a metric whose inputs are absent in every sample stays absent. Methods:
 *
 * - mean of the samples: `gpu_util`, `mem_copy_util`, `sm_active`, `sm_occupancy`,
 *   `tensor_active`, `dram_active`, `fp16_active`, `fp32_active`, `fp64_active` (ratios; a mean
 *   within the rounding tolerance above 1 is clamped to 1), `gpu_temp_c`, `mem_temp_c`,
 *   `sm_clock_mhz`, `mem_clock_mhz`;
 * - `min_sm_active`, `max_sm_active`: extremes of the `sm_active` samples (clamped to 1);
 *   `sm_active_cv`: population stddev / mean of the `sm_active` samples, absent with < 2
 *   samples or a mean of 0;
 * - `pcie_tx_bytes_per_s`, `pcie_rx_bytes_per_s`, `nvlink_tx_bytes_per_s`,
 *   `nvlink_rx_bytes_per_s`: from the cumulative counter when ≥ 2 samples have it over a
 *   positive span, the sum of its non-negative steps / (t_last − t_first) (a wrap or reset adds
 *   nothing); otherwise the mean of the instant rate samples (PCIe only; NVLink has no instant
 *   rate);
 * - `max_pcie_rx_bytes_per_s`: the highest step rate of the RX counter (Δbytes / Δt between
 *   consecutive samples, non-negative steps over Δt > 0); without such a step the highest
 *   instant RX rate;
 * - `fb_used_growth_bytes_per_s`: least-squares slope of `fb_used_bytes` against time, bytes/s,
 *   absent with < 3 samples or beyond ±1e12;
 * - `max_gpu_temp_c`, `max_power_w`, `min_power_w`: extremes of the samples;
 * - `power_w`: energy-counter delta / Δt between the first and last samples having the counter
 *   (`nvmlDeviceGetTotalEnergyConsumption`, exact over the span even when the power reading is a
 *   1 s average or an instant) when ≥ 2 samples have it, it never went backwards (a driver
 *   reload resets it) and Δt > 0; otherwise the mean of the `power_w` samples;
 * - `power_cv`: population stddev / mean of the power samples, absent with < 2 or a mean of 0;
 * - `energy_j`: energy-counter delta / 1000 over the first→last span; absent with < 2 counter
 *   samples or when the counter went backwards;
 * - last value: `power_limit_w`, `fb_used_bytes` (left out when above the last
 *   `fb_total_bytes`), `fb_total_bytes`, the four ECC counters, `pcie_replay_count`,
 *   `nvlink_crc_errors`;
 * - growth of a counter (`ecc_sbe_volatile_delta`, `pcie_replay_delta`,
 *   `nvlink_crc_errors_delta`): last − first present value (`monotonicDelta`), absent with < 2
 *   present values or when the counter went backwards (a driver reload or reset is never growth);
 * - `clocks_event_reasons`: OR of the bitmasks; `thermal_throttle_ratio`: share of the samples
 *   having the bitmask in which any of {@link THERMAL_THROTTLE_REASONS_MASK} is set;
 * - OR: `retired_pages_pending`, `remapped_rows_pending`, `remapped_rows_failure`;
 * - maximum: `compute_processes`;
 * - `processes` (beside the metrics): union by pid with each pid's largest memory, largest
 *   first, at most 64 (`unionProcesses`); absent when no sample had the field, `[]` when
 *   samples had it and listed none.
 *
 * @param kind - `'flush'` or `'horizon'`
 * @param columns - the window's samples of this GPU
 * @param start - window start; the caller checks `end > start`
 * @param end - window end
 * @param gpu - the GPU's identity, copied into the window
 * @returns a `GpuWindow` that passes the contract's `GpuWindowSchema`
 */
export function windowFromColumns(
  kind: GpuWindow['kind'],
  columns: SampleColumns,
  start: Date,
  end: Date,
  gpu: GpuIdentity,
): GpuWindow {
  const f = columns.fields;
  const at = columns.atMs;
  const m: GpuMetrics = {};

  m.gpu_util = clampRatio(meanOf(f.gpu_util));
  m.mem_copy_util = clampRatio(meanOf(f.mem_copy_util));
  m.sm_active = clampRatio(meanOf(f.sm_active));
  m.min_sm_active = clampRatio(minOf(f.sm_active));
  m.max_sm_active = clampRatio(maxOf(f.sm_active));
  m.sm_active_cv = atMost(coefficientOfVariation(f.sm_active), CV_MAX);
  m.sm_occupancy = clampRatio(meanOf(f.sm_occupancy));
  m.tensor_active = clampRatio(meanOf(f.tensor_active));
  m.dram_active = clampRatio(meanOf(f.dram_active));
  m.fp16_active = clampRatio(meanOf(f.fp16_active));
  m.fp32_active = clampRatio(meanOf(f.fp32_active));
  m.fp64_active = clampRatio(meanOf(f.fp64_active));

  m.pcie_tx_bytes_per_s = counterRate(at, f.pcie_tx_bytes_total) ?? meanOf(f.pcie_tx_bytes_per_s);
  m.pcie_rx_bytes_per_s = counterRate(at, f.pcie_rx_bytes_total) ?? meanOf(f.pcie_rx_bytes_per_s);
  m.max_pcie_rx_bytes_per_s = maxStepRate(at, f.pcie_rx_bytes_total) ?? maxOf(f.pcie_rx_bytes_per_s);
  m.nvlink_tx_bytes_per_s = counterRate(at, f.nvlink_tx_bytes_total);
  m.nvlink_rx_bytes_per_s = counterRate(at, f.nvlink_rx_bytes_total);

  const fbTotal = lastOf(f.fb_total_bytes);
  const fbUsed = lastOf(f.fb_used_bytes);
  if (fbUsed !== undefined && (fbTotal === undefined || fbUsed <= fbTotal)) m.fb_used_bytes = fbUsed;
  const growth = leastSquaresSlope(at, f.fb_used_bytes);
  if (growth !== undefined && Math.abs(growth) <= GROWTH_MAX_BYTES_PER_S)
    m.fb_used_growth_bytes_per_s = growth;
  m.fb_total_bytes = fbTotal;

  m.gpu_temp_c = meanOf(f.gpu_temp_c);
  m.max_gpu_temp_c = maxOf(f.gpu_temp_c);
  m.mem_temp_c = meanOf(f.mem_temp_c);

  const energy = monotonicDelta(at, f.energy_mj_total);
  const energyPowerW = energy && energy.spanS > 0 ? energy.delta / 1000 / energy.spanS : undefined;
  m.power_w = energyPowerW !== undefined && energyPowerW <= POWER_MAX_W ? energyPowerW : meanOf(f.power_w);
  m.max_power_w = maxOf(f.power_w);
  m.min_power_w = minOf(f.power_w);
  m.power_cv = atMost(coefficientOfVariation(f.power_w), CV_MAX);
  m.power_limit_w = lastOf(f.power_limit_w);
  m.energy_j = energy === undefined ? undefined : energy.delta / 1000;

  m.sm_clock_mhz = meanOf(f.sm_clock_mhz);
  m.mem_clock_mhz = meanOf(f.mem_clock_mhz);
  m.clocks_event_reasons = bitwiseOr(f.clocks_event_reasons);
  m.thermal_throttle_ratio = shareWithAnyBit(f.clocks_event_reasons, THERMAL_THROTTLE_REASONS_MASK);

  m.ecc_sbe_volatile = lastOf(f.ecc_sbe_volatile);
  m.ecc_sbe_volatile_delta = monotonicDelta(at, f.ecc_sbe_volatile)?.delta;
  m.ecc_dbe_volatile = lastOf(f.ecc_dbe_volatile);
  m.ecc_sbe_aggregate = lastOf(f.ecc_sbe_aggregate);
  m.ecc_dbe_aggregate = lastOf(f.ecc_dbe_aggregate);
  m.retired_pages_pending = anyFlag(f.retired_pages_pending);
  m.remapped_rows_pending = anyFlag(f.remapped_rows_pending);
  m.remapped_rows_failure = anyFlag(f.remapped_rows_failure);
  m.pcie_replay_count = lastOf(f.pcie_replay_count);
  m.pcie_replay_delta = monotonicDelta(at, f.pcie_replay_count)?.delta;
  m.nvlink_crc_errors = lastOf(f.nvlink_crc_errors);
  m.nvlink_crc_errors_delta = monotonicDelta(at, f.nvlink_crc_errors)?.delta;
  m.compute_processes = maxOf(f.compute_processes);

  const window: GpuWindow = {
    kind,
    start: start.toISOString(),
    end: end.toISOString(),
    gpu: { ...gpu },
    metrics: orderDefined(m),
  };
  if (columns.processesSeen)
    window.processes = unionProcesses(columns.processPids, columns.processFbUsedBytes);
  return window;
}

function clampRatio(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.min(1, value);
}

function atMost(value: number | undefined, max: number): number | undefined {
  return value !== undefined && value <= max ? value : undefined;
}

/** The defined metrics in the contract's order; `undefined` ones dropped (absent, not `null`). */
function orderDefined(metrics: GpuMetrics): GpuMetrics {
  const ordered: Record<string, unknown> = {};
  for (const key of METRIC_ORDER) if (metrics[key] !== undefined) ordered[key] = metrics[key];
  return ordered as GpuMetrics;
}
