import koffi from 'koffi';
import {
  MAX_GPU_INSTANCE_ID,
  MIG_PROFILE_RULE,
  migComputeSlices,
  migProfileSlices,
} from '../../../lambdas/contract/mig';
import type { MigSliceReading } from '../../window/mig-slices';
import type { NvmlBinding } from './binding';
import { GPM_METRIC, GPM_MIN_INTERVAL_MS, GpmMetricsRequest, gpmValue } from './gpm-metrics';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { GpmState, NvmlGpuState } from './nvml-gpu-state';
import { word64 } from './nvml-metric-table';
import { MIG_FORCED_RESCAN_GAP_MS, MIG_RESCAN_INTERVAL_MS, MigLayoutScanner } from './nvml-mig-layout';
import { NVML_RETURN } from './nvml-return';
import type { NvmlLogger } from './nvml-types';
import { NVML_MEMORY_V2_VERSION, nvmlMemory, nvmlMemoryV2 } from './structs';

/** The ratios GPM gives per GPU instance, in request order: the ids of the whole-GPU path, plus GRAPHICS_UTIL for `gpu_util`. */
export const MIG_GPM_REQUESTS = [
  { metricId: GPM_METRIC.GRAPHICS_UTIL, field: 'gpu_util' },
  { metricId: GPM_METRIC.SM_UTIL, field: 'sm_active' },
  { metricId: GPM_METRIC.SM_OCCUPANCY, field: 'sm_occupancy' },
  { metricId: GPM_METRIC.ANY_TENSOR_UTIL, field: 'tensor_active' },
  { metricId: GPM_METRIC.DRAM_BW_UTIL, field: 'dram_active' },
] as const;

type MigRatio = (typeof MIG_GPM_REQUESTS)[number]['field'];

/** One GPU instance of a MIG GPU, found at open or after a re-partition. */
export interface NvmlMigSlice {
  /** `nvmlDeviceGetGpuInstanceId` of its MIG device(s), 0..63. */
  readonly gpuInstanceId: number;
  /** `<slices>g.<GB>gb` from `nvmlDeviceGetAttributes_v2` ({@link migProfileName}). */
  readonly profile: string;
  /**
   * The first MIG device handle of the instance (its memory is the instance's); refreshed at each
   * layout check, since NVML may hand out another handle for the same instance.
   */
  handle: bigint;
  /** Per-instance GPM samples; undefined where GPM per instance is not read. */
  gpm: GpmState | undefined;
}

/** A MIG GPU's slices and what this driver lets the agent read of them. */
export interface NvmlMigState {
  /** The GPU instances, by instance id. */
  readonly slices: readonly NvmlMigSlice[];
  /** `nvmlDeviceGetMemoryInfo(_v2)` on a MIG device answered NOT_SUPPORTED: no `fb_used_bytes`. */
  memoryOff: boolean;
  /** `nvmlGpmMigSampleGet` answered NOT_SUPPORTED (or GPM is missing): no per-instance ratios. */
  gpmOff: boolean;
  /** The readings of the last poll; undefined before the first or when the GPU did not answer. */
  readings: MigSliceReading[] | undefined;
  /** The first call on an instance that failed this poll (looked at after the poll), else undefined. */
  failedCall: string | undefined;
  /** Its `nvmlReturn_t`. */
  failedCode: number;
}

const TWO_POW_30 = 1_073_741_824;
const MIB = 1_048_576;

/**
 * The GPU instance profile name of a MIG device, as nvidia-smi and dcgm-exporter's `GPU_I_PROFILE`
 * write it: `<gpuInstanceSliceCount>g.<GB>gb`, where GB is the instance's share of the GPU's memory
 * rounded up to eighths, times the GPU's memory in whole GiB (NVIDIA go-nvlib
 * `pkg/nvlib/device/mig_profile.go`, `getMigMemorySizeGB`): 40,448 MiB of an 81,559 MiB H100 → `40`.
 * The media-extension suffix (`+me`) is not told by these attributes and is left out (docs/nvml.md §8).
 *
 * @param sliceCount - `nvmlDeviceAttributes_t.gpuInstanceSliceCount`, 1..8
 * @param memoryMiB - `nvmlDeviceAttributes_t.memorySizeMB` (MiB)
 * @param gpuTotalBytes - the whole GPU's memory, bytes (`nvmlDeviceGetMemoryInfo` of the parent)
 * @returns e.g. `3g.40gb`; undefined when a count is 0 or the memory unknown
 */
