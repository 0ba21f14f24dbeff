import koffi from 'koffi';
import { NVML_GPM_METRIC_MAX, NVML_GPM_VERSION, nvmlGpmMetric, nvmlGpmMetricsGet } from './structs';

/** `nvmlGpmMetricId_t` values the source asks for (docs/nvml.md §7; nvml.h API 13). */
export const GPM_METRIC = {
  /** `NVML_GPM_METRIC_GRAPHICS_UTIL`: % of time any graphics/compute context was active → a MIG slice's `gpu_util` (DCGM maps `GR_ENGINE_ACTIVE` to it). */
  GRAPHICS_UTIL: 1,
  /** `NVML_GPM_METRIC_SM_UTIL`: % of SMs busy → `sm_active`. */
  SM_UTIL: 2,
  /** `NVML_GPM_METRIC_SM_OCCUPANCY`: % of theoretical warps resident → `sm_occupancy`. */
  SM_OCCUPANCY: 3,
  /** `NVML_GPM_METRIC_ANY_TENSOR_UTIL`: % of time any tensor pipe was active → `tensor_active`. */
  ANY_TENSOR_UTIL: 5,
  /** `NVML_GPM_METRIC_DRAM_BW_UTIL`: % of theoretical DRAM bandwidth → `dram_active`. */
  DRAM_BW_UTIL: 10,
  /** `NVML_GPM_METRIC_FP64_UTIL`: % (non-tensor FP64 pipe) → `fp64_active`. */
  FP64_UTIL: 11,
  /** `NVML_GPM_METRIC_FP32_UTIL`: % → `fp32_active`. */
  FP32_UTIL: 12,
  /** `NVML_GPM_METRIC_FP16_UTIL`: % → `fp16_active`. */
  FP16_UTIL: 13,
  /** `NVML_GPM_METRIC_PCIE_TX_PER_SEC`: MiB/s → `pcie_tx_bytes_per_s` (× 2^20). */
  PCIE_TX_PER_SEC: 20,
  /** `NVML_GPM_METRIC_PCIE_RX_PER_SEC`: MiB/s → `pcie_rx_bytes_per_s` (× 2^20). */
  PCIE_RX_PER_SEC: 21,
} as const;

/** The `GpuSample` fields GPM fills. */
export type GpmField =
  | 'sm_active'
  | 'sm_occupancy'
  | 'tensor_active'
  | 'dram_active'
  | 'fp16_active'
  | 'fp32_active'
  | 'fp64_active'
  | 'pcie_tx_bytes_per_s'
  | 'pcie_rx_bytes_per_s';

/** One requested metric: its id, the sample field it fills, and its unit. */
export interface GpmMetricRequest {
  readonly metricId: number;
  readonly field: GpmField;
  /** `percent` → 0..1 ratio; `mib_per_s` → bytes/s. */
  readonly unit: 'percent' | 'mib_per_s';
}

/**
 * The metrics of one `nvmlGpmMetricsGet` call, in request order: the 7 profiling ratios always,
 * then the two PCIe rates, requested only where the PCIe byte counters (fields 197/198) are absent.
 */
export const GPM_REQUESTS: readonly GpmMetricRequest[] = [
  { metricId: GPM_METRIC.SM_UTIL, field: 'sm_active', unit: 'percent' },
  { metricId: GPM_METRIC.SM_OCCUPANCY, field: 'sm_occupancy', unit: 'percent' },
  { metricId: GPM_METRIC.ANY_TENSOR_UTIL, field: 'tensor_active', unit: 'percent' },
  { metricId: GPM_METRIC.DRAM_BW_UTIL, field: 'dram_active', unit: 'percent' },
  { metricId: GPM_METRIC.FP16_UTIL, field: 'fp16_active', unit: 'percent' },
  { metricId: GPM_METRIC.FP32_UTIL, field: 'fp32_active', unit: 'percent' },
  { metricId: GPM_METRIC.FP64_UTIL, field: 'fp64_active', unit: 'percent' },
  { metricId: GPM_METRIC.PCIE_TX_PER_SEC, field: 'pcie_tx_bytes_per_s', unit: 'mib_per_s' },
  { metricId: GPM_METRIC.PCIE_RX_PER_SEC, field: 'pcie_rx_bytes_per_s', unit: 'mib_per_s' },
];

/** Metrics requested when the PCIe byte counters are available (the first 7 of `GPM_REQUESTS`). */
export const GPM_PROFILING_METRICS = 7;

/** NVML wants more than 100 ms between the two GPM samples of one interval (nvml.h, `nvmlGpmSampleGet`). */
export const GPM_MIN_INTERVAL_MS = 100;

/** How far above 1 (or below 0) a ratio may round and still be clamped; beyond it the reading is dropped. */
export const GPM_RATIO_TOLERANCE = 1e-3;

