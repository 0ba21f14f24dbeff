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
import { nvmlDeviceAttributes } from './mig-structs';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { GpmState, NvmlGpuState } from './nvml-gpu-state';
import { word64 } from './nvml-metric-table';
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

/** One GPU instance of a MIG GPU, found at open. */
export interface NvmlMigSlice {
  /** `nvmlDeviceGetGpuInstanceId` of its MIG device(s), 0..63. */
  readonly gpuInstanceId: number;
  /** `<slices>g.<GB>gb` from `nvmlDeviceGetAttributes_v2` ({@link migProfileName}). */
  readonly profile: string;
  /** The first MIG device handle of the instance (its memory is the instance's). */
  readonly handle: bigint;
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
}

const TWO_POW_30 = 1_073_741_824;
const MIB = 1_048_576;

/**
 * The GPU instance profile name of a MIG device, as nvidia-smi and dcgm-exporter's `GPU_I_PROFILE`
 * write it: `<gpuInstanceSliceCount>g.<GB>gb`, where GB is the instance's share of the GPU's memory
 * rounded up to eighths, times the GPU's memory in whole GiB (NVIDIA go-nvlib
 * `pkg/nvlib/device/mig_profile.go`, `getMigMemorySizeGB`): 40,448 MiB of an 81,559 MiB H100 → `40`.
 * The media-extension suffix (`+me`) is not told by these attributes and is left out.
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
 */
export class NvmlMigReader {
  readonly #nvml: NvmlBinding;
  readonly #recorder: NvmlCallRecorder;
  readonly #logger: NvmlLogger;
  readonly #request = new GpmMetricsRequest(MIG_GPM_REQUESTS);
  readonly #u32 = new Uint32Array(1);
  readonly #handleOut = new BigUint64Array(1);
  readonly #sampleOut = new BigUint64Array(1);
  readonly #attributes = Buffer.alloc(koffi.sizeof(nvmlDeviceAttributes));
  readonly #memory: Uint32Array = new Uint32Array(koffi.sizeof(nvmlMemoryV2) / 4);

  /** @param nvml - the binding; @param recorder - judges codes; @param logger - once-per-condition lines */
  constructor(nvml: NvmlBinding, recorder: NvmlCallRecorder, logger: NvmlLogger) {
    this.#nvml = nvml;
    this.#recorder = recorder;
    this.#logger = logger;
  }

