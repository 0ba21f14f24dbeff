import { GPU_METRIC_NAMES, type GpuMetricName, METRIC_RANGES } from '../../lambdas/contract/field-rules';
import type { GpuIdentity, GpuMetrics, GpuWindow } from '../../lambdas/contract/schema';
import { unionProcesses } from './process-union';
import type { SampleColumns } from './sample-columns';
import {
  anyFlag,
  bitwiseOr,
  coefficientOfVariation,
  counterRate,
  lastOf,
  maxOf,
  maxStepRate,
  meanOf,
  minOf,
  monotonicDelta,
  shareMatching,
  steadySlope,
} from './statistics';

/**
 * Clocks-event reason bits that count as thermal throttling: HW slowdown 0x8 (thermal or power
 * brake), SW thermal slowdown 0x20, HW thermal slowdown 0x40
 * (`nvmlClocksEventReasonHwSlowdown | …SwThermalSlowdown | …HwThermalSlowdown`). HW slowdown counts
 * only when HW power brake 0x80 is not set with it: then the slowdown is the power brake's (a real
 * p5 capture shows `HW Slowdown: Active`, `HW Power Brake Slowdown: Active`,
 * `HW Thermal Slowdown: Not Active`), which is power throttling, not heat.
 */
export const THERMAL_THROTTLE_REASONS_MASK = 0x8 | 0x20 | 0x40;

const HW_SLOWDOWN = 0x8;
const SW_OR_HW_THERMAL_SLOWDOWN = 0x20 | 0x40;
const HW_POWER_BRAKE_SLOWDOWN = 0x80;

/**
 * Clocks-event reason bits that count as power throttling when no violation counter is read: SW power
 * cap 0x4 (clocks cut to stay under the power limit) and HW power brake 0x80 (external power-brake
 * signal) (`nvmlClocksEventReasonSwPowerCap | …HwPowerBrakeSlowdown`).
 */
export const POWER_THROTTLE_REASONS_MASK = 0x4 | 0x80;

/** Whether a clocks-event reasons bitmask (low 32 bits) says thermal throttling (see {@link THERMAL_THROTTLE_REASONS_MASK}). */
export function isThermalThrottle(reasons: number): boolean {
  return (
    (reasons & SW_OR_HW_THERMAL_SLOWDOWN) !== 0 ||
    ((reasons & HW_SLOWDOWN) !== 0 && (reasons & HW_POWER_BRAKE_SLOWDOWN) === 0)
  );
}

/** Whether a clocks-event reasons bitmask (low 32 bits) has the HW power brake (0x80), which no power-violation counter covers. */
function isPowerBrake(reasons: number): boolean {
  return (reasons & HW_POWER_BRAKE_SLOWDOWN) !== 0;
}

/** Whether a clocks-event reasons bitmask (low 32 bits) says power throttling (see {@link POWER_THROTTLE_REASONS_MASK}). */
export function isPowerThrottle(reasons: number): boolean {
  return (reasons & POWER_THROTTLE_REASONS_MASK) !== 0;
}

/**
 * A violation share above 1 by at most this much is clamped to 1 (the counter and the sample clock
 * are read a few ms apart); anything larger is a broken reading and is left out.
 */
const VIOLATION_SHARE_TOLERANCE = 0.05;

/** µs of violation per second of wall time, as a share of the time: Δµs / (Δs × 10^6). */
const US_PER_S = 1e6;

