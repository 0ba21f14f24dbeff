import type { GpuEvent, GpuIdentity } from '../../../lambdas/contract';
import type { GpuRow } from '../../window/gpu-row';
import type { MigSliceReading } from '../../window/mig-slices';
import type { AgentSource, SampleSink, SourceContext, SourceSupport } from '../source';
import { NvmlClosedError } from './errors';
import { NvmlSource, type NvmlSourceOptions } from './nvml-source';

/**
 * NVML as the agent's GPU inventory source ({@link AgentSource}): `open()` loads NVML and takes
 * the warm-up reading (GPM needs a baseline sample; GPUs lost at open report in it, their
 * `gpu_lost` events emitted at once), `sample(into, now)` writes every GPU's reading, its events
 * and its failed calls into the poll's sink.
 *
 * @example
 * const nvml = new NvmlGpuSource({ libraryPath: config.nvmlLibraryPath, logger: log });
 * await new SourceRegistry([nvml]).open({ clock, emit, warn });
 * nvml.source.versions(); // driver, NVML, CUDA
 */
export class NvmlGpuSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'nvml';
  readonly #options: NvmlSourceOptions;
  #nvml: NvmlSource | undefined;

  /** @param options - `libraryPath`, `logger` (see {@link NvmlSourceOptions}) */
  constructor(options: NvmlSourceOptions) {
    this.#options = options;
  }

  /**
   * The open NVML source (versions, thresholds, profiling source).
   * @throws {NvmlClosedError} before `open()` or after `close()`
   */
  get source(): NvmlSource {
    if (this.#nvml === undefined) throw new NvmlClosedError('source');
    return this.#nvml;
  }

  /**
   * Loads and initialises NVML and takes the warm-up reading.
   * @returns supported, with the GPU count and the profiling source
   * @throws {NvmlUnavailableError} when NVML cannot be loaded or initialised: the agent cannot run
   */
  open(context: SourceContext): SourceSupport {
    const nvml = NvmlSource.open({ ...this.#options, clock: context.clock });
    this.#nvml = nvml;
    for (const event of nvml.sample(context.clock()).events) context.emit(event);
    return { supported: true, detail: `${nvml.identity().length} GPUs, profiling ${nvml.profilingSource()}` };
  }

  /**
   * One reading of every GPU into `into`: readings, `gpu_lost` events, failed calls; with `full`
   * false (a poll inside a window) the edge-only counters are skipped (see `NvmlMetricRow.cadence`).
   */
  sample(into: SampleSink, now: Date, full = true): void {
    const reading = this.source.sampleRows(now, full);
    // Indexed: `for…of` allocates per element under Maglev (see `NvmlSource.sampleRows`).
    const { rows, events, errors } = reading;
    for (let i = 0; i < rows.length; i++) into.row(rows[i] as GpuRow);
    for (let i = 0; i < events.length; i++) into.event(events[i] as GpuEvent);
    for (let i = 0; i < errors.length; i++) into.error(errors[i]);
  }

  /** Identity of every GPU, read once at open. */
  identity(): readonly GpuIdentity[] {
    return this.source.identity();
  }

  /**
   * The GPU instances of `gpu` at the last poll when it is in MIG mode (see `NvmlSource.migSlices`),
   * so the agent sends one window per instance; `undefined` otherwise.
   */
  migSlices(gpu: GpuIdentity): readonly MigSliceReading[] | undefined {
    return this.#nvml?.migSlices(gpu.index);
  }

  /** True when `gpu` answered the last poll out of MIG mode (see `NvmlSource.readsWhole`). */
  readsWhole(gpu: GpuIdentity): boolean {
    return this.#nvml?.readsWhole(gpu.index) ?? false;
  }

  /** Frees GPM samples and shuts NVML down. Idempotent. */
  close(): void {
    this.#nvml?.close();
  }
}
