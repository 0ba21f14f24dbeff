import type { GpuIdentity } from '../../../lambdas/contract';
import { type Clock, systemClock } from '../../clock';
import { type GpuRow, sampleFromRow } from '../../window/gpu-row';
import type { MigSliceReading } from '../../window/mig-slices';
import { loadNvmlBinding, type NvmlBinding } from './binding';
import { NvmlClosedError, NvmlUnavailableError } from './errors';
import { NvmlCallRecorder } from './nvml-call-recorder';
import { discoverNvmlGpus, readNvmlVersions } from './nvml-discovery';
import { NvmlFieldReader } from './nvml-field-reader';
import { NvmlGpmReader } from './nvml-gpm-reader';
import type { NvmlGpuState } from './nvml-gpu-state';
import {
  NVML_CALL_SLOT_NAMES,
  NVML_CALL_SLOTS,
  NVML_METRIC_ROWS,
  NvmlMetricBuffers,
  type NvmlMetricRow,
} from './nvml-metric-table';
import { NvmlMigReader } from './nvml-mig-reader';
import { NvmlProcessReader } from './nvml-process-reader';
import { NVML_RETURN } from './nvml-return';
import type {
  NvmlLogger,
  NvmlProfilingSource,
  NvmlRowSampleResult,
  NvmlSampleResult,
  NvmlSourceStats,
  NvmlTemperatureThresholds,
  NvmlVersions,
} from './nvml-types';
import { assertNvmlAbi } from './structs';

/** Options of `NvmlSource.open`. */
export interface NvmlSourceOptions {
  /** Path or soname of libnvidia-ml (see `resolveNvmlLibraryPath`). */
  readonly libraryPath: string;
  /** Where once-per-condition log lines go. @default a logger that drops everything */
  readonly logger?: NvmlLogger;
  /** The clock that stamps what discovery finds (a GPU lost at open). @default systemClock */
  readonly clock?: Clock;
}