/** Contract bounds the aggregates are checked against before they go out. */
const POWER_MAX_W = METRIC_RANGES.watts.max;
const CV_MAX = 100;
const GROWTH_MAX_BYTES_PER_S = 1e12;

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
 * - `fb_used_growth_bytes_per_s`: the steady trend of `fb_used_bytes`, bytes/s ({@link steadySlope}:
 *   the least-squares slopes of the span's two halves, the one nearer zero when they agree in sign,
 *   0 when they do not, so a one-off allocation or a release is no growth), absent with < 3
 *   samples or beyond ±1e12;
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
 * - `clocks_event_reasons`: OR of the bitmasks;
 * - `thermal_throttle_ratio`, `power_throttle_ratio`: from the cumulative violation counter
 *   (`thermal_violation_us_total`, `power_violation_us_total`) when ≥ 2 samples have it over a
 *   positive span, the sum of its non-negative steps / (t_last − t_first) / 10^6 (the share of the
 *   wall time the clocks were held down; clamped to 1 within 5 %, absent beyond); otherwise the
 *   share of the samples having the bitmask that {@link isThermalThrottle} /
 *   {@link isPowerThrottle} accept (HW slowdown with HW power brake is power, not heat). NVML's
 *   power counter (`NVML_PERF_POLICY_POWER`) covers the SW power cap only: where the bitmask is
 *   read too, `power_throttle_ratio` is the larger of the counter's share and the share of samples
 *   with the HW power brake 0x80 (time throttled for at least one of the two);
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
  const inputs = metricInputs(columns);
  const metrics: Record<string, number | boolean> = {};
  // Indexed: `for…of` allocates an iterator result per rule under Maglev (the agent runs without
  // TurboFan; BENCHMARKS.md, 2026-11-28 "the agent's CPU per poll and window").
  for (let i = 0; i < METRIC_RULE_LIST.length; i++) {
    const entry = METRIC_RULE_LIST[i] as (typeof METRIC_RULE_LIST)[number]; // no array destructuring: it iterates too
    const value = entry[1](inputs);
    if (value !== undefined) metrics[entry[0]] = value;
  }
  const window: GpuWindow = {
    kind,
    start: start.toISOString(),
    end: end.toISOString(),
    gpu: { ...gpu },
    metrics: metrics as GpuMetrics,
  };
  if (columns.processesSeen)
    window.processes = unionProcesses(columns.processPids, columns.processFbUsedBytes);
  return window;
}

/** What a metric rule reads: the window's columns and the two values several rules share. */
interface MetricInputs {
  readonly f: SampleColumns['fields'];
  readonly at: Float64Array;
  /** Growth of the energy counter over the window (`monotonicDelta`), for `power_w` and `energy_j`. */
  readonly energy: { readonly delta: number; readonly spanS: number } | undefined;
  /** The last `fb_total_bytes`, for `fb_total_bytes` and the check of `fb_used_bytes`. */
  readonly fbTotal: number | undefined;
}

function metricInputs(columns: SampleColumns): MetricInputs {
  const f = columns.fields;
  return {
    f,
    at: columns.atMs,
    energy: monotonicDelta(columns.atMs, f.energy_mj_total),
    fbTotal: lastOf(f.fb_total_bytes),
  };
}

/**
 * One rule per contract metric (the methods are listed in {@link windowFromColumns}'s TSDoc).
 * A table rather than one function with a statement per metric, by measurement: TurboFan inlined
 * every statistic's loop into that one function, and compiling it took 54 ms and about 3.4 MB of
 * compiler memory on the agent's main thread (a VmHWM peak 4 MB above its steady RSS,
 * BENCHMARKS.md); called from the table's loop, each rule is compiled on its own, small.
 */
