import {
  type AgentInfo,
  type Batch,
  type EfaWindow,
  type GpuEvent,
  type GpuIdentity,
  type GpuWindow,
  type Host,
  MAX_FLUSH_WINDOW_S,
} from '../lambdas/contract';
import type { Clock } from './clock';
import type { ProcessOwner } from './sources/process-owner';
import type { SourceRegistry } from './sources/source-registry';
import { GpuRow, rowFromSample } from './window/gpu-row';
import type { GpuSample } from './window/gpu-sample';
import { MigSliceTracker } from './window/mig-slices';
import { ColumnScratch, SampleRing } from './window/sample-ring';
import { WindowEdges } from './window/window-edges';
import { windowFromColumns } from './window/window-from-columns';

/** Builds contract batches (seq, batch_id, sent_at, limits). */
export interface BatchBuilderLike {
  build(input: {
    host: Host;
    agent: AgentInfo;
    windows: readonly GpuWindow[];
    efa?: readonly EfaWindow[];
    events?: readonly GpuEvent[];
  }): Batch[];
}

/** The trailing-horizon store (agent/window/horizon.ts). */
export interface HorizonLike {
  add(sample: GpuSample): void;
  /** {@link add} for a row (copied; the caller may reuse it). */
  addRow(row: GpuRow): void;
  window(gpu: GpuIdentity, end: Date): GpuWindow | undefined;
}

/** Deduplicates XIDs seen by both NVML and the kernel log, and keeps one `gpu_lost` per GPU (agent/sources/xid-merge.ts). */
export interface XidMergerLike {
  /** True: emit the event; false: a duplicate of one already emitted. */
  add(event: GpuEvent): boolean;
}

/**
 * Where closed windows go (agent/spool's {@link SpoolingSender} on a host; a tiny in-memory sink for
 * `--once` and tests): `submit` keeps a batch (an fdatasync'd spool append), `drain` delivers what is
 * kept, oldest first, merged into as few requests as the contract allows.
 */
export interface DeliveryLike {
  submit(batch: Batch): Promise<unknown>;
  drain(): Promise<unknown>;
  /** A `data_dropped` event for batches lost since the last call, if any. */
  takeDroppedEvent(now: Date): GpuEvent | undefined;
  /** Batches kept, not delivered yet. */
  pending(): number;
}

/** Options of {@link AgentLoop}. */
export interface AgentLoopOptions {
  /**
   * The agent's sources, open: polled every `pollIntervalMs` (GPU readings, events, errors), their
   * windows closed at each flush (EFA deltas), asked for the GPU inventory and the pods holding the
   * GPUs. Every source, on a host or in a playback, is an {@link AgentSource} in this registry.
   */
  readonly sources: SourceRegistry;
  readonly host: Host;
  /** Agent description without `stats` (the loop fills them). */
  readonly agent: Omit<AgentInfo, 'stats'>;
  readonly builder: BatchBuilderLike;
  /** Keeps every closed window's batch and delivers them (see {@link DeliveryLike}). */
  readonly delivery: DeliveryLike;
  /** Trailing-horizon summaries: one `horizon` window per GPU in each batch that goes out at once (send interval or critical event) when given. */
  readonly horizon?: HorizonLike;
  /** XID deduplication across NVML and the kernel log. */
  readonly xidMerger?: XidMergerLike;
  /** Poll interval, ms. @default 1000 */
  readonly pollIntervalMs?: number;
  /** Flush window, s. @default 10 */
  readonly flushIntervalS?: number;
  /**
   * Kept windows are delivered this often, s, ≥ 0 (0: after every flush); a flush that carries a
   * critical event ({@link CRITICAL_EVENT_KINDS}) delivers at once. @default {@link DEFAULT_SEND_INTERVAL_S}
   */
  readonly sendIntervalS?: number;
  /**
   * A full garbage collection, run when a drain has finished (the send's garbage is dead, the
   * agent idle until its next poll) at most every {@link collectGarbageEveryS}. On a host it is
   * V8's `gc()` (`node --expose-gc`, in the systemd unit); absent, nothing is collected by hand.
   *
   * Why, by measurement (BENCHMARKS.md, `--trace-gc`): objects that outlive two scavenges (the
   * young generation is 1 MB, scavenged every ~35 s at 8 GPUs) are promoted, about 1.5 KB/s, and
   * V8 only collects the old generation when it reaches about twice its live size: at 8 GPUs the
   * heap grew from 7 to 13 MB of mostly garbage over the first hour, and RSS with it. Node never
   * wakes V8's own memory reducer after start-up; this is what it would do in idle time. A full
   * collection of the agent's ~8 MB heap takes a few ms.
   */
  readonly collectGarbage?: () => void;
  /** Least time between two {@link collectGarbage} calls, s, ≥ 1. @default {@link DEFAULT_COLLECT_GARBAGE_EVERY_S} */
  readonly collectGarbageEveryS?: number;
  /**
   * The clock: poll and window times, send and collection intervals. Required: the loop's time is
   * its composer's (a host's wall clock, a playback's virtual one), never a fallback of its own.
   */
  readonly clock: Clock;
  /** Called once per condition worth an operator's attention (send failure, drops). */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
  /**
   * Finds the owner (pod, Slurm job, systemd unit) of the processes of each closing window, from
   * their cgroups (`ProcessOwnerReader`, `agent/sources/process-owner.ts`); must not throw.
   * @default none: processes carry no owner
   */
  readonly processOwners?: ProcessOwnersLike;
}

