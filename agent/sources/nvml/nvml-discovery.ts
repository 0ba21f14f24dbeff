import koffi from 'koffi';
import { type GpuIdentity, normalizePciBusId } from '../../../lambdas/contract';
import { GpuRow } from '../../window/gpu-row';
import type { NvmlBinding } from './binding';
import { formatCudaVersion } from './cuda-version';
import { NvmlUnavailableError } from './errors';
import { NvmlFieldValueRequest } from './field-values';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { NvmlGpmReader } from './nvml-gpm-reader';
import type { NvmlGpuState } from './nvml-gpu-state';
import { NVML_CALL_SLOT_NAMES } from './nvml-metric-table';
import type { NvmlMigReader } from './nvml-mig-reader';
import { NVML_RETURN } from './nvml-return';
import type { NvmlLogger, NvmlTemperatureThresholds, NvmlVersions } from './nvml-types';
import { nvmlPciInfo } from './structs';

/** `NVML_DEVICE_NAME_V2_BUFFER_SIZE` / `NVML_DEVICE_UUID_V2_BUFFER_SIZE`: the largest string buffer NVML asks for. */
const STRING_BUFFER_BYTES = 96;
/** `NVML_DEVICE_SERIAL_BUFFER_SIZE`. */
const SERIAL_BUFFER_BYTES = 30;
/** `NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE` / `NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE`. */
const VERSION_BUFFER_BYTES = 80;
/** GPU indices the contract accepts (0..63). */
const MAX_GPUS = 64;
/** `nvmlTemperatureThresholds_t` values read at open. */
const NVML_TEMPERATURE_THRESHOLD = { shutdown_c: 0, slowdown_c: 1, gpu_max_c: 3 } as const;

/** What discovery needs: the binding, the recorder that judges codes, the GPM and MIG readers, the logger. */
export interface NvmlDiscoveryContext {
  readonly nvml: NvmlBinding;
  readonly recorder: NvmlCallRecorder;
  readonly gpm: NvmlGpmReader;
  readonly mig: NvmlMigReader;
  readonly logger: NvmlLogger;
}

/**
 * Driver-wide versions, once at open: `nvmlSystemGetDriverVersion`, `nvmlSystemGetNVMLVersion`,
 * `nvmlSystemGetCudaDriverVersion_v2` (as `major.minor`). Each absent when NVML cannot tell; a
 * failure other than NOT_SUPPORTED is recorded as an error.
 */
export function readNvmlVersions({ nvml, recorder }: NvmlDiscoveryContext): NvmlVersions {
  const versions: { -readonly [K in keyof NvmlVersions]: NvmlVersions[K] } = {};
  const text = (call: 'driverVersion' | 'nvmlVersion'): string | undefined => {
    const fn = nvml[call];
    const symbol = nvml.symbols[call];
    if (fn === undefined || symbol === undefined) return undefined;
    const buffer = Buffer.alloc(VERSION_BUFFER_BYTES);
    const c = fn(buffer, VERSION_BUFFER_BYTES);
    if (c === NVML_RETURN.SUCCESS) return decodeText(buffer) || undefined;
    recorder.systemError(symbol, c);
    return undefined;
  };
  const driver = text('driverVersion');
  if (driver !== undefined) versions.driver_version = driver.slice(0, 64);
  const nvmlVersion = text('nvmlVersion');
  if (nvmlVersion !== undefined) versions.nvml_version = nvmlVersion.slice(0, 64);
  if (nvml.cudaDriverVersion !== undefined && nvml.symbols.cudaDriverVersion !== undefined) {
    const out = new Int32Array(1);
    const c = nvml.cudaDriverVersion(out);
    if (c === NVML_RETURN.SUCCESS) {
      const cuda = formatCudaVersion(out[0] ?? 0);
      if (cuda !== undefined) versions.cuda_version = cuda;
    } else {
      recorder.systemError(nvml.symbols.cudaDriverVersion, c);
    }
  }
  return versions;
}

/**
 * Every GPU NVML counts (at most 64), each with its handle, identity, thresholds and GPM state.
 * A GPU whose handle or identity calls fail is still listed (index only); its loss or errors are
 * recorded for the first sample.
 *
 * @param at - when discovery runs, from the injected clock: stamps a GPU found lost
 * @throws {NvmlUnavailableError} when `nvmlDeviceGetCount_v2` fails
 */
export function discoverNvmlGpus(
  context: NvmlDiscoveryContext,
  libraryPath: string,
  at: Date,
): NvmlGpuState[] {
  const { nvml, logger } = context;
  const countOut = new Uint32Array(1);
  const countCode = nvml.deviceCount(countOut);
  if (countCode !== NVML_RETURN.SUCCESS) {
    throw new NvmlUnavailableError(
      { libraryPath, step: 'init', code: countCode },
      `Expected nvmlDeviceGetCount_v2 to return NVML_SUCCESS, got ${countCode} (${nvml.errorString(countCode)}). ` +
        'Check the driver with `nvidia-smi`.',
    );
  }
  let count = countOut[0] ?? 0;
  if (count > MAX_GPUS) {
    logger.warn(
      { gpu_count: count, max: MAX_GPUS },
      `NVML reports ${count} GPUs; sampling the first ${MAX_GPUS}`,
    );
    count = MAX_GPUS;
  }
  const gpus: NvmlGpuState[] = [];
  for (let index = 0; index < count; index++) gpus.push(discoverGpu(context, index, at));
  return gpus;
}

