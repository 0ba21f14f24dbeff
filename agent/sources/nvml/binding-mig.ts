import koffi from 'koffi';
import { nvmlDeviceAttributes } from './mig-structs';
import { nvmlDeviceHandle, nvmlGpmSampleHandle } from './structs';

/**
 * The NVML calls that read a GPU in MIG mode slice by slice (one GPU instance at a time), kept
 * apart from `binding.ts` so the per-instance reading stays one block. Signatures: nvml.h, API 13
 * (NVIDIA/go-nvml `pkg/nvml/nvml.h`); all Ampere and newer, Linux only; GPM per instance is Hopper
 * and newer. A MIG device handle maps to one compute instance: a GPU instance split into several
 * compute instances has several MIG device handles with the same GPU instance id.
 */
export interface NvmlMigBinding {
  /** `nvmlDeviceGetMaxMigDeviceCount(dev, uint *count)`: 0 when MIG is off or unsupported. */
  readonly maxMigDeviceCount?: (handle: bigint, out: Uint32Array) => number;
  /**
   * `nvmlDeviceGetMigDeviceHandleByIndex(dev, uint index, nvmlDevice_t *migDevice)`: NOT_FOUND (6)
   * for an index without a MIG device (indexes are not dense).
   */
  readonly migDeviceHandleByIndex?: (handle: bigint, index: number, out: BigUint64Array) => number;
  /** `nvmlDeviceGetGpuInstanceId(migDevice, uint *id)`: the GPU instance the MIG device belongs to. */
  readonly gpuInstanceId?: (migHandle: bigint, out: Uint32Array) => number;
  /**
   * `nvmlDeviceGetAttributes_v2(migDevice, nvmlDeviceAttributes_t *)`: slice counts and memory size
   * (MiB) of a MIG device; `out` is a Buffer of `koffi.sizeof(nvmlDeviceAttributes)` (40) bytes.
   */
  readonly deviceAttributes?: (migHandle: bigint, out: Buffer) => number;
  /**
   * `nvmlGpmMigSampleGet(dev, uint gpuInstanceId, nvmlGpmSample_t sample)`: a GPM sample of one GPU
   * instance, taken on the parent GPU's handle (Hopper and newer).
   */
  readonly gpmMigSampleGet?: (handle: bigint, gpuInstanceId: number, sample: bigint) => number;
}

/** The MIG calls, by their name in {@link NvmlMigBinding}. */
export type NvmlMigCall = keyof NvmlMigBinding;

type KoffiTypeSpec = Parameters<typeof koffi.sizeof>[0];

/** Newest symbol first, as in `binding.ts`: each call binds the first symbol the library exports. */
export const MIG_OPTIONAL_CALLS: Readonly<
  Record<NvmlMigCall, readonly { readonly symbol: string; readonly params: readonly KoffiTypeSpec[] }[]>
> = {
  maxMigDeviceCount: [{ symbol: 'nvmlDeviceGetMaxMigDeviceCount', params: [nvmlDeviceHandle, 'uint32 *'] }],
  migDeviceHandleByIndex: [
    {
      symbol: 'nvmlDeviceGetMigDeviceHandleByIndex',
      params: [nvmlDeviceHandle, 'uint32', koffi.pointer(nvmlDeviceHandle)],
    },
  ],
  gpuInstanceId: [{ symbol: 'nvmlDeviceGetGpuInstanceId', params: [nvmlDeviceHandle, 'uint32 *'] }],
  deviceAttributes: [
    { symbol: 'nvmlDeviceGetAttributes_v2', params: [nvmlDeviceHandle, koffi.pointer(nvmlDeviceAttributes)] },
  ],
  gpmMigSampleGet: [
    { symbol: 'nvmlGpmMigSampleGet', params: [nvmlDeviceHandle, 'uint32', nvmlGpmSampleHandle] },
  ],
};

/** The MIG calls' names, in binding order. */
export const NVML_MIG_CALLS = Object.keys(MIG_OPTIONAL_CALLS) as NvmlMigCall[];

/**
 * Binds every MIG call with `optional` (binding.ts's first-symbol-found binder).
 *
 * @param optional - binds one call by name; `undefined` when the library has none of its symbols
 * @returns the bound MIG calls; the ones the library lacks are absent
 */
export function bindMigCalls(optional: (call: NvmlMigCall) => unknown): NvmlMigBinding {
  const bound: Record<string, unknown> = {};
  for (const call of NVML_MIG_CALLS) {
    const fn = optional(call);
    if (fn !== undefined) bound[call] = fn;
  }
  return bound as NvmlMigBinding;
}