const MIB = 1_048_576;
const METRIC_STRIDE = koffi.sizeof(nvmlGpmMetric);
const OFFSET_METRICS = koffi.offsetof(nvmlGpmMetricsGet, 'metrics');
const OFFSET_NUM = koffi.offsetof(nvmlGpmMetricsGet, 'numMetrics');
const OFFSET_SAMPLE1 = koffi.offsetof(nvmlGpmMetricsGet, 'sample1');
const OFFSET_SAMPLE2 = koffi.offsetof(nvmlGpmMetricsGet, 'sample2');
const OFFSET_METRIC_RETURN = koffi.offsetof(nvmlGpmMetric, 'nvmlReturn');
const OFFSET_METRIC_VALUE = koffi.offsetof(nvmlGpmMetric, 'value');
/** The offsets above in 32-bit words (every member is 4-byte aligned; the handles and `value` 8-byte). */
const METRIC_STRIDE_WORDS = METRIC_STRIDE / 4;
const WORD_METRICS = OFFSET_METRICS / 4;
const WORD_NUM = OFFSET_NUM / 4;
const WORD_METRIC_RETURN = OFFSET_METRIC_RETURN / 4;
const WORD_METRIC_VALUE = OFFSET_METRIC_VALUE / 4;

/**
 * A reusable `nvmlGpmMetricsGet_t` (the safe 333-entry layout, 13,344 bytes) in a Buffer: version
 * and metric ids written once, the two sample handles and `numMetrics` per call, answers decoded in
 * place. One instance serves every GPU (calls are synchronous).
 */
export class GpmMetricsRequest {
  readonly #memory = new ArrayBuffer(koffi.sizeof(nvmlGpmMetricsGet));
  /** The struct passed to `nvmlGpmMetricsGet`. */
  readonly buffer = Buffer.from(this.#memory);
  /**
   * Views of {@link buffer} by element type, read and written in place of `Buffer`'s checked
   * `readUInt32LE`/`writeBigUInt64LE`/`fill`… (JavaScript functions with range checks, a call each:
   * at every poll of every GPU). Native byte order, as NVML writes it (little-endian on x86-64 and
   * arm64, the agent's targets); the buffer is its own `ArrayBuffer`, so every member is aligned.
   */
  readonly #u32 = new Uint32Array(this.#memory);
  readonly #u64 = new BigUint64Array(this.#memory);
  readonly #f64 = new Float64Array(this.#memory);
  readonly #requests: readonly { readonly metricId: number }[];

  /**
   * @param requests - the metrics asked for, in order (entry `i` of the answer is request `i`)
   * @default GPM_REQUESTS
   * @throws {RangeError} when there are more than `NVML_GPM_METRIC_MAX`
   */
  constructor(requests: readonly { readonly metricId: number }[] = GPM_REQUESTS) {
    this.#requests = requests;
    this.buffer.writeUInt32LE(NVML_GPM_VERSION, koffi.offsetof(nvmlGpmMetricsGet, 'version'));
    if (requests.length > NVML_GPM_METRIC_MAX) throw new RangeError('too many GPM metrics');
  }

  /**
   * Fills the request for one interval.
   * @param sample1 - the older `nvmlGpmSample_t`
   * @param sample2 - the newer `nvmlGpmSample_t`
   * @param numMetrics - how many of the requests to ask for (the first `numMetrics`; 7 or 9 of `GPM_REQUESTS`)
   */
  prepare(sample1: bigint, sample2: bigint, numMetrics: number): void {
    const words = this.#u32;
    words[WORD_NUM] = numMetrics;
    this.#u64[OFFSET_SAMPLE1 / 8] = sample1;
    this.#u64[OFFSET_SAMPLE2 / 8] = sample2;
    for (let i = 0; i < numMetrics; i++) {
      const at = WORD_METRICS + i * METRIC_STRIDE_WORDS;
      words.fill(0, at, at + METRIC_STRIDE_WORDS);
      words[at] = (this.#requests[i] as { readonly metricId: number }).metricId;
    }
  }

  /** The per-metric `nvmlReturn` of entry `i`. */
  returnAt(i: number): number {
    return this.#u32[WORD_METRICS + i * METRIC_STRIDE_WORDS + WORD_METRIC_RETURN] as number;
  }

  /** The raw `value` (double) of entry `i`, in the metric's unit. */
  valueAt(i: number): number {
    return this.#f64[(WORD_METRICS + i * METRIC_STRIDE_WORDS + WORD_METRIC_VALUE) / 2] as number;
  }
}

/**
 * Converts a GPM value to the sample's unit.
 *
 * @param value - the metric's `value` (% for ratios, MiB/s for rates)
 * @param unit - the metric's unit
 * @returns a 0..1 ratio (% / 100; within `GPM_RATIO_TOLERANCE` of the bounds clamped to them) or
 *   bytes/s (MiB/s × 2^20, ≥ 0); undefined for NaN, infinities, or a ratio further out of range
 *   (a bad reading is absent, never forced into range)
 * @example
 * gpmValue(100.05, 'percent'); // 1
 * gpmValue(2, 'percent');      // 0.02
 */
export function gpmValue(value: number, unit: GpmMetricRequest['unit']): number | undefined {
  if (!Number.isFinite(value)) return undefined;
  if (unit === 'mib_per_s') return value < 0 ? undefined : value * MIB;
  const ratio = value / 100;
  if (ratio >= 0 && ratio <= 1) return ratio;
  if (ratio > 1 && ratio <= 1 + GPM_RATIO_TOLERANCE) return 1;
  if (ratio < 0 && ratio >= -GPM_RATIO_TOLERANCE) return 0;
  return undefined;
}
