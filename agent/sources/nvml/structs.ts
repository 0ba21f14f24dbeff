import koffi, { type TypeObject } from 'koffi';
import { NvmlAbiError } from './errors';

/**
 * koffi declarations of the NVML structs the source passes, and their reference layout on x86-64
 * (reference/gpu.md §1.4, measured by gcc and koffi). The types are anonymous on purpose: koffi's
 * type names are process-global, so another module that declares `nvmlDevice_t` cannot collide
 * with these.
 */

/** `nvmlDevice_t`: an opaque 8-byte handle; koffi 3 passes it as a `bigint`. */
export const nvmlDeviceHandle = koffi.pointer(koffi.opaque());

/** `nvmlPciInfo_t` (68 B): `nvmlDeviceGetPciInfo_v3`. `busId` is `00000000:19:00.0` (8-digit domain). */
export const nvmlPciInfo = koffi.struct({
  busIdLegacy: 'char[16]',
  domain: 'uint32',
  bus: 'uint32',
  device: 'uint32',
  pciDeviceId: 'uint32',
  pciSubSystemId: 'uint32',
  busId: 'char[32]',
});

/** `nvmlMemory_t` (24 B): `nvmlDeviceGetMemoryInfo`, bytes. */
export const nvmlMemory = koffi.struct({ total: 'uint64', free: 'uint64', used: 'uint64' });

/** `nvmlMemory_v2_t` (40 B): `nvmlDeviceGetMemoryInfo_v2`, bytes; `version` must be set before the call. */
export const nvmlMemoryV2 = koffi.struct({
  version: 'uint32',
  total: 'uint64',
  reserved: 'uint64',
  free: 'uint64',
  used: 'uint64',
});

/** `nvmlUtilization_t` (8 B): `nvmlDeviceGetUtilizationRates`, percent. */
export const nvmlUtilization = koffi.struct({ gpu: 'uint32', memory: 'uint32' });

/** `nvmlProcessInfo_t` = `nvmlProcessInfo_v2_t` (24 B): `nvmlDeviceGetComputeRunningProcesses_v3`. */
export const nvmlProcessInfo = koffi.struct({
  pid: 'uint32',
  usedGpuMemory: 'uint64',
  gpuInstanceId: 'uint32',
  computeInstanceId: 'uint32',
});

/** `NVML_STRUCT_VERSION(Memory, 2)` = `sizeof(nvmlMemory_v2_t) | 2 << 24` = `0x02000028`. */
export const NVML_MEMORY_V2_VERSION = 0x0200_0028;

/** The reference layout of one struct: size and field offsets in bytes. */
export interface NvmlStructLayout {
  /** The C type name, e.g. `nvmlMemory_v2_t`. */
  readonly struct: string;
  /** The koffi type to check. */
  readonly type: TypeObject;
  /** `sizeof`, bytes. */
  readonly sizeBytes: number;
  /** `offsetof` of each field, bytes. */
  readonly offsetsBytes: Readonly<Record<string, number>>;
}

/** The x86-64 layouts of reference/gpu.md §1.4, one row per struct the source passes to NVML. */
export const NVML_STRUCT_LAYOUTS: readonly NvmlStructLayout[] = [
  {
    struct: 'nvmlPciInfo_t',
    type: nvmlPciInfo,
    sizeBytes: 68,
    offsetsBytes: {
      busIdLegacy: 0,
      domain: 16,
      bus: 20,
      device: 24,
      pciDeviceId: 28,
      pciSubSystemId: 32,
      busId: 36,
    },
  },
  { struct: 'nvmlMemory_t', type: nvmlMemory, sizeBytes: 24, offsetsBytes: { total: 0, free: 8, used: 16 } },
  {
    struct: 'nvmlMemory_v2_t',
    type: nvmlMemoryV2,
    sizeBytes: 40,
    offsetsBytes: { version: 0, total: 8, reserved: 16, free: 24, used: 32 },
  },
  { struct: 'nvmlUtilization_t', type: nvmlUtilization, sizeBytes: 8, offsetsBytes: { gpu: 0, memory: 4 } },
  {
    struct: 'nvmlProcessInfo_t',
    type: nvmlProcessInfo,
    sizeBytes: 24,
    offsetsBytes: { pid: 0, usedGpuMemory: 8, gpuInstanceId: 16, computeInstanceId: 20 },
  },
];

/**
 * Startup check: every declared struct has the size and field offsets of the reference layout.
 * Runs in `NvmlSource.open()` before the first NVML call that takes a struct.
 *
 * @param layouts - the layouts to check @default NVML_STRUCT_LAYOUTS
 * @throws {NvmlAbiError} when a size or an offset differs; it names the struct and the field
 */
export function assertNvmlAbi(layouts: readonly NvmlStructLayout[] = NVML_STRUCT_LAYOUTS): void {
  for (const layout of layouts) {
    const size = koffi.sizeof(layout.type);
    if (size !== layout.sizeBytes) {
      throw new NvmlAbiError({
        struct: layout.struct,
        field: '(size)',
        expectedBytes: layout.sizeBytes,
        actualBytes: size,
      });
    }
    for (const [field, expected] of Object.entries(layout.offsetsBytes)) {
      const offset = koffi.offsetof(layout.type, field);
      if (offset !== expected) {
        throw new NvmlAbiError({
          struct: layout.struct,
          field,
          expectedBytes: expected,
          actualBytes: offset,
        });
      }
    }
  }
}