export function migProfileName(
  sliceCount: number,
  memoryMiB: number,
  gpuTotalBytes: number,
): string | undefined {
  if (sliceCount < 1 || sliceCount > 8 || memoryMiB <= 0 || gpuTotalBytes <= 0) return undefined;
  const eighths = Math.ceil(((memoryMiB * MIB) / gpuTotalBytes) * 8) / 8;
  const gb = Math.round(eighths * Math.ceil(gpuTotalBytes / TWO_POW_30));
  return `${sliceCount}g.${gb}gb`;
}

/**
 * Reads a GPU in MIG mode one GPU instance at a time: at open, its MIG devices
 * (`nvmlDeviceGetMaxMigDeviceCount`, `nvmlDeviceGetMigDeviceHandleByIndex`), each one's instance id
 * (`nvmlDeviceGetGpuInstanceId`) and profile (`nvmlDeviceGetAttributes_v2`); at every poll, each
 * instance's framebuffer used (`nvmlDeviceGetMemoryInfo_v2` on its MIG device) and its GPM ratios
 * (`nvmlGpmMigSampleGet` twice > 100 ms apart, then `nvmlGpmMetricsGet`). A call the driver lacks or
 * answers NOT_SUPPORTED leaves its fields absent and is logged once.
 *
 * Follows a re-partition without a restart: every {@link MIG_RESCAN_INTERVAL_MS} of polls, and at
 * once when a call on an instance fails, it reads the MIG mode and the instances again; when the set
 * of (instance id, profile) changed it frees the old GPM samples, opens the new layout and logs one
 * line naming both. A failed call on an instance is never a lost GPU (docs/nvml.md §8).
 */
export class NvmlMigReader {
  readonly #nvml: NvmlBinding;
  readonly #recorder: NvmlCallRecorder;
  readonly #logger: NvmlLogger;
  readonly #scanner: MigLayoutScanner;
  readonly #request = new GpmMetricsRequest(MIG_GPM_REQUESTS);
  readonly #sampleOut = new BigUint64Array(1);
  readonly #memory: Uint32Array = new Uint32Array(koffi.sizeof(nvmlMemoryV2) / 4);

  /** @param nvml - the binding; @param recorder - judges codes; @param logger - once-per-condition lines */
  constructor(nvml: NvmlBinding, recorder: NvmlCallRecorder, logger: NvmlLogger) {
    this.#nvml = nvml;
    this.#recorder = recorder;
    this.#logger = logger;
    this.#scanner = new MigLayoutScanner(nvml, recorder);
  }

  /**
   * Reads `nvmlDeviceGetMigMode` of a GPU (current mode), for discovery.
   *
   * @returns true in MIG mode; false out of it, or where the driver cannot tell (then MIG is not
   *   watched: `gpu.migWatched` false); undefined when the call failed
   */
  mode(gpu: NvmlGpuState, handle: bigint, at: Date): boolean | undefined {
    return this.#scanner.mode(gpu, handle, at);
  }

  /**
   * Finds the GPU instances of a GPU in MIG mode and allocates two GPM samples per instance where
   * `gpm` (the GPU has GPM). Keeps the layout it found in `gpu.migCheck` for later checks.
   *
   * @returns the state; undefined (the GPU is measured whole, activity absent) when the driver lacks
   *   the MIG device calls, a call fails, no instance exists, or the profiles do not add up to a GPU
   */
  open(gpu: NvmlGpuState, handle: bigint, gpm: boolean, at: Date): NvmlMigState | undefined {
    const n = this.#scanner.scan(gpu, handle, at);
    gpu.migCheck.layout = this.#scanner.copy();
    return this.#build(gpu, handle, n, gpm, at, undefined);
  }

