import koffi from 'koffi';
import { formatIsoMicros, type GpuEvent, normalizePciBusId } from '../../../lambdas/contract';
import { systemClock } from '../../clock';
import { loadNvmlBinding, type NvmlBinding } from './binding';
import { NvmlUnavailableError } from './errors';
import { NVML_RETURN } from './nvml-return';
import type { NvmlLogger } from './nvml-types';
import { assertNvmlAbi, nvmlEventData, nvmlPciInfo } from './structs';

/** `nvmlEventType*` bits the watcher registers (docs/nvml.md §5). */
export const NVML_EVENT_TYPE = {
  /** `nvmlEventTypeDoubleBitEccError`: an uncorrectable ECC error → `ecc_dbe`. */
  DoubleBitEccError: 0x2,
  /** `nvmlEventTypeXidCriticalError`: an Xid; `eventData` is its code (999 = unknown) → `xid`. */
  XidCriticalError: 0x8,
} as const;

/** The event mask asked for on every GPU, intersected with `nvmlDeviceGetSupportedEventTypes`. */
export const NVML_WATCHED_EVENTS = NVML_EVENT_TYPE.XidCriticalError | NVML_EVENT_TYPE.DoubleBitEccError;

/** `nvmlEventSetWait_v2` timeout per call, ms. */
export const DEFAULT_EVENT_WAIT_TIMEOUT_MS = 500;
/** Largest accepted `waitTimeoutMs`: one libuv pool thread is held at most this long per call. */
export const MAX_EVENT_WAIT_TIMEOUT_MS = 5_000;
/** NVML's code for an Xid it cannot name. */
const UNKNOWN_XID = 999;
/** Most events one {@link NvmlEventWatcher.drain} takes; the rest wait for the next drain. */
const MAX_EVENTS_PER_DRAIN = 64;
const TWO_POW_32 = 4_294_967_296;
const SILENT_LOGGER: NvmlLogger = { info: () => {}, warn: () => {} };
const OFFSET_DEVICE = koffi.offsetof(nvmlEventData, 'device');
const OFFSET_TYPE = koffi.offsetof(nvmlEventData, 'eventType');
const OFFSET_DATA = koffi.offsetof(nvmlEventData, 'eventData');

/** Options of `NvmlEventWatcher.start`. */
export interface NvmlEventWatcherOptions {
  /** Path or soname of libnvidia-ml (see `resolveNvmlLibraryPath`). */
  readonly libraryPath: string;
  /** Receives each event as it arrives, on the main thread; the agent flushes critical events at once. A throw is logged and the loop goes on. */
  readonly onEvent: (event: GpuEvent) => void;
  /** The clock events are stamped with (`at`, µs precision string). @default systemClock */
  readonly clock?: () => Date;
  /** Where once-per-condition log lines go. @default a logger that drops everything */
  readonly logger?: NvmlLogger;
  /**
   * `nvmlEventSetWait_v2` timeout, ms, 0..5000: how long one call may hold a libuv pool thread,
   * and about the longest `stop()` waits. **0: no background wait at all**: the owner calls
   * {@link NvmlEventWatcher.drain} on its own cadence (the agent: every poll), which asks with a
   * zero timeout on the calling thread; an event then waits at most one cadence, and `stop()` is
   * immediate. @default 500
   */
  readonly waitTimeoutMs?: number;
}

/** A registered GPU. */
interface WatchedGpu {
  readonly index: number;
  readonly pciBusId: string | undefined;
  lostReported: boolean;
}

/**
 * Watches NVML events (Xid critical errors and double-bit ECC errors) on every GPU and hands each
 * one to `onEvent` as a contract `GpuEvent` (`source: 'nvml'`).
 *
 * At start: `nvmlInit_v2` (reference-counted, so it shares NVML with an `NvmlSource`),
 * `nvmlEventSetCreate`, then per GPU `nvmlDeviceGetSupportedEventTypes` and
 * `nvmlDeviceRegisterEvents(supported & (XidCriticalError 0x8 | DoubleBitEccError 0x2))`. A GPU
 * answering NOT_SUPPORTED is skipped (the set stays usable); any other error is logged and that
 * GPU skipped. Then a loop calls `nvmlEventSetWait_v2` through koffi `.async` (on the libuv pool,
 * never blocking the event loop) with a short timeout until `stop()`:
 * TIMEOUT → wait again; SUCCESS → `xid` (code = `eventData`, 999 = unknown) or `ecc_dbe`;
 * GPU_IS_LOST → one `gpu_lost` event per GPU, then waits resume after a pause of one timeout.
 *
 * NVML does not replay events that happened before registration: history (and anything while the
 * agent was down) comes from the kernel log (`kmsg` source, `NVRM: Xid` lines).
 *
 * @example
 * const watcher = NvmlEventWatcher.start({ libraryPath, onEvent: (e) => agent.flushNow(e) });
 * // … at exit
 * await watcher.stop();
 */
