import koffi, { type LibraryHandle } from 'koffi';
import { bindMigCalls, MIG_OPTIONAL_CALLS, type NvmlMigBinding, type NvmlMigCall } from './binding-mig';
import { NvmlUnavailableError } from './errors';
import {
  nvmlDeviceHandle,
  nvmlEventSetHandle,
  nvmlGpmSampleHandle,
  nvmlMemory,
  nvmlMemoryV2,
  nvmlPciInfo,
  nvmlUtilization,
} from './structs';

/**
 * A koffi-bound NVML call that can also run on the libuv thread pool: `fn.async(...args, cb)`
 * calls it off the main thread and `cb(error, code)` runs on the main thread when it returns
 * (out-parameters are filled by then).
 */
export interface NvmlAsyncCall<Args extends unknown[]> {
  (...args: Args): number;
  /** Runs the call on the libuv pool; `callback(error, code)` runs on the main thread. */
  async(...args: [...Args, (error: unknown, code: number) => void]): void;
}

/**
 * The NVML functions the source calls, bound through koffi. Out-parameters are caller-owned typed
 * arrays or Buffers (koffi passes a pointer to their contents, no copy, no allocation), so the
 * sampler reuses the same few buffers on every call. Device handles are `bigint` (koffi 3).
 * Every function returns the `nvmlReturn_t` code. 64-bit counters are written into a
 * `Uint32Array(2)` (little-endian low, high words) and read as `lo + hi × 2^32`, so the hot path
 * never creates a `bigint`.
 */
