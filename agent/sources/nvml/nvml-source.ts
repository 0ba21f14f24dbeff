import koffi from 'koffi';
import { type GpuEvent, type GpuIdentity, normalizePciBusId } from '../../../lambdas/contract';
import type { GpuSample } from '../../window/gpu-sample';
import { loadNvmlBinding, type NvmlBinding } from './binding';
import { formatCudaVersion } from './cuda-version';
import { NvmlCallError, NvmlClosedError, NvmlUnavailableError } from './errors';
import { NVML_FIELD, NvmlFieldValueRequest } from './field-values';
import {
  GPM_MIN_INTERVAL_MS,
  GPM_PROFILING_METRICS,
  GPM_REQUESTS,
  type GpmMetricRequest,
  GpmMetricsRequest,
  gpmValue,
} from './gpm-metrics';
import { NVML_RETURN, nvmlOutcome } from './nvml-return';
import {
  assertNvmlAbi,
  NVML_GPM_VERSION,
  NVML_MEMORY_V2_VERSION,
  nvmlMemory,
  nvmlMemoryV2,
  nvmlPciInfo,
  nvmlProcessInfo,
} from './structs';

/**
 * Structured logger the source reports operator-relevant conditions to, once per condition
 * (a metric NOT_SUPPORTED on a GPU, a GPU lost or back, a failing call). A pino logger fits.
 */
export interface NvmlLogger {
  /** Normal conditions worth one line (a metric this GPU does not support). */
  info(data: Record<string, unknown>, message: string): void;
  /** Conditions an operator may act on (a lost GPU, a failing NVML call). */
  warn(data: Record<string, unknown>, message: string): void;
}

/** Options of `NvmlSource.open`. */
export interface NvmlSourceOptions {
  /** Path or soname of libnvidia-ml (see `resolveNvmlLibraryPath`). */
  readonly libraryPath: string;
  /** Where once-per-condition log lines go. @default a logger that drops everything */
  readonly logger?: NvmlLogger;
}

/** What one `sample(now)` read. */
export interface NvmlSampleResult {
  /** The `now` the caller passed. */
  readonly at: Date;
  /** One reading per GPU that answered; a lost GPU has no entry (its `gpu_lost` event says why). */
  readonly gpus: GpuSample[];
  /** `gpu_lost` events, one per loss (not repeated while the GPU stays lost). */
  readonly events: readonly GpuEvent[];
  /** Failed calls of this sample (and of `open()`, reported with the first sample); each also counted in `stats.nvml_errors`. */
  readonly errors: readonly NvmlCallError[];
}

/** Running counters of the source, for the batch's `agent.stats`. */
export interface NvmlSourceStats {
  /** `sample()` calls so far. */
  samples: number;
  /** NVML calls that answered an error other than NOT_SUPPORTED or a lost GPU, since `open()`. */
  nvml_errors: number;
}

/** Driver-wide versions, each absent when NVML cannot tell. */
export interface NvmlVersions {
  /** `nvmlSystemGetDriverVersion`, e.g. `535.161.08`. */
  readonly driver_version?: string;
  /** `nvmlSystemGetNVMLVersion`, e.g. `12.535.161.08`. */
  readonly nvml_version?: string;
  /** `nvmlSystemGetCudaDriverVersion_v2` (else the unversioned symbol) as `major.minor`, e.g. `12.2`. */
  readonly cuda_version?: string;
}

/**
 * A GPU's temperature thresholds, °C, read once at `open()` with
 * `nvmlDeviceGetTemperatureThreshold`; each absent when unsupported or failed. On Ada and newer
 * NVML prefers the T.Limit field values 193–196 (not read here).
 */
export interface NvmlTemperatureThresholds {
  /** `NVML_TEMPERATURE_THRESHOLD_SHUTDOWN` (0): the GPU shuts down at this temperature. */
  readonly shutdown_c?: number;
  /** `NVML_TEMPERATURE_THRESHOLD_SLOWDOWN` (1): hardware slowdown starts here. */
  readonly slowdown_c?: number;
  /** `NVML_TEMPERATURE_THRESHOLD_GPU_MAX` (3): maximum operating temperature. */
  readonly gpu_max_c?: number;
}

/** Where the profiling ratios (`sm_active`…) come from: NVML GPM (Hopper+) or nowhere. */
export type NvmlProfilingSource = 'gpm' | 'none';

/** Metrics remembered per GPU as NOT_SUPPORTED (one NVML call each, the remapped-rows call gives two fields). */
const METRIC = {
  memory: 0,
  utilization: 1,
  temperature: 2,
  power: 3,
  powerLimit: 4,
  energy: 5,
  eccSbeVolatile: 6,
  eccDbeVolatile: 7,
  eccSbeAggregate: 8,
  eccDbeAggregate: 9,
  processes: 10,
  smClock: 11,
  memClock: 12,
  remappedRows: 13,
  clocksEventReasons: 14,
  fieldValues: 15,
  pcieReplay: 16,
  retiredPages: 17,
  gpm: 18,
} as const;
type MetricId = (typeof METRIC)[keyof typeof METRIC];
const METRIC_NAMES = Object.keys(METRIC) as readonly string[];
const METRIC_COUNT = METRIC_NAMES.length;