const SILENT_LOGGER: NvmlLogger = { info: () => {}, warn: () => {} };

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
 * The reading is table-driven: one row per NVML call (`NVML_METRIC_ROWS`: the bound call with its
 * fallback symbols, how it is invoked, the fields it fills and their unit conversion), then the
 * readers with variable-length buffers (processes, field values, GPM). Discovery (versions,
 * handles, identity, thresholds) is `nvml-discovery.ts`; return codes are judged in one place,
 * `NvmlCallRecorder`. `sampleRows()` reuses preallocated out-buffers and one row per GPU: it
 * allocates nothing but process lists unless something fails; `sample()` adds one object per GPU.
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
  readonly #recorder: NvmlCallRecorder;
  readonly #buffers: NvmlMetricBuffers;
  readonly #processes: NvmlProcessReader;
  readonly #fields: NvmlFieldReader;
  readonly #gpm: NvmlGpmReader;
  readonly #mig: NvmlMigReader;
  /** The rows of the metric table this library binds, with their slot and symbol, resolved once. */
  readonly #rows: readonly { readonly row: NvmlMetricRow; readonly slot: number; readonly symbol: string }[];
  #gpus: NvmlGpuState[] = [];
  /** The rows `sampleRows` returns, refilled at every call. */
  readonly #rowsOut: GpuRow[] = [];
  #versions: NvmlVersions = {};
  #closed = false;

  private constructor(nvml: NvmlBinding, logger: NvmlLogger) {
    this.#nvml = nvml;
    this.#recorder = new NvmlCallRecorder(nvml, logger, NVML_CALL_SLOT_NAMES, this.stats);
    this.#buffers = new NvmlMetricBuffers(nvml.memoryInfoVersion);
    this.#processes = new NvmlProcessReader(nvml, this.#recorder);
    this.#fields = new NvmlFieldReader(nvml, this.#recorder, logger);
    this.#gpm = new NvmlGpmReader(nvml, this.#recorder, logger);
    this.#mig = new NvmlMigReader(nvml, this.#recorder, logger);
    this.#rows = NVML_METRIC_ROWS.flatMap((row, slot) =>
      nvml[row.call] === undefined ? [] : [{ row, slot, symbol: nvml.symbols[row.call] ?? '' }],
    );
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
    const logger = options.logger ?? SILENT_LOGGER;
    const source = new NvmlSource(nvml, logger);
    try {
      const context = { nvml, recorder: source.#recorder, gpm: source.#gpm, mig: source.#mig, logger };
      source.#versions = readNvmlVersions(context);
      source.#gpus = discoverNvmlGpus(context, options.libraryPath, (options.clock ?? systemClock)());
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
   * @returns `{ at, gpus, events, errors }`: one sample object per GPU that answered (made from
   *   its row, see {@link sampleRows})
   * @throws {NvmlClosedError} when called after `close()`
   */
  sample(now: Date): NvmlSampleResult {
    const { at, rows, events, errors } = this.sampleRows(now);
    return { at, gpus: rows.map(sampleFromRow), events, errors };
  }

  /**
   * {@link sample} without an object per reading, for the agent's poll: each GPU that answered is
   * its `GpuRow`, owned by the source and overwritten at the next call (copy what must live on).
   *
   * @param now - the sample time, from the injected clock
   * @param full - false on a poll inside a window: the table's `edge` rows and the edge field ids
   *   (`NVML_EDGE_FIELDS`: cumulative counters, slow-changing state) are skipped and stay absent in
   *   this reading. @default true
   * @returns `{ at, rows, events, errors }`; `rows` is valid until the next call
   * @throws {NvmlClosedError} when called after `close()`
   */
  sampleRows(now: Date, full = true): NvmlRowSampleResult {
    if (this.#closed) throw new NvmlClosedError('sample');
    this.stats.samples++;
    const atMs = now.getTime();
    const rows = this.#rowsOut;
    rows.length = 0;
    // Indexed loops on the per-poll path: `for…of` over an array allocates an iterator result per
    // element under Maglev (the agent runs without TurboFan), ≈ 45 bytes each (BENCHMARKS.md,
    // 2026-11-28 "the agent's CPU per poll and window").
    const gpus = this.#gpus;
    for (let i = 0; i < gpus.length; i++) {
      const gpu = gpus[i] as NvmlGpuState;
      const reading = this.#readGpu(gpu, atMs, now, full);
      if (reading !== undefined) rows.push(reading);
    }
    const { events, errors } = this.#recorder.take();
    return { at: now, rows, events, errors };
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
    return this.#gpus.some((gpu) => gpu.gpm !== undefined && gpu.unsupported[NVML_CALL_SLOTS.gpm] === 0)
      ? 'gpm'
      : 'none';
  }

  /**
   * The GPU instances of a GPU in MIG mode as the last `sample()` read them: id, profile,
   * framebuffer used (`nvmlDeviceGetMemoryInfo_v2` on the instance's MIG device) and GPM ratios
   * (`nvmlGpmMigSampleGet`: `gpu_util` from GRAPHICS_UTIL, `sm_active`, `sm_occupancy`,
   * `tensor_active`, `dram_active`), each absent where the driver cannot give it.
   *
   * @param index - the GPU index
   * @returns one reading per instance, by instance id; undefined when the GPU is not in MIG mode,
   *   its instances could not be read, it did not answer at the last sample, or the last sample
   *   found it re-partitioned (the new instances are read from the next sample)
   * @throws {NvmlClosedError} when called after `close()`
   */
  migSlices(index: number): readonly MigSliceReading[] | undefined {
    if (this.#closed) throw new NvmlClosedError('migSlices');
    return this.#gpus[index]?.mig?.readings;
  }

  /**
   * Whether a GPU is read whole because NVML says it is out of MIG mode (`nvmlDeviceGetMigMode`
   * current = 0 at the last look, `MIG_RESCAN_INTERVAL_MS`), and it answered the last sample.
   *
   * @param index - the GPU index
   * @returns false where the driver cannot tell MIG mode (no `nvmlDeviceGetMigMode`, or
   *   NOT_SUPPORTED), in MIG mode, or when the GPU has no handle or is lost
   * @throws {NvmlClosedError} when called after `close()`
   */
  readsWhole(index: number): boolean {
    if (this.#closed) throw new NvmlClosedError('readsWhole');
    const gpu = this.#gpus[index];
    return gpu !== undefined && gpu.handle !== undefined && !gpu.lost && gpu.migWatched && !gpu.migMode;
  }

  /**
   * Frees the GPM samples (`nvmlGpmSampleFree`) and calls `nvmlShutdown` (NVML is
   * reference-counted: it tears down when the last user leaves). Idempotent. The shared library
   * stays mapped: koffi unloads it when nothing references it.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const gpu of this.#gpus) {
      if (gpu.gpm !== undefined) this.#gpm.free(gpu.gpm);
      gpu.gpm = undefined;
      if (gpu.mig !== undefined) this.#mig.free(gpu.mig);
    }
    this.#nvml.shutdown();
  }

  /**
   * Reads one GPU: every row of the metric table it supports, then processes, field values and
   * GPM. Undefined when it has no handle or is lost; stops at the first lost answer.
   */
  #readGpu(gpu: NvmlGpuState, atMs: number, at: Date, full: boolean): GpuRow | undefined {
    const handle = gpu.handle;
    if (handle === undefined) return undefined;
    const nvml = this.#nvml;
    const off = gpu.unsupported;
    const out = this.#buffers;
    const recorder = this.#recorder;
    const row = gpu.row;
    row.reset(atMs);
    // A re-partition (or MIG mode switched on or off) is looked for every MIG_RESCAN_INTERVAL_MS.
    const mig = this.#mig;
    const gpm = gpu.gpm !== undefined;
    mig.check(gpu, handle, gpm, atMs, at);
    if (gpu.mig !== undefined) gpu.mig.readings = undefined;
    const values = row.values;
    const table = this.#rows;
    for (let i = 0; i < table.length; i++) {
      const { row: metric, slot, symbol } = table[i] as (typeof table)[number];
      if (off[slot] !== 0 || (!full && metric.cadence === 'edge')) continue;
      if (recorder.judge(gpu, slot, symbol, metric.invoke(nvml, handle, out), at)) metric.store(out, values);
      else if (gpu.lost) return undefined;
    }
    if (nvml.computeProcesses !== undefined && off[NVML_CALL_SLOTS.processes] === 0) {
      if (!this.#processes.read(gpu, handle, row, at) && gpu.lost) return undefined;
    }
    if (
      nvml.fieldValues !== undefined &&
      off[NVML_CALL_SLOTS.fieldValues] === 0 &&
      gpu.fields.countFor(full) > 0
    ) {
      if (!this.#fields.read(gpu, handle, values, at, full) && gpu.lost) return undefined;
    }
    if (gpu.gpm !== undefined && off[NVML_CALL_SLOTS.gpm] === 0) {
      if (!this.#gpm.read(gpu, gpu.gpm, handle, values, atMs, at) && gpu.lost) return undefined;
    }
    if (gpu.mig !== undefined) {
      mig.read(gpu, gpu.mig, handle, atMs);
      // A failed call on an instance: the layout may have changed, look at once (never a lost GPU).
      mig.settle(gpu, handle, gpm, atMs, at);
    }
    // A GPU that was lost and answered nothing at all stays out of the sample.
    return gpu.lost ? undefined : row;
  }
}