/** Finds the owners of GPU processes (`ProcessOwnerReader`). */
export interface ProcessOwnersLike {
  /** The owner of each pid given (`{}` when unknown); never rejects. */
  owners(pids: Iterable<number>): Promise<ReadonlyMap<number, ProcessOwner>>;
}

/**
 * Most samples one GPU's open window keeps (its ring grows by doubling up to this): the longest
 * flush window (`MAX_FLUSH_WINDOW_S`, 1 h) at the fastest poll (100 ms), plus one, plus the opening
 * edge kept from the window before (`WindowEdges`).
 */
const MAX_SAMPLES_PER_WINDOW = 10 * MAX_FLUSH_WINDOW_S + 2;

/**
 * Default send interval, s: six 10 s windows per request. API Gateway REST bills per request
 * ($3.50 per million), so one request a minute instead of six costs a sixth; detection does not wait
 * for it (critical events go out at once).
 */
export const DEFAULT_SEND_INTERVAL_S = 60;

/** Default least time between two full garbage collections by hand, s (see {@link AgentLoopOptions.collectGarbage}). */
export const DEFAULT_COLLECT_GARBAGE_EVERY_S = 300;

/** Event kinds that skip the flush timer and go out at once (docs/design.md §1): hardware faults and loss of data. */
export const CRITICAL_EVENT_KINDS: ReadonlySet<GpuEvent['kind']> = new Set([
  'gpu_lost',
  'ecc_dbe',
  'remap_failure',
  'xid',
  'spot_interruption',
]);

/**
 * The agent's run loop: poll the source registry every `pollIntervalMs` (on a host NVML, with DCGM
 * profiling merged where GPM is absent; in a playback a simulation or a replay), feed the horizon,
 * and every `flushIntervalS` close a window: one flush window and one horizon window per GPU, the
 * window sources' EFA deltas, and every event since the last flush (XIDs deduplicated across NVML
 * and the kernel log), built into contract batches and handed to durable delivery as the window
 * closes; every `sendIntervalS` delivery sends what it keeps. Events pushed from other sources
 * (NVML event watcher, kernel log, IMDS) go through {@link pushEvent}; a critical one flushes at once.
 * `composeAgent` builds it, with its parts, for a host and a playback alike.
 *
 * Expected failures (a GPU fault, a send failure) are values: the loop never dies of them.
 */