export interface NvmlBinding extends NvmlMigBinding {
  /** The library path or soname that was loaded. */
  readonly libraryPath: string;
  /** The symbol bound for each optional call, e.g. `memoryInfo: 'nvmlDeviceGetMemoryInfo_v2'`; absent when the library has none. */
  readonly symbols: Readonly<Partial<Record<NvmlOptionalCall, string>>>;
  /** `nvmlInit_v2()`. */
  readonly init: () => number;
  /** `nvmlShutdown()`. */
  readonly shutdown: () => number;
  /** `nvmlErrorString(code)`: NVML's static text for a return code. */
  readonly errorString: (code: number) => string;
  /** `nvmlDeviceGetCount_v2(uint *count)`. */
  readonly deviceCount: (count: Uint32Array) => number;
  /** `nvmlDeviceGetHandleByIndex_v2(uint index, nvmlDevice_t *device)`. */
  readonly handleByIndex: (index: number, handle: BigUint64Array) => number;
  /** `nvmlSystemGetDriverVersion(char *version, uint length)`. */
  readonly driverVersion?: (out: Buffer, length: number) => number;
  /** `nvmlSystemGetNVMLVersion(char *version, uint length)`. */
  readonly nvmlVersion?: (out: Buffer, length: number) => number;
  /** `nvmlSystemGetCudaDriverVersion_v2(int *v)`, else `nvmlSystemGetCudaDriverVersion`: e.g. 12040. */
  readonly cudaDriverVersion?: (out: Int32Array) => number;
  /** `nvmlDeviceGetName(dev, char *name, uint length)`. */
  readonly name?: (handle: bigint, out: Buffer, length: number) => number;
  /** `nvmlDeviceGetUUID(dev, char *uuid, uint length)`. */
  readonly uuid?: (handle: bigint, out: Buffer, length: number) => number;
  /** `nvmlDeviceGetSerial(dev, char *serial, uint length)`. */
  readonly serial?: (handle: bigint, out: Buffer, length: number) => number;
  /** `nvmlDeviceGetPciInfo_v3(dev, nvmlPciInfo_t *pci)`: decode with `koffi.decode(out, nvmlPciInfo)`. */
  readonly pciInfo?: (handle: bigint, out: Buffer) => number;
  /**
   * `nvmlDeviceGetMemoryInfo_v2(dev, nvmlMemory_v2_t *)` (set `version` first), else
   * `nvmlDeviceGetMemoryInfo(dev, nvmlMemory_t *)`: see `memoryInfoVersion` for the layout.
   */
  readonly memoryInfo?: (handle: bigint, out: Uint32Array) => number;
  /** Which struct `memoryInfo` fills: 2 = `nvmlMemory_v2_t`, 1 = `nvmlMemory_t`, 0 = no memory call. */
  readonly memoryInfoVersion: 0 | 1 | 2;
  /** `nvmlDeviceGetUtilizationRates(dev, nvmlUtilization_t *)`, percent. */
  readonly utilization?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetTemperature(dev, uint sensorType, uint *temp)`, °C. */
  readonly temperature?: (handle: bigint, sensor: number, out: Uint32Array) => number;
  /** `nvmlDeviceGetPowerUsage(dev, uint *mW)`. */
  readonly powerUsage?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetEnforcedPowerLimit(dev, uint *mW)`. */
  readonly enforcedPowerLimit?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetTotalEnergyConsumption(dev, ull *mJ)`, into a `Uint32Array(2)`. */
  readonly totalEnergy?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetTotalEccErrors(dev, uint errorType, uint counterType, ull *count)`, into a `Uint32Array(2)`. */
  readonly totalEccErrors?: (
    handle: bigint,
    errorType: number,
    counterType: number,
    out: Uint32Array,
  ) => number;
  /**
   * `nvmlDeviceGetComputeRunningProcesses_v3(dev, uint *count, nvmlProcessInfo_t *infos)`; `infos`
   * null probes the count, else a Buffer of `count` × 24-byte `nvmlProcessInfo_t`.
   */
  readonly computeProcesses?: (handle: bigint, count: Uint32Array, infos: Buffer | null) => number;
  /**
   * `nvmlDeviceGetCurrentClocksEventReasons(dev, ull *reasons)`, else the older
   * `nvmlDeviceGetCurrentClocksThrottleReasons` (same bits), into a `Uint32Array(2)`.
   */
  readonly clocksEventReasons?: (handle: bigint, out: Uint32Array) => number;
  /**
   * `nvmlDeviceGetViolationStatus(dev, nvmlPerfPolicyType_t perfPolicyType, nvmlViolationTime_t *)`:
   * `out` is a `Uint32Array(4)` of the 16-byte struct (`referenceTime` u64 µs at words 0–1,
   * `violationTime` u64 ns at words 2–3; docs/nvml.md §3). Deprecated in NVML 13 in favour of field
   * values 74–81, still exported.
   */
  readonly violationStatus?: (handle: bigint, perfPolicyType: number, out: Uint32Array) => number;
  /** `nvmlDeviceGetFieldValues(dev, int count, nvmlFieldValue_t *values)`: `values` is a Buffer of `count` × 40 bytes. */
  readonly fieldValues?: (handle: bigint, count: number, values: Buffer) => number;
  /** `nvmlDeviceGetPcieReplayCounter(dev, uint *value)`. */
  readonly pcieReplayCounter?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetRetiredPagesPendingStatus(dev, nvmlEnableState_t *isPending)`. */
  readonly retiredPagesPending?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetTemperatureThreshold(dev, uint thresholdType, uint *temp)`, °C. */
  readonly temperatureThreshold?: (handle: bigint, type: number, out: Uint32Array) => number;
  /** `nvmlGpmQueryDeviceSupport(dev, nvmlGpmSupport_t *)`: `out` = `[version, isSupportedDevice]`. */
  readonly gpmQueryDeviceSupport?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlGpmSampleAlloc(nvmlGpmSample_t *sample)`. */
  readonly gpmSampleAlloc?: (out: BigUint64Array) => number;
  /** `nvmlGpmSampleFree(nvmlGpmSample_t sample)`. */
  readonly gpmSampleFree?: (sample: bigint) => number;
  /** `nvmlGpmSampleGet(dev, nvmlGpmSample_t sample)`. */
  readonly gpmSampleGet?: (handle: bigint, sample: bigint) => number;
  /** `nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *)`: a Buffer of `koffi.sizeof(nvmlGpmMetricsGet)` bytes. */
  readonly gpmMetricsGet?: (metricsGet: Buffer) => number;
  /** `nvmlDeviceGetIndex(dev, uint *index)`. */
  readonly deviceIndex?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceGetMigMode(dev, uint *currentMode, uint *pendingMode)`: 1 = MIG enabled (`NVML_DEVICE_MIG_ENABLE`). */
  readonly migMode?: (handle: bigint, currentMode: Uint32Array, pendingMode: Uint32Array) => number;
  /** `nvmlEventSetCreate(nvmlEventSet_t *set)`. */
  readonly eventSetCreate?: (out: BigUint64Array) => number;
  /** `nvmlEventSetFree(nvmlEventSet_t set)`. */
  readonly eventSetFree?: (set: bigint) => number;
  /** `nvmlDeviceGetSupportedEventTypes(dev, ull *eventTypes)`, into a `Uint32Array(2)`. */
  readonly supportedEventTypes?: (handle: bigint, out: Uint32Array) => number;
  /** `nvmlDeviceRegisterEvents(dev, ull eventTypes, nvmlEventSet_t set)`. */
  readonly registerEvents?: (handle: bigint, eventTypes: number, set: bigint) => number;
  /**
   * `nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, uint timeoutms)`: `data` is a
   * 32-byte Buffer. Blocks up to the timeout: call it through `.async`.
   */
  readonly eventSetWait?: NvmlAsyncCall<[set: bigint, data: Buffer, timeoutMs: number]>;
  /** `nvmlDeviceGetClockInfo(dev, uint type, uint *MHz)`. */
  readonly clockInfo?: (handle: bigint, type: number, out: Uint32Array) => number;
  /** `nvmlDeviceGetRemappedRows(dev, uint *corr, uint *unc, uint *isPending, uint *failureOccurred)`. */
  readonly remappedRows?: (
    handle: bigint,
    corrRows: Uint32Array,
    uncRows: Uint32Array,
    isPending: Uint32Array,
    failureOccurred: Uint32Array,
  ) => number;
}

