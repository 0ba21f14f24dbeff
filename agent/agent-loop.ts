import type {
  AgentInfo,
  Batch,
  EfaWindow,
  GpuEvent,
  GpuIdentity,
  GpuWindow,
  Host,
  K8sWorkload,
} from '../lambdas/contract';
import { aggregateWindow } from './window/aggregate';
import type { GpuSample } from './window/gpu-sample';

/** One poll of a GPU source: instant readings per GPU, events seen, and call errors (values, not throws). */
export interface SourceReading {
  readonly gpus: readonly GpuSample[];
  readonly events: readonly GpuEvent[];
  readonly errors: readonly unknown[];
}

/** What the loop needs of a GPU source (NVML in production; a fake in tests). */
export interface SampleSource {
  /** One instant reading of every GPU. Never throws for a GPU fault. */
  sample(now: Date): SourceReading;
  /** Identity of each GPU, by index. */
  identity(): readonly GpuIdentity[];
  /** The Kubernetes pod holding a GPU at the window's end, copied into its flush window's `k8s`. */
  workload?(gpu: GpuIdentity): K8sWorkload | undefined;
}

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
  window(gpu: GpuIdentity, end: Date): GpuWindow | undefined;
}

/** The EFA counters source (agent/sources/efa.ts): sampled once per flush (each sample reads ~64 sysfs dirs). */
export interface EfaLike {
  sample(now: Date): void;
  window(start: Date, end: Date): EfaWindow[];
}

/** Deduplicates XIDs seen by both NVML and the kernel log (agent/sources/xid-merge.ts). */
export interface XidMergerLike {
  /** True: emit the event; false: a duplicate of one already emitted. */
  add(event: GpuEvent): boolean;
}

/**
 * Delivery with durability (agent/spool): `submit` appends a batch to the on-disk spool (fsync),
 * `drain` replays the spool in order, acking each batch after a 2xx. Without one, the loop keeps
 * undelivered batches in memory (bounded).
 */
export interface DeliveryLike {
  submit(batch: Batch): Promise<unknown>;
  drain(): Promise<unknown>;
  /** A `data_dropped` event for batches the spool bound dropped since the last call, if any. */
  takeDroppedEvent(now: Date): GpuEvent | undefined;
  /** Batches waiting on disk. */
  pending(): number;
}

/** Options of {@link AgentLoop}. */
export interface AgentLoopOptions {
  readonly source: SampleSource;
  readonly host: Host;
  /** Agent description without `stats` (the loop fills them). */
  readonly agent: Omit<AgentInfo, 'stats'>;
  readonly builder: BatchBuilderLike;
  /**
   * Sends one batch; throws when it could not be delivered after its own retries. Used when no
   * `delivery` is given (then undelivered batches wait in a bounded in-memory queue).
   */
  readonly send?: (batch: Batch) => Promise<unknown>;
  /** Durable delivery (spool); preferred over `send`. */
  readonly delivery?: DeliveryLike;
  /** Trailing-horizon summaries: one `horizon` window per GPU in every batch when given. */
  readonly horizon?: HorizonLike;
  /** EFA counter deltas per flush window when given. */
  readonly efa?: EfaLike;
  /** XID deduplication across NVML and the kernel log. */
  readonly xidMerger?: XidMergerLike;
  /** Poll interval, ms. @default 1000 */
  readonly pollIntervalMs?: number;
  /** Flush window, s. @default 10 */
  readonly flushIntervalS?: number;
  /** Most undelivered batches kept in memory without a spool; past it the oldest are dropped and counted. @default 360 (1 h of 10 s windows) */
  readonly maxPendingBatches?: number;
  /** The clock. @default () => new Date() */
  readonly clock?: () => Date;
  /** Called once per condition worth an operator's attention (send failure, drops). */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/** Event kinds that skip the flush timer and go out at once (docs/design.md §1): hardware faults and loss of data. */
export const CRITICAL_EVENT_KINDS: ReadonlySet<GpuEvent['kind']> = new Set([
  'gpu_lost',
  'ecc_dbe',
  'remap_failure',
  'xid',
  'spot_interruption',
]);

/**
 * The agent's run loop: poll the GPU source every `pollIntervalMs` (the source registry: NVML,
 * with DCGM profiling merged where GPM is absent), feed the horizon, and every `flushIntervalS` close a window: one
 * flush window and one horizon window per GPU, the EFA deltas, and every event since the last
 * flush (XIDs deduplicated across NVML and the kernel log), built into contract batches and handed
 * to durable delivery. Events pushed from other sources (NVML event watcher, kernel log, IMDS) go
 * through {@link pushEvent}; a critical one flushes at once.
 *
 * Expected failures (a GPU fault, a send failure) are values: the loop never dies of them.
 */
export class AgentLoop {
  private samples = new Map<number, GpuSample[]>();
  private events: GpuEvent[] = [];
  private pending: Batch[] = [];
  private windowStart: Date;
  private urgent = false;
  private readonly stats = { samples: 0, spooled: 0, dropped: 0, nvml_errors: 0 };
  private wake: (() => void) | undefined;
  private draining: Promise<void> | undefined;

