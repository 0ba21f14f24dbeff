import koffi from 'koffi';
import { nvmlFieldValue } from '../../agent/sources/nvml/structs';
import { fakeNvmlPath, setFakeNvmlEnv } from '../setup/fake-nvml';

// The fake `libnvidia-ml.so` called directly through koffi, for the tests of the fake itself (its
// cost model, its clock): the NVML signatures of docs/nvml.md, with koffi's anonymous types (a
// named type would be declared again by each test file that imports this in the same worker).

const lib = koffi.load(fakeNvmlPath());
const nvmlDevice = koffi.pointer(koffi.opaque());
const violationTime = koffi.struct({ referenceTime: 'uint64', violationTime: 'uint64' });

/** `nvmlInit_v2()`: 0 (SUCCESS) or an `nvmlReturn_t`. */
export const init: () => number = lib.func('nvmlInit_v2', 'int', []);
/** `nvmlShutdown()`: 0, or UNINITIALIZED (1) once the count is back at 0. */
export const shutdown: () => number = lib.func('nvmlShutdown', 'int', []);
/** `nvmlDeviceGetHandleByIndex_v2(index, *device)`. */
export const handleByIndex: (index: number, out: unknown[]) => number = lib.func(
  'nvmlDeviceGetHandleByIndex_v2',
  'int',
  ['uint32', koffi.out(koffi.pointer(nvmlDevice))],
);
/** `nvmlDeviceGetPowerUsage(device, *mW)`. */
export const power: (device: unknown, out: number[]) => number = lib.func('nvmlDeviceGetPowerUsage', 'int', [
  nvmlDevice,
  koffi.out(koffi.pointer('uint32')),
]);
/** `nvmlDeviceGetTotalEnergyConsumption(device, *mJ)`. */
export const energy: (device: unknown, out: (number | bigint)[]) => number = lib.func(
  'nvmlDeviceGetTotalEnergyConsumption',
  'int',
  [nvmlDevice, koffi.out(koffi.pointer('uint64'))],
);
/** `nvmlDeviceGetViolationStatus(device, perfPolicyType, *nvmlViolationTime_t)` (referenceTime µs, violationTime ns). */
export const violation: (device: unknown, policy: number, out: Record<string, unknown>[]) => number =
  lib.func('nvmlDeviceGetViolationStatus', 'int', [
    nvmlDevice,
    'uint32',
    koffi.out(koffi.pointer(violationTime)),
  ]);
/** `nvmlDeviceGetPcieReplayCounter(device, *count)`. */
export const replay: (device: unknown, out: number[]) => number = lib.func(
  'nvmlDeviceGetPcieReplayCounter',
  'int',
  [nvmlDevice, koffi.out(koffi.pointer('uint32'))],
);
/** `nvmlDeviceGetFieldValues(device, count, *nvmlFieldValue_t)`, with the agent's own struct. */
export const fieldValues: (device: unknown, count: number, values: Record<string, unknown>[]) => number =
  lib.func('nvmlDeviceGetFieldValues', 'int', [
    nvmlDevice,
    'int',
    koffi.inout(koffi.pointer(nvmlFieldValue)),
  ]);

/**
 * Opens the fake with `settings` (one GPU unless they say otherwise) and returns GPU 0's handle.
 * @throws {Error} (an `expect` failure's) when init or the handle call does not answer SUCCESS
 */
export function openGpu0(settings: Parameters<typeof setFakeNvmlEnv>[0] = {}): unknown {
  setFakeNvmlEnv({ GPU_COUNT: 1, ...settings });
  const rc = init();
  if (rc !== 0) throw new Error(`Expected nvmlInit_v2 to answer SUCCESS (0), got ${rc}`);
  const out: unknown[] = [null];
  const hrc = handleByIndex(0, out);
  if (hrc !== 0)
    throw new Error(`Expected nvmlDeviceGetHandleByIndex_v2(0) to answer SUCCESS (0), got ${hrc}`);
  return out[0];
}

/** Closes every open of the fake (its init count back at 0) and clears its settings. */
export function closeAll(): void {
  while (shutdown() === 0) {}
  setFakeNvmlEnv();
}