/** Calls the source can live without: each binds the first symbol of its list the library has. */
export type NvmlOptionalCall =
  | 'driverVersion'
  | 'nvmlVersion'
  | 'cudaDriverVersion'
  | 'name'
  | 'uuid'
  | 'serial'
  | 'pciInfo'
  | 'memoryInfo'
  | 'utilization'
  | 'temperature'
  | 'powerUsage'
  | 'enforcedPowerLimit'
  | 'totalEnergy'
  | 'totalEccErrors'
  | 'computeProcesses'
  | 'clockInfo'
  | 'remappedRows'
  | 'clocksEventReasons'
  | 'violationStatus'
  | 'fieldValues'
  | 'pcieReplayCounter'
  | 'retiredPagesPending'
  | 'temperatureThreshold'
  | 'gpmQueryDeviceSupport'
  | 'gpmSampleAlloc'
  | 'gpmSampleFree'
  | 'gpmSampleGet'
  | 'gpmMetricsGet'
  | 'deviceIndex'
  | 'migMode'
  | 'eventSetCreate'
  | 'eventSetFree'
  | 'supportedEventTypes'
  | 'registerEvents'
  | 'eventSetWait'
  // MIG, per GPU instance (binding-mig.ts).
  | NvmlMigCall;

type KoffiTypeSpec = Parameters<typeof koffi.sizeof>[0];

/** One candidate symbol and its C parameter types (return type is always `int` = `nvmlReturn_t`). */
interface Candidate {
  readonly symbol: string;
  readonly params: readonly KoffiTypeSpec[];
}

const dev = nvmlDeviceHandle;
const u32p = 'uint32 *';
const u64p = 'uint64 *';
const charp = 'char *';

