import type { EfaWindow, GpuEvent, GpuIdentity, K8sWorkload } from '../../lambdas/contract';
import { COLUMN_INDEX, type GpuRow, rowValue } from '../window/gpu-row';
import type { GpuSample } from '../window/gpu-sample';
import type { MigSliceReading } from '../window/mig-slices';
import { type AgentSource, NODE_TIMERS, type SourceContext, type SourceSupport } from './source';

/** One poll of every open source: instant readings per GPU, events seen, and call errors (values, not throws). */
export interface SourceReading {
  /** Readings as objects (simulations, replays, test sources). */
  readonly gpus: readonly GpuSample[];
  /** Readings as rows (NVML: no object per reading); each valid until its source's next poll. */
  readonly rows?: readonly GpuRow[];
  /** Events found while sampling (a GPU lost at this poll, a replayed XID now due). */
  readonly events: readonly GpuEvent[];
  /** Failed calls, as values (counted in `agent.stats.nvml_errors`). */
  readonly errors: readonly unknown[];
}

/** One source's answer at open, for the start-up log line and tests. */
export interface OpenedSource {
  readonly name: string;
  readonly support: SourceSupport;
}

/** What {@link SourceRegistry.open} needs beyond the sources: the context without its defaults. */
export type SourceRegistryContext = Omit<SourceContext, 'timers'> & Partial<Pick<SourceContext, 'timers'>>;

const NO_GPUS: readonly GpuIdentity[] = Object.freeze([]);

/**
 * The agent's sources, iterated: opens each in order (an unsupported one is kept out with its
 * reason), polls the supported ones into one sink, closes the windows of the window sources, and
 * closes them all in reverse order. The agent loop sees its sources only through the registry:
 * one poll ({@link SourceRegistry.sample}, profiling overlays merged), one window close
 * ({@link SourceRegistry.window}), the GPU inventory and the pods holding the GPUs.
 *
 * @example
 * const registry = new SourceRegistry([nvml, dcgm, nvmlEvents, kmsg, imds, efa]);
 * const opened = await registry.open({ clock, emit: (e) => loop.pushEvent(e), warn });
 * const reading = registry.sample(clock()); // { gpus, rows, events, errors }
 * const efa = registry.window(start, end); // each window source's EFA deltas
 */
export class SourceRegistry {
  readonly #sources: readonly AgentSource[];
  /** Sources whose `open()` returned (supported or not), in order: the ones `close()` closes. */
  #started: AgentSource[] = [];
  /** The supported ones: the ones polled and windowed. */
  #open: AgentSource[] = [];
  #opened: OpenedSource[] = [];

  /** @param sources - in poll order: the GPU inventory source first, then the sources that overlay it */
  constructor(sources: readonly AgentSource[]) {
    this.#sources = sources;
  }

  /** Every source's answer at open, in order. */
  get opened(): readonly OpenedSource[] {
    return this.#opened;
  }

  /**
   * Opens every source in order. Unsupported sources are left out of polls and windows (their
   * reason in {@link opened}); if a source throws, the ones already started are closed and the
   * error goes on.
   *
   * @param context - clock, `emit`, `warn`, and `timers` (@default {@link NODE_TIMERS})
   * @returns each source's answer, in order
   * @throws what a required source throws (NVML unavailable)
   */
  async open(context: SourceRegistryContext): Promise<readonly OpenedSource[]> {
    const full: SourceContext = { timers: NODE_TIMERS, ...context };
    for (const source of this.#sources) {
      let support: SourceSupport;
      try {
        support = await source.open(full);
      } catch (err) {
        await this.close();
        throw err;
      }
      this.#started.push(source);
      this.#opened.push({ name: source.name, support });
      if (support.supported) this.#open.push(source);
    }
    return this.#opened;
  }

