import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi from 'koffi';

/** Repository root, from this file's place in `test/setup/`. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Which build of the fake NVML: `current` has every symbol, `legacy` lacks the `_v2` ones older drivers lack. */
export type FakeNvmlVariant = 'current' | 'legacy';

/** Every environment knob the fake reads at `nvmlInit_v2` (see test/fake-nvml/fake-nvml.c). */
export const FAKE_NVML_ENV_KEYS = [
  'FAKE_NVML_PRESET',
  'FAKE_NVML_GPU_COUNT',
  'FAKE_NVML_LOST_GPU',
  'FAKE_NVML_NOT_SUPPORTED',
  'FAKE_NVML_FAIL_CALL',
  'FAKE_NVML_UTIL_GPU',
  'FAKE_NVML_DBE_VOLATILE',
  'FAKE_NVML_PROCESSES',
  'FAKE_NVML_PROCESS_MEMORY_UNAVAILABLE',
  'FAKE_NVML_CLOCKS_EVENT_REASONS',
  'FAKE_NVML_UNSUPPORTED_FIELDS',
  'FAKE_NVML_POWER_VIOLATION_PCT',
  'FAKE_NVML_PCIE_REPLAY',
  'FAKE_NVML_RETIRED_PAGES_PENDING',
  'FAKE_NVML_SM_ACTIVE',
  'FAKE_NVML_TENSOR_ACTIVE',
  'FAKE_NVML_GPM_FAIL_GPU',
  'FAKE_NVML_MIG_GPU',
  'FAKE_NVML_XID_EVENTS',
  'FAKE_NVML_INIT_FAIL',
  'FAKE_NVML_CALL_COST',
  'FAKE_NVML_INIT_RSS_MB',
] as const;

/** One knob of the fake NVML. */
export type FakeNvmlEnvKey = (typeof FAKE_NVML_ENV_KEYS)[number];

/**
 * Settings of the fake NVML, by knob name without the `FAKE_NVML_` prefix.
 * Absent = the fake's default (p5 preset, 8 GPUs, idle, nothing broken).
 */
export interface FakeNvmlSettings {
  /** `p5` (8× H100 80GB HBM3, from a real capture) or `p4d` (8× A100-SXM4-40GB). @default 'p5' */
  readonly PRESET?: 'p5' | 'p4d';
  /** GPUs exposed, 0..8. @default 8 */
  readonly GPU_COUNT?: number;
  /** Index of a GPU whose device calls answer GPU_IS_LOST (15). */
  readonly LOST_GPU?: number;
  /** NVML function names answering NOT_SUPPORTED (3). */
  readonly NOT_SUPPORTED?: readonly string[];
  /** NVML function names answering UNKNOWN (999). */
  readonly FAIL_CALL?: readonly string[];
  /** `utilization.gpu`, percent 0..100. @default 0 */
  readonly UTIL_GPU?: number;
  /** Volatile uncorrected ECC count on every GPU. @default 0 */
  readonly DBE_VOLATILE?: number;
  /** Running compute processes per GPU; process k of GPU i: pid 4000 + 100·i + k, (256 + 128·k) MiB. @default 0 */
  readonly PROCESSES?: number;
  /** The first N processes of each GPU report `usedGpuMemory` = NVML_VALUE_NOT_AVAILABLE. @default 0 */
  readonly PROCESS_MEMORY_UNAVAILABLE?: number;
  /** Clocks-event reasons bitmask. @default p5 0x88 (the real capture), p4d 0x1 */
  readonly CLOCKS_EVENT_REASONS?: number;
  /** Share of time `nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER)` counts as power-capped, percent 0..100. @default 0 */
  readonly POWER_VIOLATION_PCT?: number;
  /** Field ids `nvmlDeviceGetFieldValues` answers NOT_SUPPORTED for, per value. */
  readonly UNSUPPORTED_FIELDS?: readonly number[];
  /** PCIe replay counter on every GPU. @default the capture's per-GPU values (p5), 0 (p4d) */
  readonly PCIE_REPLAY?: number;
  /** Retired pages pending flag, 0 or 1. @default absent: NOT_SUPPORTED, as on A100/H100 */
  readonly RETIRED_PAGES_PENDING?: 0 | 1;
  /** GPM SM_UTIL, percent (SM_OCCUPANCY = half, FP32 = a quarter). @default 0 */
  readonly SM_ACTIVE?: number;
  /** GPM ANY_TENSOR_UTIL, percent (FP16 = an eighth). @default 0 */
  readonly TENSOR_ACTIVE?: number;
  /** Index of a GPU whose `nvmlGpmQueryDeviceSupport` answers UNKNOWN (999). */
  readonly GPM_FAIL_GPU?: number;
  /**
   * The MIG preset: index of a GPU in MIG mode (`nvmlDeviceGetMigMode` current = 1) with GPU
   * instances 1 (3g.40gb, two compute instances; 12 GiB used; GPM graphics/SM/occupancy/tensor/DRAM
   * 80/60/30/40/50 %), 5 (2g.20gb; 4 GiB; 40/30/15/0/20 %) and 6 (2g.20gb; idle, nothing used); its
   * whole-GPU utilization answers NOT_SUPPORTED. @default none
   */
  readonly MIG_GPU?: number;
  /** Events queued at init, in order: `gpu:xid`, or `gpu:dbe` for a DoubleBitEccError. */
  readonly XID_EVENTS?: readonly string[];
  /** `true`: `nvmlInit_v2` answers DRIVER_NOT_LOADED (9). @default false */
  readonly INIT_FAIL?: boolean;
  /**
   * `h200-580`: every NVML call busy-spins on the calling thread's CPU clock for what it cost on a
   * real H200 with driver 580.159.04 (the table `H200_580_COSTS` in test/fake-nvml/fake-nvml.c,
   * e.g. `nvmlDeviceGetTotalEnergyConsumption` 3,901 µs; field values per requested id).
   * @default absent: every call is free (≈ 1 µs)
   */
  readonly CALL_COST?: 'h200-580';
  /** MiB of heap `nvmlInit_v2` touches, as the real library's own (18 ≈ the H200's 17.8 MiB). @default 0 */
  readonly INIT_RSS_MB?: number;
}