  /**
   * Finds the GPU instances of a GPU in MIG mode and allocates two GPM samples per instance where
   * `gpm` (the GPU has GPM).
   *
   * @returns the state; undefined (the GPU is measured whole, activity absent) when the driver lacks
   *   the MIG device calls, a call fails, no instance exists, or the profiles do not add up to a GPU
   */
  open(gpu: NvmlGpuState, handle: bigint, gpm: boolean, at: Date): NvmlMigState | undefined {
    const nvml = this.#nvml;
    const { maxMigDeviceCount, migDeviceHandleByIndex, gpuInstanceId, deviceAttributes } = nvml;
    if (!maxMigDeviceCount || !migDeviceHandleByIndex || !gpuInstanceId || !deviceAttributes) {
      return this.#whole(
        gpu,
        'the driver lacks the MIG device calls (nvmlDeviceGetMigDeviceHandleByIndex and friends)',
      );
    }
    const recorder = this.#recorder;
    const u32 = this.#u32;
    if (!recorder.judge(gpu, undefined, 'nvmlDeviceGetMaxMigDeviceCount', maxMigDeviceCount(handle, u32), at))
      return this.#whole(gpu, 'nvmlDeviceGetMaxMigDeviceCount failed');
    const max = u32[0] ?? 0;
    const totalBytes = this.#gpuTotalBytes(handle, gpu.identity.name);
    const slices: NvmlMigSlice[] = [];
    for (let index = 0; index < max; index++) {
      const code = migDeviceHandleByIndex(handle, index, this.#handleOut);
      if (code === NVML_RETURN.ERROR_NOT_FOUND) continue; // no MIG device at this index
      if (!recorder.judge(gpu, undefined, 'nvmlDeviceGetMigDeviceHandleByIndex', code, at))
        return this.#whole(gpu, `nvmlDeviceGetMigDeviceHandleByIndex(${index}) answered ${code}`);
      const mig = this.#handleOut[0] ?? 0n;
      if (!recorder.judge(gpu, undefined, 'nvmlDeviceGetGpuInstanceId', gpuInstanceId(mig, u32), at))
        return this.#whole(gpu, 'nvmlDeviceGetGpuInstanceId failed');
      const id = u32[0] ?? 0;
      // Several compute instances of one GPU instance: the first MIG device stands for it.
      if (slices.some((s) => s.gpuInstanceId === id)) continue;
      if (
        !recorder.judge(
          gpu,
          undefined,
          'nvmlDeviceGetAttributes_v2',
          deviceAttributes(mig, this.#attributes),
          at,
        )
      )
        return this.#whole(gpu, 'nvmlDeviceGetAttributes_v2 failed: the instance profiles are unknown');
      const attributes = koffi.decode(this.#attributes, nvmlDeviceAttributes) as {
        gpuInstanceSliceCount: number;
        memorySizeMB: number | bigint;
      };
      const profile =
        totalBytes === undefined
          ? undefined
          : migProfileName(attributes.gpuInstanceSliceCount, Number(attributes.memorySizeMB), totalBytes);
      if (profile === undefined || !MIG_PROFILE_RULE.pattern.test(profile) || id > MAX_GPU_INSTANCE_ID)
        return this.#whole(
          gpu,
          `GPU instance ${id} has no readable profile (the GPU's memory size is unknown)`,
        );
      slices.push({ gpuInstanceId: id, profile, handle: mig, gpm: undefined });
    }
    if (slices.length === 0) return this.#whole(gpu, 'it has no GPU instance');
    const computeSlices = slices.reduce((n, s) => n + (migProfileSlices(s.profile) ?? 0), 0);
    if (computeSlices > migComputeSlices(gpu.identity.name))
      return this.#whole(gpu, `its instances hold ${computeSlices} compute slices, more than the GPU has`);
    slices.sort((a, b) => a.gpuInstanceId - b.gpuInstanceId);
    const state: NvmlMigState = {
      slices,
      memoryOff: nvml.memoryInfo === undefined,
      gpmOff: true,
      readings: undefined,
    };
    if (gpm && nvml.gpmMigSampleGet !== undefined) state.gpmOff = !this.#allocate(gpu, slices, at);
    const missing = [
      ...(state.memoryOff ? ['framebuffer used (no nvmlDeviceGetMemoryInfo)'] : []),
      ...(state.gpmOff
        ? [
            'sm_active, sm_occupancy, tensor_active, dram_active and gpu_util (no GPM per instance: before Hopper, or nvmlGpmMigSampleGet missing)',
          ]
        : []),
    ];
    this.#logger.info(
      {
        gpu_index: gpu.index,
        mig: true,
        gpu_instances: slices.map((s) => `${s.gpuInstanceId}:${s.profile}`),
      },
      `GPU ${gpu.index} is in MIG mode: read per GPU instance (${slices.map((s) => `${s.gpuInstanceId} ${s.profile}`).join(', ')}), one window per instance` +
        (missing.length === 0 ? '' : `; not readable here: ${missing.join('; ')}`),
    );
    return state;
  }

  /** Reads every instance once into `state.readings`. @returns false when the GPU was lost meanwhile */
  read(gpu: NvmlGpuState, state: NvmlMigState, handle: bigint, atMs: number, at: Date): boolean {
    const readings: MigSliceReading[] = [];
    for (const slice of state.slices) {
      const reading: { -readonly [K in keyof MigSliceReading]: MigSliceReading[K] } = {
        gpu_instance_id: slice.gpuInstanceId,
        gpu_instance_profile: slice.profile,
      };
      if (!state.memoryOff) {
        const used = this.#memoryUsed(gpu, state, slice, at);
        if (used !== undefined) reading.fb_used_bytes = used;
      }
      if (!state.gpmOff && slice.gpm !== undefined)
        this.#readGpm(gpu, state, slice, slice.gpm, handle, reading, atMs, at);
      if (gpu.lost) {
        state.readings = undefined;
        return false;
      }
      readings.push(reading);
    }
    state.readings = readings;
    return true;
  }

  /** Frees every instance's GPM samples (`nvmlGpmSampleFree`). */
  free(state: NvmlMigState): void {
    const free = this.#nvml.gpmSampleFree;
    for (const slice of state.slices) {
      if (free !== undefined && slice.gpm !== undefined) for (const sample of slice.gpm.samples) free(sample);
      slice.gpm = undefined;
    }
  }

  #whole(gpu: NvmlGpuState, why: string): undefined {
    this.#logger.warn(
      { gpu_index: gpu.index, mig: true },
      `GPU ${gpu.index} is in MIG mode but its GPU instances cannot be read: ${why}. Its activity stays absent; dcgm-exporter (DCGM_FI_PROF_GR_ENGINE_ACTIVE per GPU_I_ID) can measure the slices`,
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
          this.free({ slices, memoryOff: true, gpmOff: true, readings: undefined });
          return false;
        }
        samples.push(this.#sampleOut[0] ?? 0n);
      }
      slice.gpm = { samples: samples as [bigint, bigint], next: 0, previousAtMs: undefined };
    }
    return true;
  }

  #memoryUsed(gpu: NvmlGpuState, state: NvmlMigState, slice: NvmlMigSlice, at: Date): number | undefined {
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
    if (!this.#recorder.judge(gpu, undefined, call, code, at)) return undefined;
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
    at: Date,
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
    if (!this.#recorder.judge(gpu, undefined, 'nvmlGpmMigSampleGet', code, at)) {
      gpm.previousAtMs = undefined;
      return;
    }
    gpm.previousAtMs = atMs;
    gpm.next = gpm.next === 0 ? 1 : 0;
    if (previousAtMs === undefined || atMs < previousAtMs) return;
    const request = this.#request;
    request.prepare(older, newer, MIG_GPM_REQUESTS.length);
    if (!this.#recorder.judge(gpu, undefined, 'nvmlGpmMetricsGet', metricsGet(request.buffer), at)) return;
    MIG_GPM_REQUESTS.forEach((metric, i) => {
      if (request.returnAt(i) !== NVML_RETURN.SUCCESS) return;
      const value = gpmValue(request.valueAt(i), 'percent');
      if (value !== undefined) reading[metric.field] = value;
    });
  }

  #notSupported(gpu: NvmlGpuState, call: string, what: string): void {
    this.#logger.info(
      { gpu_index: gpu.index, call, mig: true },
      `GPU ${gpu.index} does not support ${call} per GPU instance: ${what} stays absent and is not polled again`,
    );
  }
}