  /** @param options - see {@link AgentLoopOptions} */
  constructor(private readonly options: AgentLoopOptions) {
    if (!options.send && !options.delivery) throw new TypeError('Expected `send` or `delivery`, got neither');
    this.windowStart = this.now();
    options.efa?.sample(this.windowStart);
  }

  /** Batches built but not delivered yet (in memory, or on disk with a spool). */
  get pendingCount(): number {
    return this.options.delivery ? this.options.delivery.pending() : this.pending.length;
  }

  /** Counters reported in `agent.stats`. */
  get counters(): Readonly<typeof this.stats> {
    return this.stats;
  }

  /**
   * Adds an event from another source (NVML event watcher, kernel log follower, IMDS poller).
   * XIDs go through the merger (a duplicate of the other source is dropped); a critical event
   * makes the running loop flush at once.
   */
  pushEvent(event: GpuEvent): void {
    if (event.kind === 'xid' && this.options.xidMerger && !this.options.xidMerger.add(event)) return;
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
    const reading = this.options.source.sample(now);
    this.stats.samples += 1;
    this.stats.nvml_errors += reading.errors.length;
    for (const s of reading.gpus) {
      const list = this.samples.get(s.gpu_index);
      if (list) list.push(s);
      else this.samples.set(s.gpu_index, [s]);
      this.options.horizon?.add(s);
    }
    for (const e of reading.events) this.pushEvent(e);
    return this.urgent;
  }

  /**
   * Closes the current window: aggregates every GPU with samples (flush + horizon windows), the
   * EFA deltas and the pending events into batches, and hands them to delivery, oldest first.
   * Never throws: an undelivered batch stays spooled (or queued in memory).
   * @returns the batches built for this window
   */
  async flush(): Promise<Batch[]> {
    // This flush takes every pending event, so no critical one waits any more.
    this.urgent = false;
    const end = this.now();
    const start = this.windowStart;
    const identities = new Map(this.options.source.identity().map((g) => [g.index, g]));
    const windows: GpuWindow[] = [];
    let efa: EfaWindow[] = [];
    if (end.getTime() > start.getTime()) {
      for (const [index, list] of [...this.samples.entries()].sort((a, b) => a[0] - b[0])) {
        if (list.length === 0) continue;
        const gpu = identities.get(index) ?? { index };
        const window = aggregateWindow(list, start, end, gpu);
        const k8s = this.options.source.workload?.(gpu);
        windows.push(k8s === undefined ? window : { ...window, k8s });
        const horizon = this.options.horizon?.window(gpu, end);
        if (horizon) windows.push(horizon);
      }
      if (this.options.efa) {
        this.options.efa.sample(end);
        efa = this.options.efa.window(start, end);
      }
    }
    const dropped = this.options.delivery?.takeDroppedEvent(end);
    const events = dropped ? [...this.events, dropped] : this.events;
    this.samples = new Map();
    this.events = [];
    this.windowStart = end;
    if (windows.length === 0 && events.length === 0 && efa.length === 0) {
      this.kickDrain();
      return [];
    }
    const batches = this.options.builder.build({
      host: this.options.host,
      agent: { ...this.options.agent, stats: { ...this.stats } },
      windows,
      efa,
      events,
    });
    await this.deliver(batches);
    return batches;
  }