/** NVML constants used below. Source: docs/nvml.md §3, §1.5. */
const NVML_TEMPERATURE_GPU = 0;
const NVML_CLOCK_SM = 1;
const NVML_CLOCK_MEM = 2;
const NVML_MEMORY_ERROR_CORRECTED = 0;
const NVML_MEMORY_ERROR_UNCORRECTED = 1;
const NVML_COUNTER_VOLATILE = 0;
const NVML_COUNTER_AGGREGATE = 1;
/** `NVML_DEVICE_NAME_V2_BUFFER_SIZE` / `NVML_DEVICE_UUID_V2_BUFFER_SIZE`: the largest string buffer NVML asks for. */
const STRING_BUFFER_BYTES = 96;
/** `NVML_DEVICE_SERIAL_BUFFER_SIZE`. */
const SERIAL_BUFFER_BYTES = 30;
/** `NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE` / `NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE`. */
const VERSION_BUFFER_BYTES = 80;
/** GPU indices the contract accepts (0..63). */
const MAX_GPUS = 64;
/** Most processes kept per GPU sample (the contract's `processes` limit). */
const MAX_PROCESSES = 64;
/** Extra process entries allocated beyond the probed count: the list can grow between the two calls. */
const PROCESS_SLACK = 8;
/** `NVML_VALUE_NOT_AVAILABLE` (0xFFFFFFFFFFFFFFFF) as two 32-bit words. */
const NOT_AVAILABLE_WORD = 0xffff_ffff;
/** `nvmlTemperatureThresholds_t` values read at open. */
const NVML_TEMPERATURE_THRESHOLD = { shutdown_c: 0, slowdown_c: 1, gpu_max_c: 3 } as const;
const PROCESS_STRIDE = koffi.sizeof(nvmlProcessInfo);
const PROCESS_MEMORY_OFFSET = koffi.offsetof(nvmlProcessInfo, 'usedGpuMemory');
const KIB = 1024;
type GpuProcessReading = NonNullable<GpuSample['processes']>[number];
const NO_PROCESSES: readonly GpuProcessReading[] = Object.freeze([]);
/** Field ids a driver answers this way per value when it lacks them: dropped and not requested again. */
const FIELD_LACKING = new Set<number>([NVML_RETURN.ERROR_NOT_SUPPORTED, NVML_RETURN.ERROR_INVALID_ARGUMENT]);
const TWO_POW_32 = 4_294_967_296;

const NO_EVENTS: readonly GpuEvent[] = Object.freeze([]);
const NO_ERRORS: readonly NvmlCallError[] = Object.freeze([]);
const SILENT_LOGGER: NvmlLogger = { info: () => {}, warn: () => {} };

/** Per-GPU state kept between samples. */
interface GpuState {
  readonly index: number;
  /** The NVML handle; undefined when `nvmlDeviceGetHandleByIndex_v2` failed at open. */
  readonly handle: bigint | undefined;
  readonly identity: GpuIdentity;
  /** 1 where the metric answered NOT_SUPPORTED: never polled again. */
  readonly unsupported: Uint8Array;
  /** True from the first GPU_IS_LOST / RESET_REQUIRED until a call succeeds again. */
  lost: boolean;
  /** Errors already logged, as `call:code`: each is logged once. */
  readonly loggedErrors: Set<string>;
  /** Temperature thresholds read at open. */
  thresholds: NvmlTemperatureThresholds;
  /** The reusable `nvmlDeviceGetFieldValues` request (fields the driver lacks are dropped from it). */
  readonly fields: NvmlFieldValueRequest;
  /** GPM state; undefined where GPM is unsupported or failed at open. */
  gpm: GpmState | undefined;
}

/** Per-GPU GPM state: two samples used alternately. */
interface GpmState {
  /** The two `nvmlGpmSample_t` handles from `nvmlGpmSampleAlloc`, freed at `close()`. */
  readonly samples: [bigint, bigint];
  /** Which of `samples` the next `nvmlGpmSampleGet` fills. */
  next: 0 | 1;
  /** `at_ms` of the last good GPM sample (the other buffer); undefined when there is none. */
  previousAtMs: number | undefined;
}

type MutableSample = { -readonly [K in keyof GpuSample]: GpuSample[K] };

/**
 * The NVML source: reads every GPU of the host through `libnvidia-ml.so.1` (koffi, synchronous
 * calls; each takes microseconds against the driver). One instance per process; `open` once at
 * agent start, `sample(now)` every second, `close()` at exit.
 *
 * Return codes are turned into meaning by `nvmlOutcome` (nvml-return.ts): NOT_SUPPORTED makes a
 * metric absent for that GPU for good (logged once, not polled again); GPU_IS_LOST or
 * RESET_REQUIRED reports the GPU lost (one `gpu_lost` event per loss; the GPU is probed with one
 * call per sample until it answers again); any other code is an `NvmlCallError` value. One bad
 * GPU never stops the others, and `sample()` never throws for a failed call.
 *
 * `sample()` reuses preallocated out-buffers; per call it allocates one object per GPU and the
 * result, nothing else unless something fails.
 *
 * @example
 * const nvml = NvmlSource.open({ libraryPath: resolveNvmlLibraryPath(flags.nvmlLib), logger });
 * const { gpus, events } = nvml.sample(new Date());
 */
export class NvmlSource {
  /** Source name, as in logs and `agent.profiling_source`-style labels. */
  readonly name = 'nvml';
  /** Running counters: `samples` (calls of `sample()`), `nvml_errors` (failed NVML calls). */
  readonly stats: NvmlSourceStats = { samples: 0, nvml_errors: 0 };

