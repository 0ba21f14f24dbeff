import type { GpuIdentity, GpuMetrics, GpuWindow } from '../../lambdas/contract';
import { MAX_COMPUTE_PROCESSES } from '../../lambdas/contract';
import { WindowAggregationError } from './errors';
import type { GpuSample } from './gpu-sample';

/**
 * Tolerance above 1 for a ratio: NVML percentages are integers, but a source that divides or
 * averages may give 100.0001 % by rounding. Such values are clamped to 1; anything larger is a
 * broken reading and is left out (absent), never clamped into a fake 100 %.
 */
export const RATIO_ROUNDING_TOLERANCE = 1e-3;

/** Contract range of a temperature, °C (lambdas/contract schema `celsius`). Readings outside are left out. */
const TEMP_MIN_C = -40;
const TEMP_MAX_C = 150;
/** Contract range of a power, W (schema `watts`). NVML's "not available" 0xFFFFFFFF mW lands above it. */
const POWER_MAX_W = 5000;
/** Contract range of a clock, MHz (schema `mhz`). */
const CLOCK_MAX_MHZ = 10_000;

/**
 * Aggregates one GPU's samples of a window into a contract `GpuWindow` (`kind: 'flush'`).
 * Pure: no clock, no I/O. A field present in no sample stays absent; a reading outside the
 * contract's range (a broken sensor, NVML's 0xFFFFFFFF "not available") is left out of the
 * aggregate rather than passed on or clamped.
 *
 * - means: `gpu_util`, `mem_copy_util` (0..1; a mean within {@link RATIO_ROUNDING_TOLERANCE}
 *   above 1 is clamped to 1), `gpu_temp_c`, `sm_clock_mhz`, `mem_clock_mhz`;
 * - `max_gpu_temp_c`: maximum temperature;
 * - `power_w`: energy-counter delta / Δt between the first and last samples that have the
 *   counter (`nvmlDeviceGetTotalEnergyConsumption`, exact over the whole span even when the
 *   power reading is a 1 s average or an instant) when ≥ 2 samples have it and it never went
 *   backwards (a driver reload resets it); otherwise the mean of the `power_w` samples;
 * - `max_power_w`, `min_power_w`: extremes of the power samples;
 * - `power_cv`: population standard deviation / mean of the power samples; absent with fewer
 *   than 2 samples or a mean of 0;
 * - `energy_j`: counter delta / 1000 over the first→last span; absent with fewer than 2 counter
 *   samples or when the counter went backwards;
 * - last value: `power_limit_w`, `fb_used_bytes`, `fb_total_bytes` (`fb_used_bytes` left out if
 *   above the total), ECC counters (volatile and aggregate);
 * - OR: `remapped_rows_pending`, `remapped_rows_failure`;
 * - maximum: `compute_processes`.
 *
 * @param samples - the window's samples of this GPU, oldest first (`at_ms` ascending); may be empty
 * @param start - window start (inclusive)
 * @param end - window end; must be after `start`
 * @param gpu - the GPU's identity, copied into the window
 * @returns a `GpuWindow` that passes the contract's `GpuWindowSchema`
 * @throws {WindowAggregationError} when `end` is not after `start`, or a sample belongs to another GPU
 * @example
 * const window = aggregateWindow(buffered[0], windowStart, now, nvml.identity()[0]);
 */
