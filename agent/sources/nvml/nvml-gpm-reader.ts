import { COLUMN_INDEX } from '../../window/gpu-row';
import type { NvmlBinding } from './binding';
import { NVML_FIELD } from './field-values';
import {
  GPM_MIN_INTERVAL_MS,
  GPM_PROFILING_METRICS,
  GPM_REQUESTS,
  type GpmMetricRequest,
  GpmMetricsRequest,
  gpmValue,
} from './gpm-metrics';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { GpmState, NvmlGpuState } from './nvml-gpu-state';
import { NVML_CALL_SLOTS } from './nvml-metric-table';
import { NVML_RETURN } from './nvml-return';
import type { NvmlLogger } from './nvml-types';
import { NVML_GPM_VERSION } from './structs';

/**
 * NVML GPM (Hopper and newer): the profiling ratios (`sm_active`, `sm_occupancy`,
 * `tensor_active`, `dram_active`, `fp*_active`, and PCIe rates where the PCIe byte fields are
 * absent) from two GPM samples per GPU used alternately. `open` asks support and allocates the two
 * samples; `read` takes a sample once ≥ `GPM_MIN_INTERVAL_MS` have passed since the last (by the
 * injected clock) and computes the metrics over the two.
 */
/** The row column of each GPM request, in request order. */
const GPM_COLUMNS: readonly number[] = GPM_REQUESTS.map((metric) => COLUMN_INDEX[metric.field]);

export class NvmlGpmReader {
  readonly #nvml: NvmlBinding;
  readonly #recorder: NvmlCallRecorder;
  readonly #logger: NvmlLogger;
  readonly #support = new Uint32Array(2);
  readonly #sampleOut = new BigUint64Array(1);
  readonly #request = new GpmMetricsRequest();

  /** @param nvml - the binding; @param recorder - judges codes; @param logger - the "no GPM" line */
  constructor(nvml: NvmlBinding, recorder: NvmlCallRecorder, logger: NvmlLogger) {
    this.#nvml = nvml;
    this.#recorder = recorder;
    this.#logger = logger;
  }

  /** GPM at open: support query, then two samples; undefined (fields absent) on any failure. */
  open(gpu: NvmlGpuState, handle: bigint, at: Date): GpmState | undefined {
    const nvml = this.#nvml;
    const { gpmQueryDeviceSupport: query, gpmSampleAlloc: alloc, gpmSampleFree: free } = nvml;
    if (query === undefined || alloc === undefined || free === undefined) return undefined;
    if (nvml.gpmSampleGet === undefined || nvml.gpmMetricsGet === undefined || gpu.lost) return undefined;
    const support = this.#support;
    support[0] = NVML_GPM_VERSION;
    support[1] = 0;
    const slot = NVML_CALL_SLOTS.gpm;
    if (!this.#recorder.judge(gpu, slot, 'nvmlGpmQueryDeviceSupport', query(handle, support), at))
      return undefined;
    if (support[1] === 0) {
      gpu.unsupported[slot] = 1;
      this.#logger.info(
        { gpu_index: gpu.index, call: 'nvmlGpmQueryDeviceSupport' },
        `GPU ${gpu.index} has no GPM (pre-Hopper): sm_active and the other profiling ratios stay absent`,
      );
      return undefined;
    }
    const samples: bigint[] = [];
    for (let i = 0; i < 2; i++) {
      const out = this.#sampleOut;
      if (!this.#recorder.judge(gpu, slot, 'nvmlGpmSampleAlloc', alloc(out), at)) {
        for (const sample of samples) free(sample);
        return undefined;
      }
      samples.push(out[0] ?? 0n);
    }
    return { samples: samples as [bigint, bigint], next: 0, previousAtMs: undefined };
  }

  /** @returns false when a call failed */
  read(
    gpu: NvmlGpuState,
    gpm: GpmState,
    handle: bigint,
    values: Float64Array,
    atMs: number,
    at: Date,
  ): boolean {
    const { gpmSampleGet: sampleGet, gpmMetricsGet: metricsGet } = this.#nvml;
    if (sampleGet === undefined || metricsGet === undefined) return false;
    const previousAtMs = gpm.previousAtMs;
    // Too soon: keep the older sample so the next interval is long enough.
    if (previousAtMs !== undefined && atMs >= previousAtMs && atMs - previousAtMs < GPM_MIN_INTERVAL_MS)
      return true;
    const newer = gpm.samples[gpm.next];
    const older = gpm.samples[gpm.next === 0 ? 1 : 0];
    if (!this.#recorder.judge(gpu, NVML_CALL_SLOTS.gpm, 'nvmlGpmSampleGet', sampleGet(handle, newer), at)) {
      gpm.previousAtMs = undefined;
      return false;
    }
    gpm.previousAtMs = atMs;
    gpm.next = gpm.next === 0 ? 1 : 0;
    // First sample, or the clock went back: nothing to compare with yet.
    if (previousAtMs === undefined || atMs < previousAtMs) return true;
    const pcieCounters =
      gpu.fields.has(NVML_FIELD.PCIE_COUNT_TX_BYTES) && gpu.fields.has(NVML_FIELD.PCIE_COUNT_RX_BYTES);
    const numMetrics = pcieCounters ? GPM_PROFILING_METRICS : GPM_REQUESTS.length;
    const request = this.#request;
    request.prepare(older, newer, numMetrics);
    if (!this.#recorder.judge(gpu, undefined, 'nvmlGpmMetricsGet', metricsGet(request.buffer), at))
      return false;
    for (let i = 0; i < numMetrics; i++) {
      if (request.returnAt(i) !== NVML_RETURN.SUCCESS) continue;
      const metric = GPM_REQUESTS[i] as GpmMetricRequest;
      const value = gpmValue(request.valueAt(i), metric.unit);
      if (value !== undefined) values[GPM_COLUMNS[i] as number] = value;
    }
    return true;
  }

  /** Frees a GPU's two GPM samples (`nvmlGpmSampleFree`). */
  free(gpm: GpmState): void {
    const free = this.#nvml.gpmSampleFree;
    if (free !== undefined) for (const sample of gpm.samples) free(sample);
  }
}