  /**
   * Before a poll reads the GPU: looks at its MIG layout again when {@link MIG_RESCAN_INTERVAL_MS}
   * passed since the last look (the first poll only starts the count; a clock stepped back restarts
   * it). Nothing is called, and nothing allocated, between looks.
   *
   * @param gpm - the GPU has GPM (per-instance samples may be allocated)
   * @param atMs - the poll time, ms
   */
  check(gpu: NvmlGpuState, handle: bigint, gpm: boolean, atMs: number, at: Date): void {
    if (!gpu.migWatched || gpu.lost) return;
    const checkedAtMs = gpu.migCheck.checkedAtMs;
    if (checkedAtMs === undefined || atMs < checkedAtMs) {
      gpu.migCheck.checkedAtMs = atMs;
      return;
    }
    if (atMs - checkedAtMs >= MIG_RESCAN_INTERVAL_MS) this.#rescan(gpu, handle, gpm, atMs, at);
  }

  /**
   * After a poll read the instances: when a call on one failed, looks at the layout at once (at most
   * once per {@link MIG_FORCED_RESCAN_GAP_MS}). A changed layout explains the failure: this poll's
   * readings of the old instances are dropped (they may come from reused handles) and the new
   * layout is read from the next poll. Otherwise the failure is recorded as an `NvmlCallError`,
   * never as a lost GPU.
   */
  settle(gpu: NvmlGpuState, handle: bigint, gpm: boolean, atMs: number, at: Date): void {
    const state = gpu.mig;
    if (state === undefined || state.failedCall === undefined) return;
    const call = state.failedCall;
    const code = state.failedCode;
    state.failedCall = undefined;
    const check = gpu.migCheck;
    const forcedAtMs = check.forcedAtMs;
    if (forcedAtMs === undefined || atMs < forcedAtMs || atMs - forcedAtMs >= MIG_FORCED_RESCAN_GAP_MS) {
      check.forcedAtMs = atMs;
      if (this.#rescan(gpu, handle, gpm, atMs, at)) return;
    }
    this.#recorder.error(gpu, call, code);
  }

  /**
   * Reads every instance once into `state.readings`. A failed call on an instance leaves its field
   * absent and is kept in `state.failedCall` for {@link settle}, never judged here: it cannot make
   * the GPU lost (the parent's own calls, read before, say that).
   */
  read(gpu: NvmlGpuState, state: NvmlMigState, handle: bigint, atMs: number): void {
    const readings: MigSliceReading[] = [];
    for (const slice of state.slices) {
      const reading: { -readonly [K in keyof MigSliceReading]: MigSliceReading[K] } = {
        gpu_instance_id: slice.gpuInstanceId,
        gpu_instance_profile: slice.profile,
      };
      if (!state.memoryOff) {
        const used = this.#memoryUsed(gpu, state, slice);
        if (used !== undefined) reading.fb_used_bytes = used;
      }
      if (!state.gpmOff && slice.gpm !== undefined)
        this.#readGpm(gpu, state, slice, slice.gpm, handle, reading, atMs);
      readings.push(reading);
    }
    state.readings = readings;
  }

  /** Frees every instance's GPM samples (`nvmlGpmSampleFree`). */
  free(state: NvmlMigState): void {
    const free = this.#nvml.gpmSampleFree;
    for (const slice of state.slices) {
      if (free !== undefined && slice.gpm !== undefined) for (const sample of slice.gpm.samples) free(sample);
      slice.gpm = undefined;
    }
  }

  /**
   * Looks at the GPU's MIG mode and instances again. Out of MIG mode now: the instances are freed
   * and the GPU is read whole (its unsupported calls asked again). In MIG mode with another set of
   * (instance id, slices, memory) than the last look: the old samples are freed and the new layout
   * opened, with one log line naming the old and the new. Unchanged: only the instances' handles
   * are refreshed. @returns true when the layout changed
   */
  #rescan(gpu: NvmlGpuState, handle: bigint, gpm: boolean, atMs: number, at: Date): boolean {
    gpu.migCheck.checkedAtMs = atMs;
    const scanner = this.#scanner;
    const mode = scanner.mode(gpu, handle, at);
    if (mode === undefined || gpu.lost) return false;
    if (!mode) {
      if (!gpu.migMode) return false;
      const was = this.#describe(gpu);
      if (gpu.mig !== undefined) this.free(gpu.mig);
      gpu.mig = undefined;
      gpu.migMode = false;
      gpu.migCheck.layout = undefined;
      gpu.unsupported.fill(0);
      this.#logger.info(
        { gpu_index: gpu.index, mig: false, was },
        `GPU ${gpu.index} left MIG mode (its GPU instances were ${was}): read whole again, one window for the GPU`,
      );
      return true;
    }
    const n = scanner.scan(gpu, handle, at);
    if (gpu.lost) return false;
    if (gpu.migMode && scanner.same(gpu.migCheck.layout)) {
      if (gpu.mig !== undefined) this.#refreshHandles(gpu.mig, n);
      return false;
    }
    const was = gpu.migMode ? this.#describe(gpu) : 'none (MIG mode was off)';
    if (gpu.mig !== undefined) this.free(gpu.mig);
    gpu.mig = undefined;
    if (!gpu.migMode) gpu.unsupported.fill(0);
    gpu.migMode = true;
    gpu.migCheck.layout = scanner.copy();
    gpu.mig = this.#build(gpu, handle, n, gpm, at, was);
    return true;
  }

  /** The instances of the last scan as slices, with GPM samples where `gpm`; logs one line. */
  #build(
    gpu: NvmlGpuState,
    handle: bigint,
    n: number,
    gpm: boolean,
    at: Date,
    was: string | undefined,
  ): NvmlMigState | undefined {
    const scanner = this.#scanner;
    if (n < 0) return this.#whole(gpu, scanner.failure, was);
    if (n === 0) return this.#whole(gpu, 'it has no GPU instance', was);
    const totalBytes = this.#gpuTotalBytes(handle, gpu.identity.name);
    const layout = scanner.layout;
    const slices: NvmlMigSlice[] = [];
    for (let k = 0; k < n; k++) {
      const id = layout[1 + 3 * k] ?? 0;
      const profile =
        totalBytes === undefined
          ? undefined
          : migProfileName(layout[2 + 3 * k] ?? 0, layout[3 + 3 * k] ?? 0, totalBytes);
      if (profile === undefined || !MIG_PROFILE_RULE.pattern.test(profile) || id > MAX_GPU_INSTANCE_ID)
        return this.#whole(
          gpu,
          `GPU instance ${id} has no readable profile (the GPU's memory size is unknown)`,
          was,
        );
      slices.push({ gpuInstanceId: id, profile, handle: scanner.handles[k] ?? 0n, gpm: undefined });
    }
    const computeSlices = slices.reduce((sum, s) => sum + (migProfileSlices(s.profile) ?? 0), 0);
    if (computeSlices > migComputeSlices(gpu.identity.name))
      return this.#whole(
        gpu,
        `its instances hold ${computeSlices} compute slices, more than the GPU has`,
        was,
      );
    slices.sort((a, b) => a.gpuInstanceId - b.gpuInstanceId);
    const state: NvmlMigState = {
      slices,
      memoryOff: this.#nvml.memoryInfo === undefined,
      gpmOff: true,
      readings: undefined,
      failedCall: undefined,
      failedCode: 0,
    };
    if (gpm && this.#nvml.gpmMigSampleGet !== undefined) state.gpmOff = !this.#allocate(gpu, slices, at);
    const missing = [
      ...(state.memoryOff ? ['framebuffer used (no nvmlDeviceGetMemoryInfo)'] : []),
      ...(state.gpmOff
        ? [
            'sm_active, sm_occupancy, tensor_active, dram_active and gpu_util (no GPM per instance: before Hopper, or nvmlGpmMigSampleGet missing)',
          ]
        : []),
    ];
    const now = slices.map((s) => `${s.gpuInstanceId} ${s.profile}`).join(', ');
    this.#logger.info(
      {
        gpu_index: gpu.index,
        mig: true,
        gpu_instances: slices.map((s) => `${s.gpuInstanceId}:${s.profile}`),
        ...(was === undefined ? {} : { was }),
      },
      (was === undefined
        ? `GPU ${gpu.index} is in MIG mode: read per GPU instance (${now})`
        : `GPU ${gpu.index} was re-partitioned: GPU instances ${was} → ${now}; read per GPU instance`) +
        ', one window per instance' +
        (missing.length === 0 ? '' : `; not readable here: ${missing.join('; ')}`),
    );
    return state;
  }

  /** The GPU's instances for a log line, e.g. `1 3g.40gb, 5 2g.20gb`; `unreadable` when it had none. */
  #describe(gpu: NvmlGpuState): string {
    return gpu.mig === undefined
      ? 'unreadable'
      : gpu.mig.slices.map((s) => `${s.gpuInstanceId} ${s.profile}`).join(', ');
  }

  /** Takes each instance's handle from the last scan (same layout, so the same ids). */
  #refreshHandles(state: NvmlMigState, n: number): void {
    const { layout, handles } = this.#scanner;
    for (let i = 0; i < state.slices.length; i++) {
      const slice = state.slices[i] as NvmlMigSlice;
      for (let k = 0; k < n; k++)
        if (layout[1 + 3 * k] === slice.gpuInstanceId) slice.handle = handles[k] ?? slice.handle;
    }
  }

  #whole(gpu: NvmlGpuState, why: string, was: string | undefined): undefined {
    this.#logger.warn(
      { gpu_index: gpu.index, mig: true, ...(was === undefined ? {} : { was }) },
      `GPU ${gpu.index} is in MIG mode but its GPU instances cannot be read: ${why}` +
        (was === undefined ? '' : ` (it was re-partitioned; its instances were ${was})`) +
        '. Its activity stays absent; dcgm-exporter (DCGM_FI_PROF_GR_ENGINE_ACTIVE per GPU_I_ID) can measure the slices',
    );
    return undefined;
  }

  /** The GPU's memory, bytes: `nvmlDeviceGetMemoryInfo(_v2)` of the parent, else the `NNGB` of its name. */
  #gpuTotalBytes(handle: bigint, name: string | undefined): number | undefined {
    const nvml = this.#nvml;
    const mem = this.#memory;
    if (nvml.memoryInfo !== undefined) {
      mem.fill(0);
      if (nvml.memoryInfoVersion === 2) mem[0] = NVML_MEMORY_V2_VERSION;
      if (nvml.memoryInfo(handle, mem) === NVML_RETURN.SUCCESS) {
        const total = word64(
          mem,
          koffi.offsetof(nvml.memoryInfoVersion === 1 ? nvmlMemory : nvmlMemoryV2, 'total') / 4,
        );
        if (total > 0) return total;
      }
    }
    // Unprivileged callers may not read the parent's memory in MIG mode (nvml.h): `NVIDIA H100 80GB HBM3` → 80 GiB.
    const gb = name === undefined ? null : /\b(\d{1,4})GB\b/.exec(name);
    return gb ? Number(gb[1]) * TWO_POW_30 : undefined;
  }

  /** Two GPM samples per instance; false (and all freed) when an allocation fails. */
  #allocate(gpu: NvmlGpuState, slices: NvmlMigSlice[], at: Date): boolean {
    const { gpmSampleAlloc: alloc, gpmSampleFree: free } = this.#nvml;
    if (alloc === undefined || free === undefined) return false;
    for (const slice of slices) {
      const samples: bigint[] = [];
      for (let i = 0; i < 2; i++) {
        if (!this.#recorder.judge(gpu, undefined, 'nvmlGpmSampleAlloc', alloc(this.#sampleOut), at)) {
          for (const sample of samples) free(sample);
          this.free({
            slices,
            memoryOff: true,
            gpmOff: true,
            readings: undefined,
            failedCall: undefined,
            failedCode: 0,
          });
          return false;
        }
        samples.push(this.#sampleOut[0] ?? 0n);
      }
      slice.gpm = { samples: samples as [bigint, bigint], next: 0, previousAtMs: undefined };
    }
    return true;
  }

  #memoryUsed(gpu: NvmlGpuState, state: NvmlMigState, slice: NvmlMigSlice): number | undefined {
    const nvml = this.#nvml;
    const mem = this.#memory;
    const call = nvml.symbols.memoryInfo ?? 'nvmlDeviceGetMemoryInfo';
    mem.fill(0);
    if (nvml.memoryInfoVersion === 2) mem[0] = NVML_MEMORY_V2_VERSION;
    const code = nvml.memoryInfo?.(slice.handle, mem) ?? NVML_RETURN.ERROR_FUNCTION_NOT_FOUND;
    if (code === NVML_RETURN.ERROR_NOT_SUPPORTED) {
      state.memoryOff = true;
      this.#notSupported(gpu, call, 'framebuffer used per GPU instance');
      return undefined;
    }
    if (code !== NVML_RETURN.SUCCESS) return this.#failed(state, call, code);
    return word64(mem, koffi.offsetof(nvml.memoryInfoVersion === 1 ? nvmlMemory : nvmlMemoryV2, 'used') / 4);
  }

  #readGpm(
    gpu: NvmlGpuState,
    state: NvmlMigState,
    slice: NvmlMigSlice,
    gpm: GpmState,
    handle: bigint,
    reading: { -readonly [K in MigRatio]?: number },
    atMs: number,
  ): void {
    const { gpmMigSampleGet: sampleGet, gpmMetricsGet: metricsGet } = this.#nvml;
    if (sampleGet === undefined || metricsGet === undefined) return;
    const previousAtMs = gpm.previousAtMs;
    // Too soon: keep the older sample so the interval stays over NVML's 100 ms.
    if (previousAtMs !== undefined && atMs >= previousAtMs && atMs - previousAtMs < GPM_MIN_INTERVAL_MS)
      return;
    const newer = gpm.samples[gpm.next];
    const older = gpm.samples[gpm.next === 0 ? 1 : 0];
    const code = sampleGet(handle, slice.gpuInstanceId, newer);
    if (code === NVML_RETURN.ERROR_NOT_SUPPORTED) {
      state.gpmOff = true;
      this.#notSupported(
        gpu,
        'nvmlGpmMigSampleGet',
        'sm_active, sm_occupancy, tensor_active, dram_active and gpu_util per GPU instance',
      );
      return;
    }
    if (code !== NVML_RETURN.SUCCESS) {
      gpm.previousAtMs = undefined;
      this.#failed(state, 'nvmlGpmMigSampleGet', code);
      return;
    }
    gpm.previousAtMs = atMs;
    gpm.next = gpm.next === 0 ? 1 : 0;
    if (previousAtMs === undefined || atMs < previousAtMs) return;
    const request = this.#request;
    request.prepare(older, newer, MIG_GPM_REQUESTS.length);
    const metricsCode = metricsGet(request.buffer);
    if (metricsCode !== NVML_RETURN.SUCCESS) {
      this.#failed(state, 'nvmlGpmMetricsGet', metricsCode);
      return;
    }
    MIG_GPM_REQUESTS.forEach((metric, i) => {
      if (request.returnAt(i) !== NVML_RETURN.SUCCESS) return;
      const value = gpmValue(request.valueAt(i), 'percent');
      if (value !== undefined) reading[metric.field] = value;
    });
  }

  /** Keeps the poll's first failed call on an instance for {@link settle}. */
  #failed(state: NvmlMigState, call: string, code: number): undefined {
    if (state.failedCall === undefined) {
      state.failedCall = call;
      state.failedCode = code;
    }
    return undefined;
  }

  #notSupported(gpu: NvmlGpuState, call: string, what: string): void {
    this.#logger.info(
      { gpu_index: gpu.index, call, mig: true },
      `GPU ${gpu.index} does not support ${call} per GPU instance: ${what} stays absent and is not polled again`,
    );
  }
}