export function aggregateWindow(
  samples: readonly GpuSample[],
  start: Date,
  end: Date,
  gpu: GpuIdentity,
): GpuWindow {
  if (!(end.getTime() > start.getTime())) {
    throw new WindowAggregationError(
      `Expected the window end to be after its start, got start ${isoOrInvalid(start)} and end ${isoOrInvalid(end)}. Pass the flush boundaries in order.`,
    );
  }
  const gpuUtil = new Mean();
  const memCopyUtil = new Mean();
  const temp = new Mean();
  const smClock = new Mean();
  const memClock = new Mean();
  const power = new Mean();
  let energyFirst: GpuSample | undefined;
  let energyLast: GpuSample | undefined;
  let energyCount = 0;
  let energyBackwards = false;
  const metrics: GpuMetrics = {};
  let fbUsed: number | undefined;
  let fbTotal: number | undefined;

  for (const sample of samples) {
    if (sample.gpu_index !== gpu.index) {
      throw new WindowAggregationError(
        `Expected samples of GPU ${gpu.index} only, got one of GPU ${sample.gpu_index}. Group samples by gpu_index before aggregating.`,
      );
    }
    gpuUtil.add(ratio(sample.gpu_util));
    memCopyUtil.add(ratio(sample.mem_copy_util));
    temp.add(inRange(sample.gpu_temp_c, TEMP_MIN_C, TEMP_MAX_C));
    smClock.add(inRange(sample.sm_clock_mhz, 0, CLOCK_MAX_MHZ));
    memClock.add(inRange(sample.mem_clock_mhz, 0, CLOCK_MAX_MHZ));
    power.add(inRange(sample.power_w, 0, POWER_MAX_W));

    const energy = countValue(sample.energy_mj_total);
    if (energy !== undefined) {
      if (energyLast?.energy_mj_total !== undefined && energy < energyLast.energy_mj_total)
        energyBackwards = true;
      energyFirst ??= sample;
      energyLast = sample;
      energyCount++;
    }
    const limit = inRange(sample.power_limit_w, 0, POWER_MAX_W);
    if (limit !== undefined) metrics.power_limit_w = limit;
    fbUsed = countValue(sample.fb_used_bytes) ?? fbUsed;
    fbTotal = countValue(sample.fb_total_bytes) ?? fbTotal;
    const sbeVolatile = countValue(sample.ecc_sbe_volatile);
    if (sbeVolatile !== undefined) metrics.ecc_sbe_volatile = sbeVolatile;
    const dbeVolatile = countValue(sample.ecc_dbe_volatile);
    if (dbeVolatile !== undefined) metrics.ecc_dbe_volatile = dbeVolatile;
    const sbeAggregate = countValue(sample.ecc_sbe_aggregate);
    if (sbeAggregate !== undefined) metrics.ecc_sbe_aggregate = sbeAggregate;
    const dbeAggregate = countValue(sample.ecc_dbe_aggregate);
    if (dbeAggregate !== undefined) metrics.ecc_dbe_aggregate = dbeAggregate;
    if (sample.remapped_rows_pending !== undefined) {
      metrics.remapped_rows_pending =
        (metrics.remapped_rows_pending ?? false) || sample.remapped_rows_pending;
    }
    if (sample.remapped_rows_failure !== undefined) {
      metrics.remapped_rows_failure =
        (metrics.remapped_rows_failure ?? false) || sample.remapped_rows_failure;
    }
    const processes = countValue(sample.compute_processes);
    if (processes !== undefined && processes <= MAX_COMPUTE_PROCESSES) {
      metrics.compute_processes = Math.max(metrics.compute_processes ?? 0, processes);
    }
  }

  setIfDefined(metrics, 'gpu_util', clampRatio(gpuUtil.mean()));
  setIfDefined(metrics, 'mem_copy_util', clampRatio(memCopyUtil.mean()));
  if (fbTotal !== undefined) metrics.fb_total_bytes = fbTotal;
  if (fbUsed !== undefined && (fbTotal === undefined || fbUsed <= fbTotal)) metrics.fb_used_bytes = fbUsed;
  setIfDefined(metrics, 'gpu_temp_c', temp.mean());
  setIfDefined(metrics, 'max_gpu_temp_c', temp.max);

  let energyPowerW: number | undefined;
  if (energyCount >= 2 && !energyBackwards && energyFirst !== undefined && energyLast !== undefined) {
    const deltaMj = (energyLast.energy_mj_total ?? 0) - (energyFirst.energy_mj_total ?? 0);
    metrics.energy_j = deltaMj / 1000;
    const spanS = (energyLast.at_ms - energyFirst.at_ms) / 1000;
    if (spanS > 0) energyPowerW = inRange(deltaMj / 1000 / spanS, 0, POWER_MAX_W);
  }
  setIfDefined(metrics, 'power_w', energyPowerW ?? power.mean());
  setIfDefined(metrics, 'max_power_w', power.max);
  setIfDefined(metrics, 'min_power_w', power.min);
  setIfDefined(metrics, 'power_cv', power.cv());
  setIfDefined(metrics, 'sm_clock_mhz', smClock.mean());
  setIfDefined(metrics, 'mem_clock_mhz', memClock.mean());

  return {
    kind: 'flush',
    start: start.toISOString(),
    end: end.toISOString(),
    gpu: { ...gpu },
    metrics: orderMetrics(metrics),
  };
}

/** Running mean, extremes and population variance (Welford) of the values added. */
class Mean {
  count = 0;
  #mean = 0;
  #m2 = 0;
  max: number | undefined;
  min: number | undefined;

  add(value: number | undefined): void {
    if (value === undefined) return;
    this.count++;
    const delta = value - this.#mean;
    this.#mean += delta / this.count;
    this.#m2 += delta * (value - this.#mean);
    if (this.max === undefined || value > this.max) this.max = value;
    if (this.min === undefined || value < this.min) this.min = value;
  }

  mean(): number | undefined {
    return this.count === 0 ? undefined : this.#mean;
  }

  /** Coefficient of variation, population stddev / mean; undefined with < 2 values or mean 0. */
  cv(): number | undefined {
    if (this.count < 2 || this.#mean === 0) return undefined;
    return Math.sqrt(Math.max(0, this.#m2) / this.count) / this.#mean;
  }
}

function inRange(value: number | undefined, min: number, max: number): number | undefined {
  return value !== undefined && Number.isFinite(value) && value >= min && value <= max ? value : undefined;
}

function ratio(value: number | undefined): number | undefined {
  return inRange(value, 0, 1 + RATIO_ROUNDING_TOLERANCE);
}

function clampRatio(value: number | undefined): number | undefined {
  return value === undefined ? undefined : Math.min(1, value);
}

function countValue(value: number | undefined): number | undefined {
  return value !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

function setIfDefined<K extends keyof GpuMetrics>(
  metrics: GpuMetrics,
  key: K,
  value: GpuMetrics[K] | undefined,
): void {
  if (value !== undefined) metrics[key] = value;
}

/** The contract's field order, so windows read the same in every batch (JSON keeps insertion order). */
const METRIC_ORDER = [
  'gpu_util',
  'mem_copy_util',
  'fb_used_bytes',
  'fb_total_bytes',
  'gpu_temp_c',
  'max_gpu_temp_c',
  'power_w',
  'max_power_w',
  'min_power_w',
  'power_cv',
  'power_limit_w',
  'energy_j',
  'sm_clock_mhz',
  'mem_clock_mhz',
  'ecc_sbe_volatile',
  'ecc_dbe_volatile',
  'ecc_sbe_aggregate',
  'ecc_dbe_aggregate',
  'remapped_rows_pending',
  'remapped_rows_failure',
  'compute_processes',
] as const satisfies readonly (keyof GpuMetrics)[];

function orderMetrics(metrics: GpuMetrics): GpuMetrics {
  const ordered: Record<string, unknown> = {};
  for (const key of METRIC_ORDER) {
    if (metrics[key] !== undefined) ordered[key] = metrics[key];
  }
  return ordered as GpuMetrics;
}

function isoOrInvalid(date: Date): string {
  return Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString();
}