/** Newest symbol first; the source binds the first one the library exports. Source: docs/nvml.md §3. */
const OPTIONAL_CALLS: Readonly<Record<NvmlOptionalCall, readonly Candidate[]>> = {
  driverVersion: [{ symbol: 'nvmlSystemGetDriverVersion', params: [charp, 'uint32'] }],
  nvmlVersion: [{ symbol: 'nvmlSystemGetNVMLVersion', params: [charp, 'uint32'] }],
  cudaDriverVersion: [
    { symbol: 'nvmlSystemGetCudaDriverVersion_v2', params: ['int *'] },
    { symbol: 'nvmlSystemGetCudaDriverVersion', params: ['int *'] },
  ],
  name: [{ symbol: 'nvmlDeviceGetName', params: [dev, charp, 'uint32'] }],
  uuid: [{ symbol: 'nvmlDeviceGetUUID', params: [dev, charp, 'uint32'] }],
  serial: [{ symbol: 'nvmlDeviceGetSerial', params: [dev, charp, 'uint32'] }],
  pciInfo: [{ symbol: 'nvmlDeviceGetPciInfo_v3', params: [dev, koffi.pointer(nvmlPciInfo)] }],
  memoryInfo: [
    { symbol: 'nvmlDeviceGetMemoryInfo_v2', params: [dev, koffi.pointer(nvmlMemoryV2)] },
    { symbol: 'nvmlDeviceGetMemoryInfo', params: [dev, koffi.pointer(nvmlMemory)] },
  ],
  utilization: [{ symbol: 'nvmlDeviceGetUtilizationRates', params: [dev, koffi.pointer(nvmlUtilization)] }],
  temperature: [{ symbol: 'nvmlDeviceGetTemperature', params: [dev, 'uint32', u32p] }],
  powerUsage: [{ symbol: 'nvmlDeviceGetPowerUsage', params: [dev, u32p] }],
  enforcedPowerLimit: [{ symbol: 'nvmlDeviceGetEnforcedPowerLimit', params: [dev, u32p] }],
  totalEnergy: [{ symbol: 'nvmlDeviceGetTotalEnergyConsumption', params: [dev, u64p] }],
  totalEccErrors: [{ symbol: 'nvmlDeviceGetTotalEccErrors', params: [dev, 'uint32', 'uint32', u64p] }],
  computeProcesses: [{ symbol: 'nvmlDeviceGetComputeRunningProcesses_v3', params: [dev, u32p, 'void *'] }],
  clockInfo: [{ symbol: 'nvmlDeviceGetClockInfo', params: [dev, 'uint32', u32p] }],
  remappedRows: [{ symbol: 'nvmlDeviceGetRemappedRows', params: [dev, u32p, u32p, u32p, u32p] }],
  clocksEventReasons: [
    { symbol: 'nvmlDeviceGetCurrentClocksEventReasons', params: [dev, u64p] },
    { symbol: 'nvmlDeviceGetCurrentClocksThrottleReasons', params: [dev, u64p] },
  ],
  violationStatus: [{ symbol: 'nvmlDeviceGetViolationStatus', params: [dev, 'uint32', 'void *'] }],
  fieldValues: [{ symbol: 'nvmlDeviceGetFieldValues', params: [dev, 'int', 'void *'] }],
  pcieReplayCounter: [{ symbol: 'nvmlDeviceGetPcieReplayCounter', params: [dev, u32p] }],
  retiredPagesPending: [{ symbol: 'nvmlDeviceGetRetiredPagesPendingStatus', params: [dev, u32p] }],
  temperatureThreshold: [{ symbol: 'nvmlDeviceGetTemperatureThreshold', params: [dev, 'uint32', u32p] }],
  gpmQueryDeviceSupport: [{ symbol: 'nvmlGpmQueryDeviceSupport', params: [dev, 'void *'] }],
  gpmSampleAlloc: [{ symbol: 'nvmlGpmSampleAlloc', params: [koffi.pointer(nvmlGpmSampleHandle)] }],
  gpmSampleFree: [{ symbol: 'nvmlGpmSampleFree', params: [nvmlGpmSampleHandle] }],
  gpmSampleGet: [{ symbol: 'nvmlGpmSampleGet', params: [dev, nvmlGpmSampleHandle] }],
  gpmMetricsGet: [{ symbol: 'nvmlGpmMetricsGet', params: ['void *'] }],
  deviceIndex: [{ symbol: 'nvmlDeviceGetIndex', params: [dev, u32p] }],
  migMode: [{ symbol: 'nvmlDeviceGetMigMode', params: [dev, u32p, u32p] }],
  eventSetCreate: [{ symbol: 'nvmlEventSetCreate', params: [koffi.pointer(nvmlEventSetHandle)] }],
  eventSetFree: [{ symbol: 'nvmlEventSetFree', params: [nvmlEventSetHandle] }],
  supportedEventTypes: [{ symbol: 'nvmlDeviceGetSupportedEventTypes', params: [dev, u64p] }],
  registerEvents: [{ symbol: 'nvmlDeviceRegisterEvents', params: [dev, 'uint64', nvmlEventSetHandle] }],
  eventSetWait: [{ symbol: 'nvmlEventSetWait_v2', params: [nvmlEventSetHandle, 'void *', 'uint32'] }],
  // MIG, per GPU instance (binding-mig.ts).
  ...MIG_OPTIONAL_CALLS,
};

/**
 * Loads the NVML shared library and binds every call the source uses, newest symbol first
 * (`lib.func` throws for a missing symbol: that is the fallback signal). Does not call NVML.
 *
 * @param libraryPath - path or soname for `koffi.load` (see `resolveNvmlLibraryPath`)
 * @returns the bound functions; optional calls the library lacks are `undefined`
 * @throws {NvmlUnavailableError} when the library cannot be loaded (`step: 'load'`) or lacks one of
 *   `nvmlInit_v2`, `nvmlShutdown`, `nvmlErrorString`, `nvmlDeviceGetCount_v2`,
 *   `nvmlDeviceGetHandleByIndex_v2` (`step: 'symbol'`)
 */