export class AgentLoop {
  /**
   * The open window's samples per GPU, written into typed-array columns as they arrive (the sample
   * objects die young instead of living 10 s into the old generation); cleared, not reallocated,
   * at each flush.
   */
  private readonly samples = new Map<number, SampleRing>();
  /** The keys of {@link samples}, in insertion order (a ring is never removed): iterated by index. */
  private readonly gpuIndexes: number[] = [];
  /** The MIG slices read this window, per GPU (`SourceRegistry.migSlices`). */
  private readonly migSlices = new MigSliceTracker();
  private readonly scratch = new ColumnScratch();
  /** The row a sample object is encoded into on its way to the rings. */
  private readonly scratchRow = new GpuRow(0);
  private events: GpuEvent[] = [];
  private windowStart: Date;
  private urgent = false;
  private readonly stats = { samples: 0, spooled: 0, dropped: 0, nvml_errors: 0 };
  private wake: (() => void) | undefined;
  /** Ends the current sleep at once (the abort listener `run` registers once, not per sleep). */
  private stopSleep: (() => void) | undefined;
  /** Flush window, ms (`flushIntervalS`, default 10 s). */
  private readonly flushMs: number;
  /** Polls taken in the open window. */
  private pollsInWindow = 0;
  /** Whether the last poll was the open window's last (its time reached the flush interval). */
  private lastPollClosesWindow = false;
  /**
   * The closing edge of the window before, per GPU: the open window's opening edge, put at the head
   * of each GPU's ring when its first reading of the window arrives.
   */
  private openingEdges = new WindowEdges();
  /** The edges read at the open window's closing poll (when it has come and every call answered). */
  private closingEdges = new WindowEdges();
  /**
   * Whether the open window's first poll must read the edges: no closing edge of the window before
   * is kept for a GPU that answered in it (the agent just started, or a gap: a failed or early
   * close, a GPU silent at the close). A GPU silent for the whole window does not count: a lost GPU
   * would otherwise make every other GPU read its edges twice a window for as long as it is lost.
   */
  private needsOpeningEdge = true;
  private draining: Promise<void> | undefined;
  /** When delivery was last started, ms since the epoch. */
  private lastSendMs: number;
  /** When `collectGarbage` last ran (or the loop was made), ms since the epoch. */
  private lastCollectMs: number;
  /** Least time between two `collectGarbage` calls, ms (`collectGarbageEveryS`). */
  private readonly collectEveryMs: number;

  /** @param options - see {@link AgentLoopOptions} */
  constructor(private readonly options: AgentLoopOptions) {
    const sendIntervalS = options.sendIntervalS ?? DEFAULT_SEND_INTERVAL_S;
    if (!Number.isFinite(sendIntervalS) || sendIntervalS < 0)
      throw new RangeError(`Expected \`sendIntervalS\` to be a number >= 0, got \`${sendIntervalS}\``);
    const collectEveryS = options.collectGarbageEveryS ?? DEFAULT_COLLECT_GARBAGE_EVERY_S;
    if (!Number.isFinite(collectEveryS) || collectEveryS < 1)
      throw new RangeError(`Expected \`collectGarbageEveryS\` to be a number >= 1, got \`${collectEveryS}\``);
    this.collectEveryMs = collectEveryS * 1000;
    this.flushMs = (options.flushIntervalS ?? 10) * 1000;
    this.windowStart = this.now();
    this.lastSendMs = this.windowStart.getTime();
    this.lastCollectMs = this.windowStart.getTime();
  }

  /** Batches built but not delivered yet (on disk with a spool). */
  get pendingCount(): number {
    return this.options.delivery.pending();
  }

  /** Counters reported in `agent.stats`. */
  get counters(): Readonly<typeof this.stats> {
    return this.stats;
  }