  /**
   * Runs until `signal` aborts: poll, flush on the interval (or at once on a critical event), then
   * a final flush whose batches are spooled, and a bounded wait for the drain (graceful shutdown:
   * flush, then spool).
   */
  async run(signal: AbortSignal): Promise<void> {
    const pollMs = this.options.pollIntervalMs ?? 1000;
    const flushMs = (this.options.flushIntervalS ?? 10) * 1000;
    // Sleep first: the source's own baseline (GPM needs two samples ≥ 100 ms apart) is taken at open.
    // A critical event wakes the loop to flush at once, without an off-cadence sample.
    while (!signal.aborted) {
      const woken = await this.sleep(pollMs, signal);
      if (signal.aborted) break;
      if (!woken) this.poll();
      if (this.urgent || this.now().getTime() - this.windowStart.getTime() >= flushMs) {
        this.urgent = false;
        await this.flush();
      }
    }
    await this.flush();
    await this.settle();
  }

  private async deliver(batches: Batch[]): Promise<void> {
    const delivery = this.options.delivery;
    if (delivery) {
      // Durable first (an fsync'd append, milliseconds), then replay in the background so a slow or
      // absent API never stalls sampling; the drain sends oldest first and acks after each 2xx.
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
      this.kickDrain();
      this.stats.spooled = delivery.pending();
      return;
    }
    this.enqueue(batches);
    await this.drainMemory();
  }

  /** Starts a background drain of durable delivery unless one runs. */
  private kickDrain(): void {
    const delivery = this.options.delivery;
    if (!delivery || this.draining) return;
    this.draining = delivery
      .drain()
      .then(() => undefined)
      .catch((err: unknown) => {
        this.options.onWarning?.('delivery failed; batches stay spooled', { error: (err as Error).message });
      })
      .finally(() => {
        this.draining = undefined;
        this.stats.spooled = delivery.pending();
      });
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

  private enqueue(batches: Batch[]): void {
    this.pending.push(...batches);
    const max = this.options.maxPendingBatches ?? 360;
    if (this.pending.length > max) {
      const lost = this.pending.length - max;
      this.pending.splice(0, lost);
      this.stats.dropped += lost;
      this.options.onWarning?.('in-memory send queue full: dropped oldest batches', { dropped: lost });
    }
    this.stats.spooled = this.pending.length;
  }

  private async drainMemory(): Promise<void> {
    const send = this.options.send;
    if (!send) return;
    while (this.pending.length > 0) {
      const next = this.pending[0]!;
      try {
        await send(next);
      } catch (err) {
        if ((err as Error).name === 'SendRejectedError') {
          // The API refused the batch as invalid: retrying cannot help. Say so and move on.
          this.options.onWarning?.('batch refused by the API; dropped', {
            seq: next.seq,
            error: (err as Error).message,
          });
          this.stats.dropped += 1;
          this.pending.shift();
          continue;
        }
        this.options.onWarning?.('send failed; batch kept for the next flush', {
          seq: next.seq,
          pending: this.pending.length,
          error: (err as Error).message,
        });
        break;
      }
      this.pending.shift();
    }
    this.stats.spooled = this.pending.length;
  }

  /** Sleeps `ms`; resolves true when woken early by a critical event, false on time-out or abort. */
  private sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(false);
      if (this.urgent) return resolve(true);
      const finish = (woken: boolean): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.wake = undefined;
        resolve(woken);
      };
      const onAbort = (): void => finish(false);
      const timer = setTimeout(() => finish(false), ms);
      this.wake = () => finish(true);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private now(): Date {
    return this.options.clock ? this.options.clock() : new Date();
  }
}