  /**
   * One poll of every open source into one reading: the GPU readings (objects and rows), then
   * each overlay merged into a reading that lacks profiling counters (`sm_active` absent),
   * filling only absent fields.
   *
   * @param now - the poll time
   * @param full - false on a poll inside a flush window (see `AgentSource.sample`). @default true
   * @returns `{ gpus, rows, events, errors }`; `rows` belong to their source (valid until its next poll)
   */
  sample(now: Date, full = true): SourceReading {
    const gpus: GpuSample[] = [];
    const rows: GpuRow[] = [];
    let overlays: Map<number, Partial<GpuSample>> | undefined;
    const events: GpuEvent[] = [];
    const errors: unknown[] = [];
    const sink = {
      gpu: (s: GpuSample) => void gpus.push(s),
      row: (r: GpuRow) => void rows.push(r),
      overlay: (index: number, fields: Partial<GpuSample>) => {
        overlays ??= new Map();
        overlays.set(index, { ...overlays.get(index), ...fields });
      },
      event: (e: GpuEvent) => void events.push(e),
      error: (e: unknown) => void errors.push(e),
    };
    // Indexed loops on the per-poll path: `for…of` allocates per element under Maglev (see
    // `NvmlSource.sampleRows`).
    const open = this.#open;
    for (let i = 0; i < open.length; i++) open[i]?.sample?.(sink, now, full);
    if (overlays !== undefined) {
      for (let i = 0; i < gpus.length; i++) {
        const sample = gpus[i] as GpuSample;
        const extra = overlays.get(sample.gpu_index);
        if (extra !== undefined && sample.sm_active === undefined) gpus[i] = withOverlay(sample, extra);
      }
      for (const row of rows) {
        const extra = overlays.get(row.gpuIndex);
        if (extra !== undefined && Number.isNaN(row.values[COLUMN_INDEX.sm_active])) overlayRow(row, extra);
      }
    }
    return { gpus, rows, events, errors };
  }

  /** The GPU inventory: `identity()` of the first open source that has one; empty when none does. */
  identity(): readonly GpuIdentity[] {
    for (const source of this.#open) if (source.identity) return source.identity();
    return NO_GPUS;
  }

  /** The pod holding `gpu`: the first open source that knows one; `undefined` when none does. */
  workload(gpu: GpuIdentity): K8sWorkload | undefined {
    for (const source of this.#open) {
      const k8s = source.workload?.(gpu);
      if (k8s !== undefined) return k8s;
    }
    return undefined;
  }

  /**
   * The MIG slices of `gpu`: those of the first open source that reads them (NVML, per GPU instance),
   * each completed with what a later source says of the same instance id and the first lacks — the
   * pod from dcgm-exporter's labels, its GR activity where NVML has no GPM (A100); `undefined` when no
   * source reads slices (not MIG).
   */
  migSlices(gpu: GpuIdentity): readonly MigSliceReading[] | undefined {
    let merged: readonly MigSliceReading[] | undefined;
    const open = this.#open;
    for (let i = 0; i < open.length; i++) {
      const slices = open[i]?.migSlices?.(gpu);
      if (slices === undefined) continue;
      if (merged === undefined) {
        merged = slices;
        continue;
      }
      merged = merged.map((first) => {
        const later = slices.find((s) => s.gpu_instance_id === first.gpu_instance_id);
        return later === undefined ? first : { ...later, ...first };
      });
    }
    return merged;
  }

  /**
   * Whether an open source read `gpu` whole at the last poll, knowing it out of MIG mode
   * (`AgentSource.readsWhole`); false when none can tell.
   */
  readsWhole(gpu: GpuIdentity): boolean {
    const open = this.#open;
    for (let i = 0; i < open.length; i++) if (open[i]?.readsWhole?.(gpu) === true) return true;
    return false;
  }

  /**
   * Closes a flush window on every window source.
   * @returns the EFA windows of every window source, in source order
   */
  window(start: Date, end: Date): EfaWindow[] {
    const efa: EfaWindow[] = [];
    const sink = { efa: (w: EfaWindow) => void efa.push(w) };
    for (const source of this.#open) source.window?.(sink, start, end);
    return efa;
  }

  /**
   * Closes every started source in reverse order; a failure is reported through `onError` and the
   * others still close. Idempotent.
   */
  async close(onError?: (name: string, err: unknown) => void): Promise<void> {
    const started = this.#started;
    this.#started = [];
    this.#open = [];
    for (const source of started.reverse()) {
      try {
        await source.close();
      } catch (err) {
        onError?.(source.name, err);
      }
    }
  }
}

/** Writes `extra`'s fields into the row's absent (`NaN`) columns, encoded as `rowFromSample` encodes them. */
function overlayRow(row: GpuRow, extra: Partial<GpuSample>): void {
  for (const [key, value] of Object.entries(extra)) {
    const column = (COLUMN_INDEX as Record<string, number | undefined>)[key];
    if (column === undefined || !Number.isNaN(row.values[column])) continue;
    row.values[column] = rowValue(column, value);
  }
}

/** A sample with `extra`'s fields where the sample has none. */
function withOverlay(sample: GpuSample, extra: Partial<GpuSample>): GpuSample {
  const merged: Record<string, unknown> = { ...sample };
  for (const [key, value] of Object.entries(extra)) if (merged[key] === undefined) merged[key] = value;
  return merged as unknown as GpuSample;
}