  /**
   * Adds an event from another source (NVML event watcher, kernel log follower, IMDS poller).
   * XIDs and `gpu_lost` events go through the merger (a duplicate of the other source, a GPU already reported lost, is dropped); a critical event
   * makes the running loop flush at once.
   */
  pushEvent(event: GpuEvent): void {
    if (
      (event.kind === 'xid' || event.kind === 'gpu_lost') &&
      this.options.xidMerger &&
      !this.options.xidMerger.add(event)
    )
      return;
    this.events.push(event);
    if (CRITICAL_EVENT_KINDS.has(event.kind)) {
      this.urgent = true;
      this.wake?.();
    }
  }

  /**
   * Takes one reading of every GPU. Returns true when a critical event waits for an immediate flush
   * (the running loop flushes it; a caller driving `poll`/`flush` by hand decides itself).
   */
  poll(): boolean {
    const now = this.now();
    // The poll that closes a window reads everything: its closing edge, which is also the next
    // window's opening edge (windows are contiguous). The polls inside a window skip the edge-only
    // columns (cumulative counters and slow state: `EDGE_FIELDS`); a window's first poll reads them
    // only when the window before left no closing edge to open this one with.
    const closes = now.getTime() - this.windowStart.getTime() >= this.flushMs;
    this.lastPollClosesWindow = closes;
    const reading = this.options.sources.sample(
      now,
      closes || (this.pollsInWindow === 0 && this.needsOpeningEdge),
    );
    this.pollsInWindow += 1;
    this.stats.samples += 1;
    this.stats.nvml_errors += reading.errors.length;
    // Indexed loops on the per-poll path: `for…of` over an array or a Map allocates an iterator
    // result per element under Maglev (the agent runs without TurboFan), ≈ 45 bytes each
    // (BENCHMARKS.md, 2026-11-28 "the agent's CPU per poll and window").
    const { gpus, rows, events } = reading;
    for (let i = 0; i < gpus.length; i++)
      this.addRow(rowFromSample(gpus[i] as GpuSample, this.scratchRow), closes);
    if (rows !== undefined) for (let i = 0; i < rows.length; i++) this.addRow(rows[i] as GpuRow, closes);
    // A closing poll with a failed call keeps no edge: the next window reads its own opening edge.
    if (closes && reading.errors.length > 0) this.closingEdges.clear();
    // A MIG GPU's slices, for one window per slice at the flush (none on a host without MIG).
    const indexes = this.gpuIndexes;
    for (let i = 0; i < indexes.length; i++) {
      const index = indexes[i] as number;
      const slices = this.options.sources.migSlices({ index });
      if (slices !== undefined) this.migSlices.add(index, slices);
      else if (this.options.sources.readsWhole({ index })) this.migSlices.whole(index);
    }
    for (let i = 0; i < events.length; i++) this.pushEvent(events[i] as GpuEvent);
    return this.urgent;
  }

  /**
   * Copies one reading into its GPU's open-window ring (after the window's opening edge, when one
   * is kept and this is the GPU's first reading of the window) and the horizon; a closing reading's
   * edge columns are kept for the next window.
   */
  private addRow(row: GpuRow, closing: boolean): void {
    let ring = this.samples.get(row.gpuIndex);
    if (!ring) {
      ring = new SampleRing(MAX_SAMPLES_PER_WINDOW);
      this.samples.set(row.gpuIndex, ring);
      this.gpuIndexes.push(row.gpuIndex);
    }
    if (ring.length === 0) {
      const opening = this.openingEdges.opening(row.gpuIndex);
      if (opening !== undefined) ring.pushRow(opening);
    }
    ring.pushRow(row);
    this.options.horizon?.addRow(row);
    if (closing) this.closingEdges.keep(row);
  }

  /**
   * At a flush: the closing edges become the next window's opening edges when the poll that closed
   * the window read them; otherwise (an early close, a flush by hand) none is kept. The next
   * window's first poll reads the edges when one of `gpus` (those that answered in the window just
   * closed) lacks one. A GPU that comes back after a window without an answer opens its first
   * window back without an edge: that window's deltas are absent for it, never taken across the gap.
   */
  private turnEdges(gpus: Iterable<number>): void {
    const opening = this.openingEdges;
    opening.clear();
    if (this.lastPollClosesWindow) {
      this.openingEdges = this.closingEdges;
      this.closingEdges = opening;
    } else {
      this.closingEdges.clear();
    }
    let missing = this.openingEdges.size === 0;
    for (const index of gpus) if (!this.openingEdges.has(index)) missing = true;
    this.needsOpeningEdge = missing;
  }