/**
 * Path of the fake `libnvidia-ml.so.1` that test/setup/global-setup.ts compiled.
 *
 * @param variant - `current` (every symbol) or `legacy` (built with `-DFAKE_NVML_LEGACY`: no
 *   `nvmlDeviceGetMemoryInfo_v2`, no `nvmlSystemGetCudaDriverVersion_v2`)
 * @returns an absolute path under `test/.build/`
 * @default variant 'current'
 */
export function fakeNvmlPath(variant: FakeNvmlVariant = 'current'): string {
  return variant === 'legacy'
    ? join(ROOT, 'test', '.build', 'legacy', 'libnvidia-ml.so.1')
    : join(ROOT, 'test', '.build', 'libnvidia-ml.so.1');
}

/**
 * Sets the fake's knobs in `process.env` for the next `nvmlInit_v2`, clearing every knob not
 * given. koffi loads the fake into the test process itself, so its settings are process state:
 * they take effect at the next `NvmlSource.open()` (the fake re-reads them at every init), a
 * test calls this before opening and closes its source after, and vitest runs each test file in
 * its own fork so files never see each other's settings.
 *
 * @param settings - the knobs to set; absent ones are removed from the environment
 * @param env - the environment to write @default process.env
 */
export function setFakeNvmlEnv(settings: FakeNvmlSettings = {}, env: NodeJS.ProcessEnv = process.env): void {
  for (const key of FAKE_NVML_ENV_KEYS) delete env[key];
  for (const [name, value] of Object.entries(settings)) {
    if (value === undefined || value === false) continue;
    const key = `FAKE_NVML_${name}`;
    env[key] = Array.isArray(value) ? value.join(',') : value === true ? '1' : String(value);
  }
}

/** koffi functions of the fake's test helpers, per variant, bound on first use. */
const helpers = new Map<
  FakeNvmlVariant,
  {
    callCount: (name: string) => number;
    setLostGpu: (index: number) => void;
    setMigLayout: (gpu: number, layout: string, staleCode: number) => number;
    injectEvent: (gpu: number, eventType: number, eventData: number) => number;
    fieldRequests: (fieldId: number) => number;
    setClock: (ms: number) => void;
  }
>();

function fakeHelpers(variant: FakeNvmlVariant) {
  let bound = helpers.get(variant);
  if (bound === undefined) {
    // The same path as the source under test: dlopen returns the already-loaded library, so
    // these read the very counters the source's calls increment.
    const lib = koffi.load(fakeNvmlPath(variant));
    const callCount = lib.func('fakeNvmlCallCount', 'int', ['const char *']);
    const setLostGpu = lib.func('fakeNvmlSetLostGpu', 'void', ['int']);
    const setMigLayout = lib.func('fakeNvmlSetMigLayout', 'int', ['int', 'const char *', 'int']);
    const injectEvent = lib.func('fakeNvmlInjectEvent', 'int', ['uint32', 'uint64', 'uint64']);
    const fieldRequests = lib.func('fakeNvmlFieldRequests', 'int', ['uint32']);
    const setClock = lib.func('fakeNvmlSetClock', 'void', ['double']);
    bound = {
      setClock: (ms) => setClock(ms),
      fieldRequests: (fieldId) => Number(fieldRequests(fieldId)),
      callCount: (name) => Number(callCount(name)),
      setLostGpu: (index) => setLostGpu(index),
      setMigLayout: (gpu, layout, staleCode) => Number(setMigLayout(gpu, layout, staleCode)),
      injectEvent: (gpu, eventType, eventData) => Number(injectEvent(gpu, eventType, eventData)),
    };
    helpers.set(variant, bound);
  }
  return bound;
}

/**
 * How many times the fake's NVML function `name` was called since the last `nvmlInit_v2`.
 *
 * @param name - an NVML symbol, e.g. `nvmlDeviceGetTotalEnergyConsumption`
 * @param variant - which build @default 'current'
 * @returns the call count, 0 if never called
 */
