import type { EfaWindow, GpuEvent, GpuIdentity, K8sWorkload } from '../../lambdas/contract';
import type { GpuRow } from '../window/gpu-row';
import type { GpuSample } from '../window/gpu-sample';
import type { MigSliceReading } from '../window/mig-slices';

/**
 * Whether a source can run on this host, answered by {@link AgentSource.open}. An unsupported
 * source is a value with its reason (no GPM, no dcgm-exporter configured, no kernel log), never
 * an exception: the runtime logs the reason once and runs without it.
 */
export type SourceSupport =
  | {
      readonly supported: true;
      /** What the source found, for the start-up log line (e.g. `8 GPUs`). */
      readonly detail?: string;
    }
  | {
      readonly supported: false;
      /** Why not, in words an operator can act on. */
      readonly reason: string;
      /**
       * How loud the start-up line is: `warn` where the host should have it (NVML events, the
       * kernel log), `info` where absence is normal (no EFA on this instance type). @default 'info'
       */
      readonly level?: 'info' | 'warn';
    };

/** Where one poll's readings go: every poll source writes into the same sink. */
export interface SampleSink {
  /** A full instant reading of one GPU, from the GPU inventory source (a simulation, a replay). */
  gpu(sample: GpuSample): void;
  /**
   * {@link gpu} as a row (NVML: no object per reading). The row belongs to the source and is
   * overwritten at its next poll: the sink copies what it keeps before then.
   */
  row(row: GpuRow): void;
  /**
   * Fields another source adds to a GPU's reading of this poll (DCGM profiling ratios on a GPU
   * without GPM). They fill only a reading that has no profiling counters of its own; a GPU with
   * no reading this poll gets nothing.
   */
  overlay(gpuIndex: number, fields: Partial<GpuSample>): void;
  /** An event found while sampling (a GPU lost at this poll). */
  event(event: GpuEvent): void;
  /** A failed call, as a value (counted in `agent.stats.nvml_errors`). */
  error(error: unknown): void;
}

/** Where a window source writes at the close of each flush window. */
export interface WindowSink {
  /** One EFA device/port's counter deltas over the window. */
  efa(window: EfaWindow): void;
}

/** Timers a source may use, injected so tests drive them. */
export interface SourceTimers {
  /** As `setInterval`; the handle is unref'd by the default so a timer never holds the process. */
  setInterval(fn: () => void, ms: number): unknown;
  /** As `clearInterval`, for a handle `setInterval` gave. */
  clearInterval(handle: unknown): void;
}

/** What the runtime gives every source at {@link AgentSource.open}. */
export interface SourceContext {
  /** The clock (the agent's injected one). */
  readonly clock: () => Date;
  /**
   * Reports an event as it happens, from any thread callback or timer (NVML XID waits, the kernel
   * log, IMDS notices, a change of profiling source). A critical one makes the agent flush at once.
   */
  readonly emit: (event: GpuEvent) => void;
  /** Once-per-condition warnings an operator can act on. */
  readonly warn: (message: string, data?: Record<string, unknown>) => void;
  /** Interval timers. @default the global ones, unref'd */
  readonly timers: SourceTimers;
}

/**
 * One source of the agent, as gpud has one component interface: every source has this shape,
 * those a host runs (NVML, DCGM profiling, NVML XID events, the kernel log, IMDS notices, EFA
 * counters) and those a playback runs (a simulated host's GPUs and EFA ports, a replayed capture),
 * and {@link SourceRegistry} iterates them instead of a runtime wiring each by hand.
 *
 * A source does one or more of:
 * - **poll** (`sample`): called every poll interval (1 s) with the poll's sink and time;
 *   synchronous and cheap, never throws for a hardware fault (faults are values or events);
 * - **window** (`window`): called once at each flush-window close (counters too costly per second);
 * - **events**: pushed through `context.emit` as they happen, from `open()` until `close()`.
 *
 * `open()` decides support once; a source that can come and go (a dcgm-exporter that starts late)
 * says so with events, not by a later `open()`.
 */
export interface AgentSource {
  /** Short stable name for logs (`nvml`, `dcgm-profiling`, `kmsg`…). */
  readonly name: string;
  /**
   * Starts the source. Resolves unsupported (with the reason) when the host lacks what it reads.
   * @throws only when the agent cannot run at all without it (NVML unavailable)
   */
  open(context: SourceContext): Promise<SourceSupport> | SourceSupport;
  /**
   * One poll: write readings, events and errors into `into`. `now` is the poll time from the clock.
   * `full` is true at a flush window's edges and false on the polls between: a source may skip
   * there the columns only a window's edges need (`EDGE_FIELDS`, agent/window/window-edges.ts:
   * cumulative counters, slow-changing state). The edge is the poll that closes a window, whose
   * reading the loop also keeps as the next window's opening edge; a window's first poll is full
   * only when no such reading is kept (the agent's first window, or after a gap). Absent means true.
   */
  sample?(into: SampleSink, now: Date, full?: boolean): void;
  /** Window close: write this window's values into `into`; `end` is after `start`. */
  window?(into: WindowSink, start: Date, end: Date): void;
  /** The GPUs this source inventories, by index (the GPU inventory source only: NVML, a simulation, a replay). */
  identity?(): readonly GpuIdentity[];
  /**
   * The Kubernetes pod holding a GPU now (dcgm-exporter's pod labels), for the window's `k8s`;
   * `undefined` when this source does not know or no pod holds it.
   */
  workload?(gpu: GpuIdentity): K8sWorkload | undefined;
  /**
   * The MIG slices of a GPU at the last poll (dcgm-exporter's `GPU_I_ID` series), so the agent sends
   * one window per slice; `undefined` when this source does not know or the GPU is not in MIG mode.
   */
  migSlices?(gpu: GpuIdentity): readonly MigSliceReading[] | undefined;
  /**
   * True when this source read `gpu` at the last poll and knows it is out of MIG mode (NVML:
   * `nvmlDeviceGetMigMode` current = 0 at the last look), so a flush window whose last poll read it
   * whole goes out whole even where earlier polls of it read slices (MIG mode switched off inside the
   * window). Sources that cannot tell leave it out: a missing slice reading then says nothing.
   */
  readsWhole?(gpu: GpuIdentity): boolean;
  /** Stops timers and threads and frees handles. Idempotent; never throws for an already-stopped source. */
  close(): Promise<void> | void;
}

/** The default {@link SourceTimers}: global intervals, unref'd so they never keep the process alive. */
export const NODE_TIMERS: SourceTimers = {
  setInterval(fn, ms) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return handle;
  },
  clearInterval(handle) {
    clearInterval(handle as NodeJS.Timeout);
  },
};