  /**
   * Closes the current window: aggregates every GPU with samples (flush + horizon windows), the
   * EFA deltas and the pending events into batches and hands them to delivery, oldest first; starts
   * a background send when the send interval has passed or a critical event is among them.
   * Never throws: an undelivered batch stays spooled.
   * @returns the batches built for this window
   */
  async flush(): Promise<Batch[]> {
    // This flush takes every pending event, so no critical one waits any more.
    this.urgent = false;
    const end = this.now();
    const start = this.windowStart;
    const identities = new Map(this.options.sources.identity().map((g) => [g.index, g]));
    const dropped = this.options.delivery.takeDroppedEvent(end);
    const events = dropped ? [...this.events, dropped] : this.events;
    const sendNow =
      end.getTime() - this.lastSendMs >= (this.options.sendIntervalS ?? DEFAULT_SEND_INTERVAL_S) * 1000 ||
      events.some((e) => CRITICAL_EVENT_KINDS.has(e.kind));
    let windows: GpuWindow[] = [];
    let efa: EfaWindow[] = [];
    if (end.getTime() > start.getTime()) {
      const order = this.gpuIndexes.slice().sort((a, b) => a - b);
      for (let i = 0; i < order.length; i++) {
        const index = order[i] as number;
        const ring = this.samples.get(index) as SampleRing;
        if (ring.length === 0) continue;
        const gpu = identities.get(index) ?? { index };
        const window = windowFromColumns(
          'flush',
          ring.columns(0, ring.length, this.scratch),
          start,
          end,
          gpu,
        );
        const k8s = this.options.sources.workload(gpu);
        windows.push(k8s === undefined ? window : { ...window, k8s });
        // Only the batch that goes out now carries horizons: the rules judge the newest of a request
        // (mergeBatches keeps no other), so computing one per kept window would be thrown away.
        const horizon = sendNow ? this.options.horizon?.window(gpu, end) : undefined;
        if (horizon) windows.push(horizon);
      }
      // A MIG GPU's windows become its slices' (one window per GPU instance).
      windows = this.migSlices.split(windows, start, end);
      efa = this.options.sources.window(start, end);
    }
    const answered: number[] = [];
    for (let i = 0; i < this.gpuIndexes.length; i++) {
      const index = this.gpuIndexes[i] as number;
      const ring = this.samples.get(index) as SampleRing;
      if (ring.length > 0) answered.push(index);
      ring.clear();
    }
    this.turnEdges(answered);
    this.pollsInWindow = 0;
    this.lastPollClosesWindow = false;
    this.events = [];
    this.windowStart = end;
    if (windows.length === 0 && events.length === 0 && efa.length === 0) {
      if (sendNow) this.kickDrain(end);
      return [];
    }
    // After the reset: an event a source reports while the cgroups are read goes to the next window.
    const owned = await this.withOwners(windows);
    const batches = this.options.builder.build({
      host: this.options.host,
      agent: { ...this.options.agent, stats: { ...this.stats } },
      windows: owned,
      efa,
      events,
    });
    await this.deliver(batches);
    if (sendNow) this.kickDrain(end);
    return batches;
  }

  /** The windows with each process's owner added (flush windows only carry processes). */
  private async withOwners(windows: GpuWindow[]): Promise<GpuWindow[]> {
    const reader = this.options.processOwners;
    const pids = windows.flatMap((w) => w.processes?.map((p) => p.pid) ?? []);
    if (reader === undefined || pids.length === 0) return windows;
    const owners = await reader.owners(pids);
    return windows.map((w) =>
      w.processes === undefined
        ? w
        : { ...w, processes: w.processes.map((p) => ({ ...p, ...owners.get(p.pid) })) },
    );
  }