const METRIC_RULES: { readonly [K in GpuMetricName]: (x: MetricInputs) => GpuMetrics[K] } = {
  gpu_util: (x) => clampRatio(meanOf(x.f.gpu_util)),
  mem_copy_util: (x) => clampRatio(meanOf(x.f.mem_copy_util)),
  sm_active: (x) => clampRatio(meanOf(x.f.sm_active)),
  min_sm_active: (x) => clampRatio(minOf(x.f.sm_active)),
  max_sm_active: (x) => clampRatio(maxOf(x.f.sm_active)),
  sm_active_cv: (x) => atMost(coefficientOfVariation(x.f.sm_active), CV_MAX),
  sm_occupancy: (x) => clampRatio(meanOf(x.f.sm_occupancy)),
  tensor_active: (x) => clampRatio(meanOf(x.f.tensor_active)),
  dram_active: (x) => clampRatio(meanOf(x.f.dram_active)),
  fp16_active: (x) => clampRatio(meanOf(x.f.fp16_active)),
  fp32_active: (x) => clampRatio(meanOf(x.f.fp32_active)),
  fp64_active: (x) => clampRatio(meanOf(x.f.fp64_active)),

  pcie_tx_bytes_per_s: (x) => counterRate(x.at, x.f.pcie_tx_bytes_total) ?? meanOf(x.f.pcie_tx_bytes_per_s),
  pcie_rx_bytes_per_s: (x) => counterRate(x.at, x.f.pcie_rx_bytes_total) ?? meanOf(x.f.pcie_rx_bytes_per_s),
  max_pcie_rx_bytes_per_s: (x) =>
    maxStepRate(x.at, x.f.pcie_rx_bytes_total) ?? maxOf(x.f.pcie_rx_bytes_per_s),
  nvlink_tx_bytes_per_s: (x) => counterRate(x.at, x.f.nvlink_tx_bytes_total),
  nvlink_rx_bytes_per_s: (x) => counterRate(x.at, x.f.nvlink_rx_bytes_total),

  fb_used_bytes: (x) => {
    const used = lastOf(x.f.fb_used_bytes);
    return used !== undefined && (x.fbTotal === undefined || used <= x.fbTotal) ? used : undefined;
  },
  fb_used_growth_bytes_per_s: (x) => {
    const growth = steadySlope(x.at, x.f.fb_used_bytes);
    return growth !== undefined && Math.abs(growth) <= GROWTH_MAX_BYTES_PER_S ? growth : undefined;
  },
  fb_total_bytes: (x) => x.fbTotal,

  gpu_temp_c: (x) => meanOf(x.f.gpu_temp_c),
  max_gpu_temp_c: (x) => maxOf(x.f.gpu_temp_c),
  mem_temp_c: (x) => meanOf(x.f.mem_temp_c),

  power_w: (x) => {
    const e = x.energy;
    const fromEnergy = e && e.spanS > 0 ? e.delta / 1000 / e.spanS : undefined;
    return fromEnergy !== undefined && fromEnergy <= POWER_MAX_W ? fromEnergy : meanOf(x.f.power_w);
  },
  max_power_w: (x) => maxOf(x.f.power_w),
  min_power_w: (x) => minOf(x.f.power_w),
  power_cv: (x) => atMost(coefficientOfVariation(x.f.power_w), CV_MAX),
  power_limit_w: (x) => lastOf(x.f.power_limit_w),
  energy_j: (x) => (x.energy === undefined ? undefined : x.energy.delta / 1000),

  sm_clock_mhz: (x) => meanOf(x.f.sm_clock_mhz),
  mem_clock_mhz: (x) => meanOf(x.f.mem_clock_mhz),
  clocks_event_reasons: (x) => bitwiseOr(x.f.clocks_event_reasons),
  thermal_throttle_ratio: (x) =>
    violationShare(x.at, x.f.thermal_violation_us_total) ??
    shareMatching(x.f.clocks_event_reasons, isThermalThrottle),
  power_throttle_ratio: (x) => {
    const capped = violationShare(x.at, x.f.power_violation_us_total);
    if (capped === undefined) return shareMatching(x.f.clocks_event_reasons, isPowerThrottle);
    const braked = shareMatching(x.f.clocks_event_reasons, isPowerBrake);
    return braked === undefined ? capped : Math.max(capped, braked);
  },

  ecc_sbe_volatile: (x) => lastOf(x.f.ecc_sbe_volatile),
  ecc_sbe_volatile_delta: (x) => monotonicDelta(x.at, x.f.ecc_sbe_volatile)?.delta,
  ecc_dbe_volatile: (x) => lastOf(x.f.ecc_dbe_volatile),
  ecc_sbe_aggregate: (x) => lastOf(x.f.ecc_sbe_aggregate),
  ecc_dbe_aggregate: (x) => lastOf(x.f.ecc_dbe_aggregate),
  retired_pages_pending: (x) => anyFlag(x.f.retired_pages_pending),
  remapped_rows_pending: (x) => anyFlag(x.f.remapped_rows_pending),
  remapped_rows_failure: (x) => anyFlag(x.f.remapped_rows_failure),
  pcie_replay_count: (x) => lastOf(x.f.pcie_replay_count),
  pcie_replay_delta: (x) => monotonicDelta(x.at, x.f.pcie_replay_count)?.delta,
  nvlink_crc_errors: (x) => lastOf(x.f.nvlink_crc_errors),
  nvlink_crc_errors_delta: (x) => monotonicDelta(x.at, x.f.nvlink_crc_errors)?.delta,
  compute_processes: (x) => maxOf(x.f.compute_processes),
};

/** {@link METRIC_RULES} in the contract's metric order (JSON keeps insertion order, so windows read the same in every batch). */
const METRIC_RULE_LIST = GPU_METRIC_NAMES.map(
  (name) => [name, METRIC_RULES[name] as (x: MetricInputs) => number | boolean | undefined] as const,
);

function clampRatio(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.min(1, value);
}

/**
 * Share of the wall time a cumulative violation counter (µs) grew by: `counterRate` / 10^6, clamped
 * to 1 within {@link VIOLATION_SHARE_TOLERANCE}; `undefined` without a rate or beyond the tolerance.
 */
function violationShare(atMs: Float64Array, violationUs: Float64Array): number | undefined {
  const rate = counterRate(atMs, violationUs);
  if (rate === undefined) return undefined;
  const share = rate / US_PER_S;
  return share <= 1 + VIOLATION_SHARE_TOLERANCE ? Math.min(1, share) : undefined;
}

function atMost(value: number | undefined, max: number): number | undefined {
  return value !== undefined && value <= max ? value : undefined;
}
