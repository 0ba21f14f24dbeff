import type { GpuEvent } from '../../../lambdas/contract';
import type { GpuRow } from '../../window/gpu-row';
import type { GpuSample } from '../../window/gpu-sample';
import type { NvmlCallError } from './errors';

/**
 * Structured logger the source reports operator-relevant conditions to, once per condition
 * (a metric NOT_SUPPORTED on a GPU, a GPU lost or back, a failing call). A pino logger fits.
 */
export interface NvmlLogger {
  /** Normal conditions worth one line (a metric this GPU does not support). */
  info(data: Record<string, unknown>, message: string): void;
  /** Conditions an operator may act on (a lost GPU, a failing NVML call). */
  warn(data: Record<string, unknown>, message: string): void;
}

/** What one `sample(now)` read. */
export interface NvmlSampleResult {
  /** The `now` the caller passed. */
  readonly at: Date;
  /** One reading per GPU that answered; a lost GPU has no entry (its `gpu_lost` event says why). */
  readonly gpus: GpuSample[];
  /** `gpu_lost` events, one per loss (not repeated while the GPU stays lost). */
  readonly events: readonly GpuEvent[];
  /** Failed calls of this sample (and of `open()`, reported with the first sample); each also counted in `stats.nvml_errors`. */
  readonly errors: readonly NvmlCallError[];
}

/** What one `sampleRows(now)` read: {@link NvmlSampleResult} with the source's rows instead of objects. */
export interface NvmlRowSampleResult {
  /** The `now` the caller passed. */
  readonly at: Date;
  /** One row per GPU that answered, owned by the source: valid until its next `sampleRows()`. */
  readonly rows: readonly GpuRow[];
  /** `gpu_lost` events, one per loss. */
  readonly events: readonly GpuEvent[];
  /** Failed calls of this sample. */
  readonly errors: readonly NvmlCallError[];
}

/** Running counters of the source, for the batch's `agent.stats`. */
export interface NvmlSourceStats {
  /** `sample()` calls so far. */
  samples: number;
  /** NVML calls that answered an error other than NOT_SUPPORTED or a lost GPU, since `open()`. */
  nvml_errors: number;
}

/** Driver-wide versions, each absent when NVML cannot tell. */
export interface NvmlVersions {
  /** `nvmlSystemGetDriverVersion`, e.g. `535.161.08`. */
  readonly driver_version?: string;
  /** `nvmlSystemGetNVMLVersion`, e.g. `12.535.161.08`. */
  readonly nvml_version?: string;
  /** `nvmlSystemGetCudaDriverVersion_v2` (else the unversioned symbol) as `major.minor`, e.g. `12.2`. */
  readonly cuda_version?: string;
}

/**
 * A GPU's temperature thresholds, °C, read once at `open()` with
 * `nvmlDeviceGetTemperatureThreshold`; each absent when unsupported or failed. On Ada and newer
 * NVML prefers the T.Limit field values 193–196 (not read here).
 */
export interface NvmlTemperatureThresholds {
  /** `NVML_TEMPERATURE_THRESHOLD_SHUTDOWN` (0): the GPU shuts down at this temperature. */
  readonly shutdown_c?: number;
  /** `NVML_TEMPERATURE_THRESHOLD_SLOWDOWN` (1): hardware slowdown starts here. */
  readonly slowdown_c?: number;
  /** `NVML_TEMPERATURE_THRESHOLD_GPU_MAX` (3): maximum operating temperature. */
  readonly gpu_max_c?: number;
}

/** Where the profiling ratios (`sm_active`…) come from: NVML GPM (Hopper+) or nowhere. */
export type NvmlProfilingSource = 'gpm' | 'none';