  readonly #nvml: NvmlBinding;
  readonly #logger: NvmlLogger;
  readonly #gpus: GpuState[] = [];
  #versions: NvmlVersions = {};
  #closed = false;
  // Reused out-parameters (koffi passes their memory to NVML without copying).
  readonly #u32 = new Uint32Array(1);
  readonly #u64 = new Uint32Array(2);
  readonly #util = new Uint32Array(2);
  readonly #mem = new Uint32Array(koffi.sizeof(nvmlMemoryV2) / 4);
  readonly #rows = [new Uint32Array(1), new Uint32Array(1), new Uint32Array(1), new Uint32Array(1)] as const;
  readonly #text = Buffer.alloc(STRING_BUFFER_BYTES);
  readonly #handle = new BigUint64Array(1);
  readonly #gpmSupport = new Uint32Array(2);
  readonly #gpmRequest = new GpmMetricsRequest();
  #processBuffer = Buffer.alloc(PROCESS_STRIDE * 16);
  // Word offsets into #mem, from the asserted koffi layouts.
  readonly #memTotalWord: number;
  readonly #memUsedWord: number;
  #events: GpuEvent[] | undefined;
  #errors: NvmlCallError[] | undefined;

  private constructor(nvml: NvmlBinding, logger: NvmlLogger) {
    this.#nvml = nvml;
    this.#logger = logger;
    const layout = nvml.memoryInfoVersion === 1 ? nvmlMemory : nvmlMemoryV2;
    this.#memTotalWord = koffi.offsetof(layout, 'total') / 4;
    this.#memUsedWord = koffi.offsetof(layout, 'used') / 4;
  }

  /**
   * Loads NVML, checks the struct ABI, calls `nvmlInit_v2`, and reads versions and every GPU's
   * handle and identity (name, UUID, serial, PCI bus id). A GPU that fails here is still listed
   * (index only) and its loss or errors come with the first `sample()`.
   *
   * @param options - `libraryPath` (see `resolveNvmlLibraryPath`), `logger`
   * @returns an open source
   * @throws {NvmlUnavailableError} when the library cannot be loaded, lacks a required symbol, or
   *   `nvmlInit_v2` / `nvmlDeviceGetCount_v2` fails: the caller falls back to replay or simulate
   * @throws {NvmlAbiError} when a koffi struct does not match the NVML header layout (a bug)
   */
  static open(options: NvmlSourceOptions): NvmlSource {
    assertNvmlAbi();
    const nvml = loadNvmlBinding(options.libraryPath);
    const initCode = nvml.init();
    if (initCode !== NVML_RETURN.SUCCESS) {
      throw new NvmlUnavailableError(
        { libraryPath: options.libraryPath, step: 'init', code: initCode },
        `Expected nvmlInit_v2 to return NVML_SUCCESS, got ${initCode} (${nvml.errorString(initCode)}). ` +
          'Check that the NVIDIA kernel module is loaded (`nvidia-smi`) and that its version matches libnvidia-ml.',
      );
    }
    const source = new NvmlSource(nvml, options.logger ?? SILENT_LOGGER);
    try {
      source.#discover(options.libraryPath);
    } catch (cause) {
      nvml.shutdown();
      throw cause;
    }
    return source;
  }