export class NvmlEventWatcher {
  readonly #nvml: NvmlBinding;
  readonly #set: bigint;
  readonly #gpus: Map<bigint, WatchedGpu>;
  readonly #onEvent: (event: GpuEvent) => void;
  readonly #clock: () => Date;
  readonly #logger: NvmlLogger;
  readonly #timeoutMs: number;
  readonly #data = Buffer.alloc(koffi.sizeof(nvmlEventData));
  readonly #loggedCodes = new Set<number>();
  #stopping = false;
  #waiting = false;
  #pause: ReturnType<typeof setTimeout> | undefined;
  #stopped: Promise<void> | undefined;
  #resolveStopped: (() => void) | undefined;
  #finished = false;

  private constructor(
    nvml: NvmlBinding,
    set: bigint,
    gpus: Map<bigint, WatchedGpu>,
    options: NvmlEventWatcherOptions,
    timeoutMs: number,
  ) {
    this.#nvml = nvml;
    this.#set = set;
    this.#gpus = gpus;
    this.#onEvent = options.onEvent;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? SILENT_LOGGER;
    this.#timeoutMs = timeoutMs;
  }

  /**
   * Initialises NVML, registers every GPU that supports the watched events, and starts waiting.
   *
   * @param options - `libraryPath`, `onEvent`, `clock`, `logger`, `waitTimeoutMs`
   * @returns a running watcher (if no GPU could be registered it holds nothing and `running` is false)
   * @throws {RangeError} when `waitTimeoutMs` is not an integer in 0..5000
   * @throws {NvmlUnavailableError} when the library cannot be loaded, lacks the event calls
   *   (`step: 'symbol'`), or `nvmlInit_v2` / `nvmlDeviceGetCount_v2` / `nvmlEventSetCreate` fails
   */
  static start(options: NvmlEventWatcherOptions): NvmlEventWatcher {
    const timeoutMs = options.waitTimeoutMs ?? DEFAULT_EVENT_WAIT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_EVENT_WAIT_TIMEOUT_MS) {
      throw new RangeError(
        `Expected \`waitTimeoutMs\` to be an integer in 0..${MAX_EVENT_WAIT_TIMEOUT_MS}, got \`${timeoutMs}\` (${typeof timeoutMs})`,
      );
    }
    assertNvmlAbi();
    const { libraryPath } = options;
    const logger = options.logger ?? SILENT_LOGGER;
    const nvml = loadNvmlBinding(libraryPath);
    const { eventSetCreate, eventSetFree, eventSetWait, registerEvents, supportedEventTypes } = nvml;
    if (!eventSetCreate || !eventSetFree || !eventSetWait || !registerEvents || !supportedEventTypes) {
      throw new NvmlUnavailableError(
        { libraryPath, step: 'symbol' },
        `Expected "${libraryPath}" to export the NVML event calls (nvmlEventSetCreate, nvmlEventSetWait_v2, …), got a library without them. ` +
          'Xid events then come from the kernel log only; update the NVIDIA driver to watch them through NVML.',
      );
    }
    const fail = (call: string, code: number) =>
      new NvmlUnavailableError(
        { libraryPath, step: 'init', code },
        `Expected ${call} to return NVML_SUCCESS, got ${code} (${nvml.errorString(code)}). ` +
          'Check the driver with `nvidia-smi`; Xid events then come from the kernel log only.',
      );
    const initCode = nvml.init();
    if (initCode !== NVML_RETURN.SUCCESS) throw fail('nvmlInit_v2', initCode);
    const u32 = new Uint32Array(1);
    const u64 = new Uint32Array(2);
    const out = new BigUint64Array(1);
    const countCode = nvml.deviceCount(u32);
    if (countCode !== NVML_RETURN.SUCCESS) {
      nvml.shutdown();
      throw fail('nvmlDeviceGetCount_v2', countCode);
    }
    const count = u32[0] ?? 0;
    const createCode = eventSetCreate(out);
    if (createCode !== NVML_RETURN.SUCCESS) {
      nvml.shutdown();
      throw fail('nvmlEventSetCreate', createCode);
    }
    const set = out[0] ?? 0n;
    const gpus = new Map<bigint, WatchedGpu>();
    const pci = Buffer.alloc(koffi.sizeof(nvmlPciInfo));
    for (let index = 0; index < count; index++) {
      const skip = (call: string, code: number, level: 'info' | 'warn') =>
        logger[level](
          { gpu_index: index, call, code, nvml_message: nvml.errorString(code) },
          `GPU ${index}: ${call} returned ${code}; its Xid events come from the kernel log only`,
        );
      let code = nvml.handleByIndex(index, out);
      const handle = out[0];
      if (code !== NVML_RETURN.SUCCESS || handle === undefined) {
        skip('nvmlDeviceGetHandleByIndex_v2', code, 'warn');
        continue;
      }
      code = supportedEventTypes(handle, u64);
      if (code !== NVML_RETURN.SUCCESS) {
        skip(
          'nvmlDeviceGetSupportedEventTypes',
          code,
          code === NVML_RETURN.ERROR_NOT_SUPPORTED ? 'info' : 'warn',
        );
        continue;
      }
      const mask = (u64[0] ?? 0) & NVML_WATCHED_EVENTS;
      if (mask === 0) continue;
      code = registerEvents(handle, mask, set);
      if (code !== NVML_RETURN.SUCCESS) {
        skip('nvmlDeviceRegisterEvents', code, code === NVML_RETURN.ERROR_NOT_SUPPORTED ? 'info' : 'warn');
        continue;
      }
      let pciBusId: string | undefined;
      if (nvml.pciInfo !== undefined && nvml.pciInfo(handle, pci) === NVML_RETURN.SUCCESS) {
        pciBusId = normalizePciBusId((koffi.decode(pci, nvmlPciInfo) as { busId: string }).busId);
      }
      gpus.set(handle, { index, pciBusId, lostReported: false });
    }
    const watcher = new NvmlEventWatcher(nvml, set, gpus, options, timeoutMs);
    if (gpus.size === 0) {
      logger.warn(
        { gpu_count: count },
        'No GPU accepted NVML event registration; Xid events come from the kernel log only',
      );
      watcher.#finish();
    } else if (timeoutMs > 0) {
      watcher.#wait();
    }
    return watcher;
  }

  /** True until `stop()` finishes (false from the start when no GPU could be registered). */
  get running(): boolean {
    return !this.#finished;
  }

  /** Indices of the GPUs registered for events, ascending. */
  get registeredGpus(): readonly number[] {
    return [...this.#gpus.values()].map((g) => g.index).sort((a, b) => a - b);
  }

  /**
   * Takes the events the driver holds now, without blocking: `nvmlEventSetWait_v2` with a zero
   * timeout on the calling thread, repeated while it answers an event (at most 64 per call), each
   * delivered through `onEvent` as {@link start}'s background wait would. For a watcher started
   * with `waitTimeoutMs: 0`; does nothing while a background wait is in flight or after `stop()`.
   * A lost GPU or another error ends this drain (logged once per code); the next drain asks again.
   *
   * @returns the events delivered
   */
  drain(): number {
    const wait = this.#nvml.eventSetWait;
    if (wait === undefined || this.#finished || this.#stopping || this.#waiting) return 0;
    let delivered = 0;
    for (let i = 0; i < MAX_EVENTS_PER_DRAIN; i++) {
      let code: number;
      try {
        code = wait(this.#set, this.#data, 0);
      } catch (error) {
        this.#logOnce(-1, `nvmlEventSetWait_v2 could not be called: ${String(error)}`);
        return delivered;
      }
      if (this.#answer(code) !== 'event') return delivered;
      delivered++;
    }
    return delivered;
  }

  /**
   * Stops the loop: resolves after the in-flight `nvmlEventSetWait_v2` returns (at most about one
   * `waitTimeoutMs`), then frees the set (`nvmlEventSetFree`) and calls `nvmlShutdown`.
   * Idempotent; never rejects.
   */
  stop(): Promise<void> {
    if (this.#stopped === undefined) {
      this.#stopping = true;
      this.#stopped = new Promise<void>((resolve) => {
        this.#resolveStopped = resolve;
      });
      if (this.#finished) {
        this.#resolveStopped?.();
      } else if (!this.#waiting) {
        if (this.#pause !== undefined) clearTimeout(this.#pause);
        this.#finish();
      }
    }
    return this.#stopped;
  }

  #wait(): void {
    const wait = this.#nvml.eventSetWait;
    if (this.#stopping || wait === undefined) {
      this.#finish();
      return;
    }
    this.#waiting = true;
    wait.async(this.#set, this.#data, this.#timeoutMs, (error, code) => {
      this.#waiting = false;
      if (this.#stopping) {
        this.#finish();
        return;
      }
      if (error !== null && error !== undefined) {
        this.#logOnce(-1, `nvmlEventSetWait_v2 could not be called: ${String(error)}`);
        this.#pauseThenWait();
        return;
      }
      const answer = this.#answer(code);
      if (answer === 'error') this.#pauseThenWait();
      else this.#wait();
    });
  }

  /**
   * What one `nvmlEventSetWait_v2` answered, acted on (the same for the background wait and a
   * drain): an event is delivered, a lost GPU reported once, any other code but TIMEOUT logged once.
   * @returns `event`, `idle` (TIMEOUT) or `error` (lost GPU or another code)
   */
  #answer(code: number): 'event' | 'idle' | 'error' {
    if (code === NVML_RETURN.SUCCESS) {
      this.#deliver();
      return 'event';
    }
    if (code === NVML_RETURN.ERROR_TIMEOUT) return 'idle';
    if (code === NVML_RETURN.ERROR_GPU_IS_LOST) this.#lost();
    else this.#logOnce(code, `nvmlEventSetWait_v2 returned ${code} (${this.#nvml.errorString(code)})`);
    return 'error';
  }

  /** After an error: wait one timeout on a timer (never a hot loop), then wait for events again. */
  #pauseThenWait(): void {
    this.#pause = setTimeout(() => {
      this.#pause = undefined;
      this.#wait();
    }, this.#timeoutMs);
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#nvml.eventSetFree?.(this.#set);
    this.#nvml.shutdown();
    this.#resolveStopped?.();
  }

  #deliver(): void {
    const data = this.#data;
    const type = data.readUInt32LE(OFFSET_TYPE) + data.readUInt32LE(OFFSET_TYPE + 4) * TWO_POW_32;
    const gpu = this.#gpus.get(data.readBigUInt64LE(OFFSET_DEVICE));
    if ((type & NVML_EVENT_TYPE.XidCriticalError) !== 0) {
      const raw = data.readUInt32LE(OFFSET_DATA) + data.readUInt32LE(OFFSET_DATA + 4) * TWO_POW_32;
      const xid = Number.isInteger(raw) && raw >= 1 && raw <= UNKNOWN_XID ? raw : UNKNOWN_XID;
      this.#emit(this.#event('xid', gpu), xid);
    } else if ((type & NVML_EVENT_TYPE.DoubleBitEccError) !== 0) {
      this.#emit(this.#event('ecc_dbe', gpu));
    }
  }

  #lost(): void {
    const gpu = this.#gpus.get(this.#data.readBigUInt64LE(OFFSET_DEVICE));
    if (gpu === undefined || gpu.lostReported) {
      if (gpu === undefined)
        this.#logOnce(NVML_RETURN.ERROR_GPU_IS_LOST, 'nvmlEventSetWait_v2: a GPU is lost');
      return;
    }
    gpu.lostReported = true;
    const event = this.#event('gpu_lost', gpu);
    event.detail = `nvmlEventSetWait_v2 returned ${NVML_RETURN.ERROR_GPU_IS_LOST} (${this.#nvml.errorString(NVML_RETURN.ERROR_GPU_IS_LOST)})`;
    this.#emit(event);
  }

  #event(kind: 'xid' | 'ecc_dbe' | 'gpu_lost', gpu: WatchedGpu | undefined): GpuEvent {
    const event: GpuEvent = { at: formatIsoMicros(this.#clock().getTime()), kind, source: 'nvml' };
    if (gpu !== undefined) {
      event.gpu_index = gpu.index;
      if (gpu.pciBusId !== undefined) event.pci_bus_id = gpu.pciBusId;
    }
    return event;
  }

  #emit(event: GpuEvent, xid?: number): void {
    if (xid !== undefined) event.xid = xid;
    try {
      this.#onEvent(event);
    } catch (error) {
      this.#logger.warn(
        { kind: event.kind, error: String(error) },
        'onEvent threw; the event watcher goes on',
      );
    }
  }

  #logOnce(code: number, message: string): void {
    if (this.#loggedCodes.has(code)) return;
    this.#loggedCodes.add(code);
    this.#logger.warn(
      { call: 'nvmlEventSetWait_v2', code },
      this.#timeoutMs > 0
        ? `${message}; retrying every ${this.#timeoutMs} ms`
        : `${message}; retrying at every poll`,
    );
  }
}