export function fakeNvmlCallCount(name: string, variant: FakeNvmlVariant = 'current'): number {
  return fakeHelpers(variant).callCount(name);
}

/**
 * Makes a GPU of the fake answer GPU_IS_LOST (15) to every device call from now on, as if it fell
 * off the bus mid-run; `-1` heals it. Lasts until the next `nvmlInit_v2`, which re-reads
 * `FAKE_NVML_LOST_GPU`.
 *
 * @param index - GPU index 0..7, or -1 for none
 * @param variant - which build @default 'current'
 */
export function setFakeNvmlLostGpu(index: number, variant: FakeNvmlVariant = 'current'): void {
  fakeHelpers(variant).setLostGpu(index);
}

/** The MIG layouts the fake can switch a GPU to mid-run (see {@link setFakeNvmlMigLayout}). */
export type FakeNvmlMigLayout = 'none' | '3g+2x2g' | '7x1g' | '4g+3g';

/**
 * Re-partitions a GPU of the fake mid-run, as nvidia-mig-manager does while the agent runs:
 * - `none`: MIG mode off on that GPU (`nvmlDeviceGetMigMode` current = 0; read whole again);
 * - `3g+2x2g`: the `MIG_GPU` preset (instance 1 3g.40gb, 5 and 6 2g.20gb);
 * - `7x1g`: seven 1g.10gb instances, ids 7..13, instance 7+k with k·10 % GR activity and (k+1) GiB used;
 * - `4g+3g`: instance 1 as a 4g.40gb (the preset's id with another profile; 90 % GR, 20 GiB used)
 *   and instance 2 a 3g.40gb (30 %, 8 GiB).
 * One GPU is in MIG mode at a time: a layout moves MIG mode to `gpu`. Every MIG device handle
 * given out before answers `staleCode` from now on, as the driver invalidates the handles of
 * destroyed instances (docs/nvml.md §8); a handle from two layouts back is valid again ("handles
 * may be reused", nvml.h). Lasts until the next `nvmlInit_v2`, which restores `FAKE_NVML_MIG_GPU`.
 *
 * @param gpu - GPU index 0..7
 * @param layout - the new layout
 * @param staleCode - what an old MIG device handle answers, an `nvmlReturn_t` @default 6 (NOT_FOUND)
 * @param variant - which build @default 'current'
 * @throws {Error} when the fake does not know the layout
 */
export function setFakeNvmlMigLayout(
  gpu: number,
  layout: FakeNvmlMigLayout,
  staleCode = 6,
  variant: FakeNvmlVariant = 'current',
): void {
  if (fakeHelpers(variant).setMigLayout(gpu, layout, staleCode) !== 0)
    throw new Error(`Expected a MIG layout the fake knows (none, 3g+2x2g, 7x1g, 4g+3g), got ${layout}`);
}

/**
 * Queues an NVML event in the fake for the next `nvmlEventSetWait_v2` (thread-safe in the fake);
 * delivered only to a set that registered that event type on that GPU.
 *
 * @param gpu - GPU index 0..7
 * @param eventType - `nvmlEventType*` bit, e.g. 0x8 XidCriticalError, 0x2 DoubleBitEccError
 * @param eventData - the Xid code for 0x8, else 0 @default 0
 * @param variant - which build @default 'current'
 * @throws {Error} when the fake's queue (256 events per init) is full
 */
export function injectFakeNvmlEvent(
  gpu: number,
  eventType: number,
  eventData = 0,
  variant: FakeNvmlVariant = 'current',
): void {
  if (fakeHelpers(variant).injectEvent(gpu, eventType, eventData) !== 0) {
    throw new Error('Expected the fake NVML event queue to have room, got a full queue (256 per init)');
  }
}

/**
 * How many times the fake was asked for field `fieldId` through `nvmlDeviceGetFieldValues` since
 * the last `nvmlInit_v2` (0→1).
 *
 * @param fieldId - an `NVML_FI_DEV_*` id, 0..511
 * @param variant - which build @default 'current'
 * @returns the request count
 */
export function fakeNvmlFieldRequests(fieldId: number, variant: FakeNvmlVariant = 'current'): number {
  return fakeHelpers(variant).fieldRequests(fieldId);
}

/**
 * Makes the fake's time-driven values follow a virtual clock: the energy counter (power × time),
 * the violation counters and their reference time, the growing field counters (PCIe, NVLink) and
 * the field values' timestamps. For an agent driven on a `VirtualClock`, so that 60 s of virtual
 * polls read 60 s of energy, not the few ms of real time they take. Process state of the loaded
 * library, kept across `nvmlInit_v2`: set `undefined` when done.
 *
 * @param ms - the virtual time, ms since the epoch (≥ 0); `undefined`: the real clocks again
 * @param variant - which build @default 'current'
 */
export function setFakeNvmlClock(ms: number | undefined, variant: FakeNvmlVariant = 'current'): void {
  fakeHelpers(variant).setClock(ms ?? -1);
}