  /**
   * Reads every GPU once. Never throws for an NVML failure: those become absent metrics,
   * `gpu_lost` events and `NvmlCallError` values.
   *
   * @param now - the sample time, from the injected clock; copied into each sample as `at_ms`
   * @returns `{ at, gpus, events, errors }`
   * @throws {NvmlClosedError} when called after `close()`
   */
  sample(now: Date): NvmlSampleResult {
    if (this.#closed) throw new NvmlClosedError('sample');
    this.stats.samples++;
    const atMs = now.getTime();
    const gpus: GpuSample[] = [];
    for (const gpu of this.#gpus) {
      const reading = this.#readGpu(gpu, atMs, now);
      if (reading !== undefined) gpus.push(reading);
    }
    const events = this.#events ?? NO_EVENTS;
    const errors = this.#errors ?? NO_ERRORS;
    this.#events = undefined;
    this.#errors = undefined;
    return { at: now, gpus, events, errors };
  }

  /**
   * The identity of every GPU NVML counts, in index order, read once at `open()`.
   *
   * @returns contract `GpuIdentity` objects: `index` always; `uuid` (`nvmlDeviceGetUUID`),
   *   `name` (`nvmlDeviceGetName`), `pci_bus_id` (`nvmlDeviceGetPciInfo_v3().busId`, normalised to
   *   lower-case `0000:19:00.0`), `serial` (`nvmlDeviceGetSerial`) each absent when unsupported or failed
   * @throws {NvmlClosedError} when called after `close()`
   */
  identity(): readonly GpuIdentity[] {
    if (this.#closed) throw new NvmlClosedError('identity');
    return this.#gpus.map((gpu) => gpu.identity);
  }

  /**
   * Driver, NVML and CUDA driver versions, read once at `open()`.
   *
   * @returns `{ driver_version?, nvml_version?, cuda_version? }`, each absent when NVML cannot tell
   * @throws {NvmlClosedError} when called after `close()`
   */
  versions(): NvmlVersions {
    if (this.#closed) throw new NvmlClosedError('versions');
    return this.#versions;
  }

  /**
   * Temperature thresholds of every GPU, in index order, read once at `open()`
   * (`nvmlDeviceGetTemperatureThreshold`, °C).
   *
   * @returns one `{ shutdown_c?, slowdown_c?, gpu_max_c? }` per GPU; each field absent when unsupported or failed
   * @throws {NvmlClosedError} when called after `close()`
   */
  thresholds(): readonly NvmlTemperatureThresholds[] {
    if (this.#closed) throw new NvmlClosedError('thresholds');
    return this.#gpus.map((gpu) => gpu.thresholds);
  }

  /**
   * Where `sm_active`, `sm_occupancy`, `tensor_active`, `dram_active` and `fp*_active` come from,
   * for the batch's `agent.profiling_source`.
   *
   * @returns `gpm` when at least one GPU has NVML GPM (Hopper and newer: `nvmlGpmQueryDeviceSupport`
   *   answered `isSupportedDevice != 0` and both samples were allocated), else `none` (A100: the
   *   profiling fields stay absent; they are never derived from `gpu_util`)
   * @throws {NvmlClosedError} when called after `close()`
   */
  profilingSource(): NvmlProfilingSource {
    if (this.#closed) throw new NvmlClosedError('profilingSource');
    return this.#gpus.some((gpu) => gpu.gpm !== undefined && gpu.unsupported[METRIC.gpm] === 0)
      ? 'gpm'
      : 'none';
  }

  /**
   * Frees the GPM samples (`nvmlGpmSampleFree`) and calls `nvmlShutdown` (NVML is
   * reference-counted: it tears down when the last user leaves). Idempotent. The shared library
   * stays mapped: koffi unloads it when nothing references it.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const free = this.#nvml.gpmSampleFree;
    for (const gpu of this.#gpus) {
      if (gpu.gpm !== undefined && free !== undefined) for (const sample of gpu.gpm.samples) free(sample);
      gpu.gpm = undefined;
    }
    this.#nvml.shutdown();
  }

  #discover(libraryPath: string): void {
    const nvml = this.#nvml;
    this.#versions = this.#readVersions();
    const countCode = nvml.deviceCount(this.#u32);
    if (countCode !== NVML_RETURN.SUCCESS) {
      throw new NvmlUnavailableError(
        { libraryPath, step: 'init', code: countCode },
        `Expected nvmlDeviceGetCount_v2 to return NVML_SUCCESS, got ${countCode} (${nvml.errorString(countCode)}). ` +
          'Check the driver with `nvidia-smi`.',
      );
    }
    let count = this.#u32[0] ?? 0;
    if (count > MAX_GPUS) {
      this.#logger.warn(
        { gpu_count: count, max: MAX_GPUS },
        `NVML reports ${count} GPUs; sampling the first ${MAX_GPUS}`,
      );
      count = MAX_GPUS;
    }
    for (let index = 0; index < count; index++) this.#gpus.push(this.#discoverGpu(index));
  }

  #discoverGpu(index: number): GpuState {
    const nvml = this.#nvml;
    const identity: { -readonly [K in keyof GpuIdentity]: GpuIdentity[K] } = { index };
    const code = nvml.handleByIndex(index, this.#handle);
    const handle = code === NVML_RETURN.SUCCESS ? this.#handle[0] : undefined;
    const gpu: GpuState = {
      index,
      handle,
      identity,
      unsupported: new Uint8Array(METRIC_COUNT),
      lost: false,
      loggedErrors: new Set(),
      thresholds: {},
      fields: new NvmlFieldValueRequest(),
      gpm: undefined,
    };
    if (handle === undefined) {
      this.#judge(gpu, undefined, 'nvmlDeviceGetHandleByIndex_v2', code, new Date());
      return gpu;
    }
    const at = new Date();
    const text = (call: 'name' | 'uuid' | 'serial', length: number): string | undefined => {
      const fn = nvml[call];
      const symbol = nvml.symbols[call];
      if (fn === undefined || symbol === undefined || gpu.lost) return undefined;
      const c = fn(handle, this.#text, length);
      return this.#judge(gpu, undefined, symbol, c, at) ? decodeText(this.#text) : undefined;
    };
    const name = text('name', STRING_BUFFER_BYTES);
    if (name !== undefined && name !== '') identity.name = name.slice(0, 96);
    const uuid = text('uuid', STRING_BUFFER_BYTES);
    if (uuid !== undefined && /^(GPU|MIG)-[0-9A-Za-z-]+$/.test(uuid)) identity.uuid = uuid;
    if (nvml.pciInfo !== undefined && nvml.symbols.pciInfo !== undefined && !gpu.lost) {
      const buffer = Buffer.alloc(koffi.sizeof(nvmlPciInfo));
      const c = nvml.pciInfo(handle, buffer);
      if (this.#judge(gpu, undefined, nvml.symbols.pciInfo, c, at)) {
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
    gpu.thresholds = this.#readThresholds(gpu, handle, at);
    gpu.gpm = this.#openGpm(gpu, handle, at);
    return gpu;
  }

  #readThresholds(gpu: GpuState, handle: bigint, at: Date): NvmlTemperatureThresholds {
    const fn = this.#nvml.temperatureThreshold;
    const call = this.#nvml.symbols.temperatureThreshold ?? '';
    const thresholds: { -readonly [K in keyof NvmlTemperatureThresholds]: NvmlTemperatureThresholds[K] } = {};
    if (fn === undefined) return thresholds;
    for (const [field, type] of Object.entries(NVML_TEMPERATURE_THRESHOLD)) {
      if (gpu.lost) break;
      if (this.#judge(gpu, undefined, call, fn(handle, type, this.#u32), at)) {
        thresholds[field as keyof NvmlTemperatureThresholds] = this.#u32[0];
      }
    }
    return thresholds;
  }

  /** GPM at open: support query, then two samples; undefined (fields absent) on any failure. */
  #openGpm(gpu: GpuState, handle: bigint, at: Date): GpmState | undefined {
    const nvml = this.#nvml;
    const { gpmQueryDeviceSupport: query, gpmSampleAlloc: alloc, gpmSampleFree: free } = nvml;
    if (query === undefined || alloc === undefined || free === undefined) return undefined;
    if (nvml.gpmSampleGet === undefined || nvml.gpmMetricsGet === undefined || gpu.lost) return undefined;
    const support = this.#gpmSupport;
    support[0] = NVML_GPM_VERSION;
    support[1] = 0;
    if (!this.#judge(gpu, METRIC.gpm, 'nvmlGpmQueryDeviceSupport', query(handle, support), at))
      return undefined;
    if (support[1] === 0) {
      gpu.unsupported[METRIC.gpm] = 1;
      this.#logger.info(
        { gpu_index: gpu.index, call: 'nvmlGpmQueryDeviceSupport' },
        `GPU ${gpu.index} has no GPM (pre-Hopper): sm_active and the other profiling ratios stay absent`,
      );
      return undefined;
    }
    const samples: bigint[] = [];
    for (let i = 0; i < 2; i++) {
      const out = this.#handle;
      if (!this.#judge(gpu, METRIC.gpm, 'nvmlGpmSampleAlloc', alloc(out), at)) {
        for (const sample of samples) free(sample);
        return undefined;
      }
      samples.push(out[0] ?? 0n);
    }
    return { samples: samples as [bigint, bigint], next: 0, previousAtMs: undefined };
  }

  #readVersions(): NvmlVersions {
    const nvml = this.#nvml;
    const at = new Date();
    const versions: { -readonly [K in keyof NvmlVersions]: NvmlVersions[K] } = {};
    const text = (call: 'driverVersion' | 'nvmlVersion'): string | undefined => {
      const fn = nvml[call];
      const symbol = nvml.symbols[call];
      if (fn === undefined || symbol === undefined) return undefined;
      const buffer = Buffer.alloc(VERSION_BUFFER_BYTES);
      const c = fn(buffer, VERSION_BUFFER_BYTES);
      if (c === NVML_RETURN.SUCCESS) return decodeText(buffer) || undefined;
      this.#systemError(symbol, c, at);
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
        this.#systemError(nvml.symbols.cudaDriverVersion, c, at);
      }
    }
    return versions;
  }

  #pushError(error: NvmlCallError): void {
    this.stats.nvml_errors++;
    if (this.#errors === undefined) this.#errors = [];
    this.#errors.push(error);
  }

  #pushEvent(event: GpuEvent): void {
    if (this.#events === undefined) this.#events = [];
    this.#events.push(event);
  }

  #systemError(call: string, code: number, _at: Date): void {
    if (nvmlOutcome(code) === 'absent') return;
    const error = new NvmlCallError({ call, code, nvmlMessage: this.#nvml.errorString(code) });
    this.#pushError(error);
    this.#logger.warn({ call, code, nvml_message: error.nvmlMessage }, error.message);
  }

  /**
   * Turns one device call's return code into meaning (through `nvmlOutcome`) and records it.
   * @returns true when the out-parameter holds a value
   */
  #judge(gpu: GpuState, metric: MetricId | undefined, call: string, code: number, at: Date): boolean {
    switch (nvmlOutcome(code)) {
      case 'value':
        if (gpu.lost) {
          gpu.lost = false;
          this.#logger.info(
            { gpu_index: gpu.index, call },
            `GPU ${gpu.index} answers NVML again after being lost`,
          );
        }
        return true;
      case 'absent':
        if (metric !== undefined) {
          gpu.unsupported[metric] = 1;
          this.#logger.info(
            { gpu_index: gpu.index, call, metric: METRIC_NAMES[metric] },
            `GPU ${gpu.index} does not support ${call}: its metric stays absent and is not polled again`,
          );
        }
        return false;
      case 'lost':
        if (!gpu.lost) {
          gpu.lost = true;
          const detail = `${call} returned ${code} (${this.#nvml.errorString(code)})`;
          const event: GpuEvent = {
            at: at.toISOString(),
            kind: 'gpu_lost',
            source: 'nvml',
            gpu_index: gpu.index,
            detail,
          };
          if (gpu.identity.pci_bus_id !== undefined) event.pci_bus_id = gpu.identity.pci_bus_id;
          this.#pushEvent(event);
          this.#logger.warn(
            { gpu_index: gpu.index, pci_bus_id: gpu.identity.pci_bus_id, call, code },
            `GPU ${gpu.index} is lost: ${detail}. Expected it to answer NVML; the host likely needs a GPU reset or replacement`,
          );
        }
        return false;
      default: {
        const error = new NvmlCallError({
          call,
          gpuIndex: gpu.index,
          code,
          nvmlMessage: this.#nvml.errorString(code),
        });
        this.#pushError(error);
        const key = `${call}:${code}`;
        if (!gpu.loggedErrors.has(key)) {
          gpu.loggedErrors.add(key);
          this.#logger.warn(
            { gpu_index: gpu.index, call, code, nvml_message: error.nvmlMessage },
            error.message,
          );
        }
        return false;
      }
    }
  }

  /** Reads one GPU; undefined when it has no handle or is lost. Stops at the first lost answer. */
  #readGpu(gpu: GpuState, atMs: number, at: Date): GpuSample | undefined {
    const handle = gpu.handle;
    if (handle === undefined) return undefined;
    const nvml = this.#nvml;
    const symbols = nvml.symbols;
    const off = gpu.unsupported;
    const u32 = this.#u32;
    const u64 = this.#u64;
    const s: MutableSample = { gpu_index: gpu.index, at_ms: atMs };

    if (nvml.utilization !== undefined && off[METRIC.utilization] === 0) {
      const util = this.#util;
      if (
        this.#judge(gpu, METRIC.utilization, symbols.utilization ?? '', nvml.utilization(handle, util), at)
      ) {
        s.gpu_util = (util[0] ?? 0) / 100;
        s.mem_copy_util = (util[1] ?? 0) / 100;
      } else if (gpu.lost) return undefined;
    }
    if (nvml.memoryInfo !== undefined && off[METRIC.memory] === 0) {
      const mem = this.#mem;
      mem.fill(0);
      if (nvml.memoryInfoVersion === 2) mem[0] = NVML_MEMORY_V2_VERSION;
      if (this.#judge(gpu, METRIC.memory, symbols.memoryInfo ?? '', nvml.memoryInfo(handle, mem), at)) {
        s.fb_total_bytes = word64(mem, this.#memTotalWord);
        s.fb_used_bytes = word64(mem, this.#memUsedWord);
      } else if (gpu.lost) return undefined;
    }
    if (nvml.temperature !== undefined && off[METRIC.temperature] === 0) {
      const code = nvml.temperature(handle, NVML_TEMPERATURE_GPU, u32);
      if (this.#judge(gpu, METRIC.temperature, symbols.temperature ?? '', code, at)) s.gpu_temp_c = u32[0];
      else if (gpu.lost) return undefined;
    }
    if (nvml.powerUsage !== undefined && off[METRIC.power] === 0) {
      if (this.#judge(gpu, METRIC.power, symbols.powerUsage ?? '', nvml.powerUsage(handle, u32), at)) {
        s.power_w = (u32[0] ?? 0) / 1000;
      } else if (gpu.lost) return undefined;
    }
    if (nvml.enforcedPowerLimit !== undefined && off[METRIC.powerLimit] === 0) {
      const code = nvml.enforcedPowerLimit(handle, u32);
      if (this.#judge(gpu, METRIC.powerLimit, symbols.enforcedPowerLimit ?? '', code, at)) {
        s.power_limit_w = (u32[0] ?? 0) / 1000;
      } else if (gpu.lost) return undefined;
    }
    if (nvml.totalEnergy !== undefined && off[METRIC.energy] === 0) {
      if (this.#judge(gpu, METRIC.energy, symbols.totalEnergy ?? '', nvml.totalEnergy(handle, u64), at)) {
        s.energy_mj_total = word64(u64, 0);
      } else if (gpu.lost) return undefined;
    }
    if (nvml.clockInfo !== undefined) {
      const call = symbols.clockInfo ?? '';
      if (off[METRIC.smClock] === 0) {
        if (this.#judge(gpu, METRIC.smClock, call, nvml.clockInfo(handle, NVML_CLOCK_SM, u32), at))
          s.sm_clock_mhz = u32[0];
        else if (gpu.lost) return undefined;
      }
      if (off[METRIC.memClock] === 0) {
        if (this.#judge(gpu, METRIC.memClock, call, nvml.clockInfo(handle, NVML_CLOCK_MEM, u32), at))
          s.mem_clock_mhz = u32[0];
        else if (gpu.lost) return undefined;
      }
    }
    if (nvml.totalEccErrors !== undefined) {
      const ecc = nvml.totalEccErrors;
      const call = symbols.totalEccErrors ?? '';
      if (off[METRIC.eccSbeVolatile] === 0) {
        const code = ecc(handle, NVML_MEMORY_ERROR_CORRECTED, NVML_COUNTER_VOLATILE, u64);
        if (this.#judge(gpu, METRIC.eccSbeVolatile, call, code, at)) s.ecc_sbe_volatile = word64(u64, 0);
        else if (gpu.lost) return undefined;
      }
      if (off[METRIC.eccDbeVolatile] === 0) {
        const code = ecc(handle, NVML_MEMORY_ERROR_UNCORRECTED, NVML_COUNTER_VOLATILE, u64);
        if (this.#judge(gpu, METRIC.eccDbeVolatile, call, code, at)) s.ecc_dbe_volatile = word64(u64, 0);
        else if (gpu.lost) return undefined;
      }
      if (off[METRIC.eccSbeAggregate] === 0) {
        const code = ecc(handle, NVML_MEMORY_ERROR_CORRECTED, NVML_COUNTER_AGGREGATE, u64);
        if (this.#judge(gpu, METRIC.eccSbeAggregate, call, code, at)) s.ecc_sbe_aggregate = word64(u64, 0);
        else if (gpu.lost) return undefined;
      }
      if (off[METRIC.eccDbeAggregate] === 0) {
        const code = ecc(handle, NVML_MEMORY_ERROR_UNCORRECTED, NVML_COUNTER_AGGREGATE, u64);
        if (this.#judge(gpu, METRIC.eccDbeAggregate, call, code, at)) s.ecc_dbe_aggregate = word64(u64, 0);
        else if (gpu.lost) return undefined;
      }
    }
    if (nvml.remappedRows !== undefined && off[METRIC.remappedRows] === 0) {
      const [corr, unc, pending, failure] = this.#rows;
      const code = nvml.remappedRows(handle, corr, unc, pending, failure);
      if (this.#judge(gpu, METRIC.remappedRows, symbols.remappedRows ?? '', code, at)) {
        s.remapped_rows_pending = pending[0] !== 0;
        s.remapped_rows_failure = failure[0] !== 0;
      } else if (gpu.lost) return undefined;
    }
    if (nvml.computeProcesses !== undefined && off[METRIC.processes] === 0) {
      if (!this.#readProcesses(gpu, handle, s, at) && gpu.lost) return undefined;
    }
    if (nvml.clocksEventReasons !== undefined && off[METRIC.clocksEventReasons] === 0) {
      const code = nvml.clocksEventReasons(handle, u64);
      if (this.#judge(gpu, METRIC.clocksEventReasons, symbols.clocksEventReasons ?? '', code, at)) {
        s.clocks_event_reasons = word64(u64, 0);
      } else if (gpu.lost) return undefined;
    }
    if (nvml.pcieReplayCounter !== undefined && off[METRIC.pcieReplay] === 0) {
      const code = nvml.pcieReplayCounter(handle, u32);
      if (this.#judge(gpu, METRIC.pcieReplay, symbols.pcieReplayCounter ?? '', code, at)) {
        s.pcie_replay_count = u32[0];
      } else if (gpu.lost) return undefined;
    }
    if (nvml.retiredPagesPending !== undefined && off[METRIC.retiredPages] === 0) {
      const code = nvml.retiredPagesPending(handle, u32);
      if (this.#judge(gpu, METRIC.retiredPages, symbols.retiredPagesPending ?? '', code, at)) {
        s.retired_pages_pending = u32[0] !== 0;
      } else if (gpu.lost) return undefined;
    }
    if (nvml.fieldValues !== undefined && off[METRIC.fieldValues] === 0 && gpu.fields.count > 0) {
      if (!this.#readFieldValues(gpu, handle, s, at) && gpu.lost) return undefined;
    }
    if (gpu.gpm !== undefined && off[METRIC.gpm] === 0) {
      if (!this.#readGpm(gpu, gpu.gpm, handle, s, atMs, at) && gpu.lost) return undefined;
    }
    // A GPU that was lost and answered nothing at all stays out of the sample.
    return gpu.lost ? undefined : s;
  }

  /**
   * `nvmlDeviceGetComputeRunningProcesses_v3`: probe with count 0, then a reused buffer
   * over-allocated by `PROCESS_SLACK` entries. @returns false when a call failed
   */
  #readProcesses(gpu: GpuState, handle: bigint, s: MutableSample, at: Date): boolean {
    const fn = this.#nvml.computeProcesses;
    const call = this.#nvml.symbols.computeProcesses ?? '';
    const u32 = this.#u32;
    if (fn === undefined) return false;
    // Probe: SUCCESS means none run; INSUFFICIENT_SIZE writes the count.
    u32[0] = 0;
    const probe = fn(handle, u32, null);
    if (probe === NVML_RETURN.SUCCESS) {
      this.#judge(gpu, METRIC.processes, call, probe, at);
      s.compute_processes = 0;
      s.processes = NO_PROCESSES;
      return true;
    }
    if (probe !== NVML_RETURN.ERROR_INSUFFICIENT_SIZE)
      return this.#judge(gpu, METRIC.processes, call, probe, at);
    const probed = u32[0] ?? 0;
    const capacity = probed + PROCESS_SLACK;
    if (this.#processBuffer.length < capacity * PROCESS_STRIDE) {
      this.#processBuffer = Buffer.alloc(capacity * 2 * PROCESS_STRIDE);
    }
    const buffer = this.#processBuffer;
    u32[0] = buffer.length / PROCESS_STRIDE;
    const code = fn(handle, u32, buffer);
    if (code === NVML_RETURN.ERROR_INSUFFICIENT_SIZE) {
      // Grew past the slack between the two calls: the count is known, the list is not.
      this.#judge(gpu, METRIC.processes, call, NVML_RETURN.SUCCESS, at);
      s.compute_processes = u32[0] ?? probed;
      return true;
    }
    if (!this.#judge(gpu, METRIC.processes, call, code, at)) return false;
    const count = u32[0] ?? 0;
    s.compute_processes = count;
    const list: GpuProcessReading[] = [];
    for (let i = 0; i < count; i++) {
      const offset = i * PROCESS_STRIDE;
      const lo = buffer.readUInt32LE(offset + PROCESS_MEMORY_OFFSET);
      const hi = buffer.readUInt32LE(offset + PROCESS_MEMORY_OFFSET + 4);
      const pid = buffer.readUInt32LE(offset);
      list.push(
        lo === NOT_AVAILABLE_WORD && hi === NOT_AVAILABLE_WORD
          ? { pid }
          : { pid, fb_used_bytes: lo + hi * TWO_POW_32 },
      );
    }
    list.sort((a, b) => (b.fb_used_bytes ?? -1) - (a.fb_used_bytes ?? -1) || a.pid - b.pid);
    s.processes = list.length > MAX_PROCESSES ? list.slice(0, MAX_PROCESSES) : list;
    return true;
  }

  /**
   * One `nvmlDeviceGetFieldValues` call for every field still requested; per-value NOT_SUPPORTED
   * or INVALID_ARGUMENT drops the field for good. @returns false when the call or a value failed
   */
  #readFieldValues(gpu: GpuState, handle: bigint, s: MutableSample, at: Date): boolean {
    const fn = this.#nvml.fieldValues;
    const request = gpu.fields;
    if (fn === undefined) return false;
    request.prepare();
    const code = fn(handle, request.count, request.buffer);
    if (!this.#judge(gpu, METRIC.fieldValues, this.#nvml.symbols.fieldValues ?? '', code, at)) return false;
    let ok = true;
    let lacking: number[] | undefined;
    let crc: number | undefined;
    for (let i = 0; i < request.count; i++) {
      const fieldId = request.fieldIdAt(i);
      const rc = request.returnAt(i);
      if (rc !== NVML_RETURN.SUCCESS) {
        if (FIELD_LACKING.has(rc)) {
          if (lacking === undefined) lacking = [];
          lacking.push(fieldId);
        } else if (!this.#judge(gpu, undefined, `nvmlDeviceGetFieldValues(fieldId ${fieldId})`, rc, at)) {
          ok = false;
          if (gpu.lost) return false;
        }
        continue;
      }
      const value = request.valueAt(i);
      if (value === undefined || !Number.isFinite(value) || value < 0) continue;
      switch (fieldId) {
        case NVML_FIELD.MEMORY_TEMP:
          s.mem_temp_c = value;
          break;
        case NVML_FIELD.PCIE_COUNT_TX_BYTES:
          s.pcie_tx_bytes_total = value;
          break;
        case NVML_FIELD.PCIE_COUNT_RX_BYTES:
          s.pcie_rx_bytes_total = value;
          break;
        case NVML_FIELD.NVLINK_THROUGHPUT_DATA_TX:
          s.nvlink_tx_bytes_total = value * KIB;
          break;
        case NVML_FIELD.NVLINK_THROUGHPUT_DATA_RX:
          s.nvlink_rx_bytes_total = value * KIB;
          break;
        case NVML_FIELD.NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
        case NVML_FIELD.NVLINK_CRC_DATA_ERROR_COUNT_TOTAL:
          crc = (crc ?? 0) + value;
          break;
      }
    }
    if (crc !== undefined) s.nvlink_crc_errors = crc;
    if (lacking !== undefined) {
      request.drop(lacking);
      this.#logger.info(
        { gpu_index: gpu.index, call: 'nvmlDeviceGetFieldValues', field_ids: lacking },
        `GPU ${gpu.index} lacks NVML field ids ${lacking.join(', ')}: their metrics stay absent and are not requested again`,
      );
    }
    return ok;
  }

  /**
   * GPM: `nvmlGpmSampleGet` into the alternate buffer once ≥ `GPM_MIN_INTERVAL_MS` have passed
   * (by the injected clock) since the last GPM sample, then `nvmlGpmMetricsGet` over the two.
   * @returns false when a call failed
   */
  #readGpm(gpu: GpuState, gpm: GpmState, handle: bigint, s: MutableSample, atMs: number, at: Date): boolean {
    const nvml = this.#nvml;
    const sampleGet = nvml.gpmSampleGet;
    const metricsGet = nvml.gpmMetricsGet;
    if (sampleGet === undefined || metricsGet === undefined) return false;
    const previousAtMs = gpm.previousAtMs;
    // Too soon: keep the older sample so the next interval is long enough.
    if (previousAtMs !== undefined && atMs >= previousAtMs && atMs - previousAtMs < GPM_MIN_INTERVAL_MS)
      return true;
    const newer = gpm.samples[gpm.next];
    const older = gpm.samples[gpm.next === 0 ? 1 : 0];
    if (!this.#judge(gpu, METRIC.gpm, 'nvmlGpmSampleGet', sampleGet(handle, newer), at)) {
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
    const request = this.#gpmRequest;
    request.prepare(older, newer, numMetrics);
    if (!this.#judge(gpu, undefined, 'nvmlGpmMetricsGet', metricsGet(request.buffer), at)) return false;
    for (let i = 0; i < numMetrics; i++) {
      if (request.returnAt(i) !== NVML_RETURN.SUCCESS) continue;
      const metric = GPM_REQUESTS[i] as GpmMetricRequest;
      const value = gpmValue(request.valueAt(i), metric.unit);
      if (value !== undefined) s[metric.field] = value;
    }
    return true;
  }
}

/** Reads the little-endian 64-bit unsigned value at `word` (32-bit word index) as a number (exact below 2^53). */
function word64(words: Uint32Array, word: number): number {
  return (words[word] ?? 0) + (words[word + 1] ?? 0) * TWO_POW_32;
}

/** Decodes a NUL-terminated C string from `buffer`. */
function decodeText(buffer: Buffer): string {
  const end = buffer.indexOf(0);
  return buffer.toString('utf8', 0, end === -1 ? buffer.length : end).trim();
}

function hex(value: number, digits: number): string {
  return value.toString(16).padStart(digits, '0');
}