  /**
   * Runs until `signal` aborts: poll, flush on the interval (or at once on a critical event), then
   * a final flush whose batches are spooled, and a bounded wait for the drain (graceful shutdown:
   * flush, then spool).
   */
  async run(signal: AbortSignal): Promise<void> {
    const pollMs = this.options.pollIntervalMs ?? 1000;
    // One abort listener for the whole run (not one added and removed per poll).
    const onAbort = (): void => this.stopSleep?.();
    signal.addEventListener('abort', onAbort, { once: true });
    // Sleep first: the source's own baseline (GPM needs two samples ≥ 100 ms apart) is taken at open.
    // A critical event wakes the loop to flush at once, without an off-cadence sample.
    while (!signal.aborted) {
      const woken = await this.sleep(pollMs, signal);
      if (signal.aborted) break;
      if (!woken) this.poll();
      // The poll that reached the flush interval closes the window (it read the window's closing
      // edge), as does a critical event.
      if (this.urgent || this.lastPollClosesWindow) {
        this.urgent = false;
        await this.flush();
      }
    }
    signal.removeEventListener('abort', onAbort);
    await this.flush();
    this.kickDrain(this.now());
    await this.settle();
  }

  private async deliver(batches: Batch[]): Promise<void> {
    const delivery = this.options.delivery;
    // Kept first (an fdatasync'd append, milliseconds): a kill -9 loses at most the open window, and
    // a slow or absent API never stalls sampling (the drain runs in the background).
    for (const b of batches) {
      try {
        await delivery.submit(b);
      } catch (err) {
        this.stats.dropped += 1;
        this.options.onWarning?.('spool append failed; batch lost', {
          seq: b.seq,
          error: (err as Error).message,
        });
      }
    }
    this.stats.spooled = delivery.pending();
  }

  /** Starts a background drain of delivery unless one runs; `at` starts the next send interval. */
  private kickDrain(at: Date): void {
    const delivery = this.options.delivery;
    this.lastSendMs = at.getTime();
    if (this.draining) return;
    this.draining = delivery
      .drain()
      .then(() => undefined)
      .catch((err: unknown) => {
        this.options.onWarning?.('delivery failed; batches stay spooled', { error: (err as Error).message });
      })
      .finally(() => {
        this.draining = undefined;
        this.stats.spooled = delivery.pending();
        this.collectIfDue();
      });
  }

  /** Runs `collectGarbage` when one is given and {@link AgentLoopOptions.collectGarbageEveryS} has passed. */
  private collectIfDue(): void {
    const collect = this.options.collectGarbage;
    if (collect === undefined) return;
    const now = this.now().getTime();
    if (now - this.lastCollectMs < this.collectEveryMs) return;
    this.lastCollectMs = now;
    collect();
  }

  /**
   * Waits for the background drain, at most `timeoutMs` (graceful shutdown: what is not sent by
   * then stays in the spool for the next start).
   */
  async settle(timeoutMs = 5000): Promise<void> {
    const draining = this.draining;
    if (!draining) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([draining, new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
    clearTimeout(timer);
  }

  /** Sleeps `ms`; resolves true when woken early by a critical event, false on time-out or abort. */
  private sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(false);
      if (this.urgent) return resolve(true);
      const timer = setTimeout(() => {
        this.wake = undefined;
        this.stopSleep = undefined;
        resolve(false);
      }, ms);
      // Woken early by a critical event (true) or by the abort listener `run` holds (false).
      const finish = (woken: boolean): void => {
        clearTimeout(timer);
        this.wake = undefined;
        this.stopSleep = undefined;
        resolve(woken);
      };
      this.wake = () => finish(true);
      this.stopSleep = () => finish(false);
    });
  }

  private now(): Date {
    return this.options.clock();
  }
}