/** One GPU: handle, then name, UUID, PCI bus id, serial, thresholds and GPM, stopping if it is lost. */
function discoverGpu(context: NvmlDiscoveryContext, index: number, at: Date): NvmlGpuState {
  const { nvml, recorder } = context;
  const identity: { -readonly [K in keyof GpuIdentity]: GpuIdentity[K] } = { index };
  const handleOut = new BigUint64Array(1);
  const code = nvml.handleByIndex(index, handleOut);
  const handle = code === NVML_RETURN.SUCCESS ? handleOut[0] : undefined;
  const gpu: NvmlGpuState = {
    index,
    handle,
    identity,
    unsupported: new Uint8Array(NVML_CALL_SLOT_NAMES.length),
    lost: false,
    loggedErrors: new Set(),
    thresholds: {},
    fields: new NvmlFieldValueRequest(),
    row: new GpuRow(index),
    gpm: undefined,
    mig: undefined,
    migMode: false,
    migWatched: true,
    migCheck: { layout: undefined, checkedAtMs: undefined, forcedAtMs: undefined },
  };
  if (handle === undefined) {
    recorder.judge(gpu, undefined, 'nvmlDeviceGetHandleByIndex_v2', code, at);
    return gpu;
  }
  const textBuffer = Buffer.alloc(STRING_BUFFER_BYTES);
  const text = (call: 'name' | 'uuid' | 'serial', length: number): string | undefined => {
    const fn = nvml[call];
    const symbol = nvml.symbols[call];
    if (fn === undefined || symbol === undefined || gpu.lost) return undefined;
    const c = fn(handle, textBuffer, length);
    return recorder.judge(gpu, undefined, symbol, c, at) ? decodeText(textBuffer) : undefined;
  };
  const name = text('name', STRING_BUFFER_BYTES);
  if (name !== undefined && name !== '') identity.name = name.slice(0, 96);
  const uuid = text('uuid', STRING_BUFFER_BYTES);
  if (uuid !== undefined && /^(GPU|MIG)-[0-9A-Za-z-]+$/.test(uuid)) identity.uuid = uuid;
  if (nvml.pciInfo !== undefined && nvml.symbols.pciInfo !== undefined && !gpu.lost) {
    const buffer = Buffer.alloc(koffi.sizeof(nvmlPciInfo));
    const c = nvml.pciInfo(handle, buffer);
    if (recorder.judge(gpu, undefined, nvml.symbols.pciInfo, c, at)) {
      const pci = koffi.decode(buffer, nvmlPciInfo) as {
        busId: string;
        domain: number;
        bus: number;
        device: number;
      };
      const busId =
        normalizePciBusId(pci.busId) ??
        normalizePciBusId(`${hex(pci.domain, 4)}:${hex(pci.bus, 2)}:${hex(pci.device, 2)}.0`);
      if (busId !== undefined) identity.pci_bus_id = busId;
    }
  }
  const serial = text('serial', SERIAL_BUFFER_BYTES);
  if (serial !== undefined && serial !== '') identity.serial = serial.slice(0, 64);
  gpu.thresholds = readThresholds(context, gpu, handle, at);
  // In MIG mode (`nvmlDeviceGetMigMode` current = 1) the GPU instances are read one by one
  // (`NvmlMigReader`), since utilization and GPM of the whole GPU are per instance there.
  const mig = gpu.lost ? false : context.mig.mode(gpu, handle, at) === true;
  gpu.migMode = mig;
  gpu.gpm = context.gpm.open(gpu, handle, at);
  if (mig && !gpu.lost) gpu.mig = context.mig.open(gpu, handle, gpu.gpm !== undefined, at);
  return gpu;
}

function readThresholds(
  { nvml, recorder }: NvmlDiscoveryContext,
  gpu: NvmlGpuState,
  handle: bigint,
  at: Date,
): NvmlTemperatureThresholds {
  const fn = nvml.temperatureThreshold;
  const call = nvml.symbols.temperatureThreshold ?? '';
  const thresholds: { -readonly [K in keyof NvmlTemperatureThresholds]: NvmlTemperatureThresholds[K] } = {};
  if (fn === undefined) return thresholds;
  const out = new Uint32Array(1);
  for (const [field, type] of Object.entries(NVML_TEMPERATURE_THRESHOLD)) {
    if (gpu.lost) break;
    if (recorder.judge(gpu, undefined, call, fn(handle, type, out), at)) {
      thresholds[field as keyof NvmlTemperatureThresholds] = out[0];
    }
  }
  return thresholds;
}

/** Decodes a NUL-terminated C string from `buffer`. */
function decodeText(buffer: Buffer): string {
  const end = buffer.indexOf(0);
  return buffer.toString('utf8', 0, end === -1 ? buffer.length : end).trim();
}

function hex(value: number, digits: number): string {
  return value.toString(16).padStart(digits, '0');
}