export function loadNvmlBinding(libraryPath: string): NvmlBinding {
  let lib: LibraryHandle;
  try {
    lib = koffi.load(libraryPath);
  } catch (cause) {
    throw new NvmlUnavailableError(
      { libraryPath, step: 'load' },
      `Expected to load the NVML library "${libraryPath}", got: ${(cause as Error).message}. ` +
        'Install the NVIDIA driver, or point --nvml-lib / GPU_SENTINEL_NVML_LIB at libnvidia-ml.so.1.',
      { cause },
    );
  }
  const required = (symbol: string, params: readonly KoffiTypeSpec[], result: KoffiTypeSpec = 'int') => {
    try {
      return lib.func(symbol, result, [...params]);
    } catch (cause) {
      throw new NvmlUnavailableError(
        { libraryPath, step: 'symbol' },
        `Expected "${libraryPath}" to export ${symbol}, got: ${(cause as Error).message}. ` +
          'This is not an NVML library, or a driver too old for gpu-sentinel (R450 or newer is needed).',
        { cause },
      );
    }
  };
  const symbols: Partial<Record<NvmlOptionalCall, string>> = {};
  const optional = (call: NvmlOptionalCall) => {
    for (const candidate of OPTIONAL_CALLS[call]) {
      try {
        const fn = lib.func(candidate.symbol, 'int', [...candidate.params]);
        symbols[call] = candidate.symbol;
        return fn;
      } catch {
        // Missing symbol: try the older one.
      }
    }
    return undefined;
  };

  const init = required('nvmlInit_v2', []);
  const shutdown = required('nvmlShutdown', []);
  const errorString = required('nvmlErrorString', ['int'], 'const char *');
  const deviceCount = required('nvmlDeviceGetCount_v2', [u32p]);
  const handleByIndex = required('nvmlDeviceGetHandleByIndex_v2', ['uint32', koffi.pointer(dev)]);
  const memoryInfo = optional('memoryInfo');
  const memorySymbol = symbols.memoryInfo;

  return {
    libraryPath,
    symbols,
    init,
    shutdown,
    errorString: (code) => String(errorString(code) ?? `NVML error ${code}`),
    deviceCount,
    handleByIndex,
    driverVersion: optional('driverVersion'),
    nvmlVersion: optional('nvmlVersion'),
    cudaDriverVersion: optional('cudaDriverVersion'),
    name: optional('name'),
    uuid: optional('uuid'),
    serial: optional('serial'),
    pciInfo: optional('pciInfo'),
    memoryInfo,
    memoryInfoVersion: memorySymbol === undefined ? 0 : memorySymbol.endsWith('_v2') ? 2 : 1,
    utilization: optional('utilization'),
    temperature: optional('temperature'),
    powerUsage: optional('powerUsage'),
    enforcedPowerLimit: optional('enforcedPowerLimit'),
    totalEnergy: optional('totalEnergy'),
    totalEccErrors: optional('totalEccErrors'),
    computeProcesses: optional('computeProcesses'),
    clockInfo: optional('clockInfo'),
    remappedRows: optional('remappedRows'),
    clocksEventReasons: optional('clocksEventReasons'),
    violationStatus: optional('violationStatus'),
    fieldValues: optional('fieldValues'),
    pcieReplayCounter: optional('pcieReplayCounter'),
    retiredPagesPending: optional('retiredPagesPending'),
    temperatureThreshold: optional('temperatureThreshold'),
    gpmQueryDeviceSupport: optional('gpmQueryDeviceSupport'),
    gpmSampleAlloc: optional('gpmSampleAlloc'),
    gpmSampleFree: optional('gpmSampleFree'),
    gpmSampleGet: optional('gpmSampleGet'),
    gpmMetricsGet: optional('gpmMetricsGet'),
    deviceIndex: optional('deviceIndex'),
    migMode: optional('migMode'),
    eventSetCreate: optional('eventSetCreate'),
    eventSetFree: optional('eventSetFree'),
    supportedEventTypes: optional('supportedEventTypes'),
    registerEvents: optional('registerEvents'),
    eventSetWait: optional('eventSetWait') as NvmlBinding['eventSetWait'],
    // MIG, per GPU instance (binding-mig.ts).
    ...bindMigCalls(optional),
  };
}
