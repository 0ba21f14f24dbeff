import koffi, { type TypeObject } from 'koffi';
import { NvmlAbiError } from './errors';
import { NVML_MIG_STRUCT_LAYOUTS } from './mig-structs';

/**
 * koffi declarations of the NVML structs the source passes, and their reference layout on x86-64
 * (docs/nvml.md §4, measured by gcc and koffi). The types are anonymous on purpose: koffi's
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

/** `nvmlValue_t` (8 B union): read the member `nvmlFieldValue_t.valueType` names (docs/nvml.md §5). */
export const nvmlValue = koffi.union({
  dVal: 'double',
  siVal: 'int32',
  uiVal: 'uint32',
  ulVal: 'uint64',
  ullVal: 'uint64',
  sllVal: 'int64',
  usVal: 'uint16',
});

/**
 * `nvmlFieldValue_t` (40 B): one entry of `nvmlDeviceGetFieldValues`. The caller sets `fieldId`
 * and `scopeId`; NVML writes `timestamp` (µs since the epoch), `latencyUsec`, `valueType`, the
 * per-value `nvmlReturn` and `value`.
 */
export const nvmlFieldValue = koffi.struct({
  fieldId: 'uint32',
  scopeId: 'uint32',
  timestamp: 'int64',
  latencyUsec: 'int64',
  valueType: 'uint32',
  nvmlReturn: 'uint32',
  value: nvmlValue,
});

/** `nvmlEventSet_t`: an opaque 8-byte handle (`bigint` in koffi 3). */
export const nvmlEventSetHandle = koffi.pointer(koffi.opaque());

/**
 * `nvmlEventData_t` (32 B): what `nvmlEventSetWait_v2` delivers. `device` is the same handle value
 * `nvmlDeviceGetHandleByIndex_v2` gave; `eventData` is the XID for `XidCriticalError` (999 = unknown).
 */
export const nvmlEventData = koffi.struct({
  device: nvmlDeviceHandle,
  eventType: 'uint64',
  eventData: 'uint64',
  gpuInstanceId: 'uint32',
  computeInstanceId: 'uint32',
});

/** `nvmlGpmSample_t`: an opaque 8-byte handle (`bigint` in koffi 3). */
export const nvmlGpmSampleHandle = koffi.pointer(koffi.opaque());

/** `nvmlGpmSupport_t` (8 B): `nvmlGpmQueryDeviceSupport`; set `version` = 1 first. */
export const nvmlGpmSupport = koffi.struct({ version: 'uint32', isSupportedDevice: 'uint32' });

/** `nvmlGpmMetric_t` (40 B): one metric of `nvmlGpmMetricsGet_t`; `value` in the metric's unit (% or MiB/s). */
export const nvmlGpmMetric = koffi.struct({
  metricId: 'uint32',
  nvmlReturn: 'uint32',
  value: 'double',
  metricInfo: koffi.struct({ shortName: 'const char *', longName: 'const char *', unit: 'const char *' }),
});

/**
 * `NVML_GPM_METRIC_MAX` of the API 13 header (333). The API 11 header had 98 under the same
 * `NVML_GPM_METRICS_GET_VERSION` 1, so the larger array is the safe one: tail space is harmless
 * (docs/nvml.md §4, GPM size caveat).
 */
export const NVML_GPM_METRIC_MAX = 333;

/** `NVML_GPM_METRICS_GET_VERSION` and `NVML_GPM_SUPPORT_VERSION`: 1 in both API 11 and API 13 headers. */
export const NVML_GPM_VERSION = 1;

/** `nvmlGpmMetricsGet_t` with the 333-entry metrics array (13,344 B): `nvmlGpmMetricsGet`. */
export const nvmlGpmMetricsGet = koffi.struct({
  version: 'uint32',
  numMetrics: 'uint32',
  sample1: nvmlGpmSampleHandle,
  sample2: nvmlGpmSampleHandle,
  metrics: koffi.array(nvmlGpmMetric, NVML_GPM_METRIC_MAX),
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

/** The x86-64 layouts of docs/nvml.md §4, one row per struct the source passes to NVML. */
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
  {
    struct: 'nvmlFieldValue_t',
    type: nvmlFieldValue,
    sizeBytes: 40,
    offsetsBytes: {
      fieldId: 0,
      scopeId: 4,
      timestamp: 8,
      latencyUsec: 16,
      valueType: 24,
      nvmlReturn: 28,
      value: 32,
    },
  },
  {
    struct: 'nvmlEventData_t',
    type: nvmlEventData,
    sizeBytes: 32,
    offsetsBytes: { device: 0, eventType: 8, eventData: 16, gpuInstanceId: 24, computeInstanceId: 28 },
  },
  {
    struct: 'nvmlGpmSupport_t',
    type: nvmlGpmSupport,
    sizeBytes: 8,
    offsetsBytes: { version: 0, isSupportedDevice: 4 },
  },
  {
    struct: 'nvmlGpmMetric_t',
    type: nvmlGpmMetric,
    sizeBytes: 40,
    offsetsBytes: { metricId: 0, nvmlReturn: 4, value: 8, metricInfo: 16 },
  },
  {
    struct: 'nvmlGpmMetricsGet_t',
    type: nvmlGpmMetricsGet,
    sizeBytes: 13_344,
    offsetsBytes: { version: 0, numMetrics: 4, sample1: 8, sample2: 16, metrics: 24 },
  },
  // MIG: nvmlDeviceAttributes_t (mig-structs.ts).
  ...NVML_MIG_STRUCT_LAYOUTS,
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
