import type { AgentInfo, Batch, GpuEvent, GpuIdentity, GpuWindow, Host } from '../lambdas/contract';
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
}

/** Builds contract batches (seq, batch_id, sent_at, limits). */
export interface BatchBuilderLike {
  build(input: { host: Host; agent: AgentInfo; windows: GpuWindow[]; events?: GpuEvent[] }): Batch[];
}

/** Options of {@link AgentLoop}. */
export interface AgentLoopOptions {
  readonly source: SampleSource;
  readonly host: Host;
  /** Agent description without `stats` (the loop fills them). */
  readonly agent: Omit<AgentInfo, 'stats'>;
  readonly builder: BatchBuilderLike;
  /** Sends one batch; throws when it could not be delivered after its own retries. */
  readonly send: (batch: Batch) => Promise<unknown>;
  /** Poll interval, ms. @default 1000 */
  readonly pollIntervalMs?: number;
  /** Flush window, s. @default 10 */
  readonly flushIntervalS?: number;
  /** Most undelivered batches kept in memory; past it the oldest are dropped and counted. @default 360 (1 h of 10 s windows) */
  readonly maxPendingBatches?: number;
  /** The clock. @default () => new Date() */
  readonly clock?: () => Date;
  /** Called once per condition worth an operator's attention (send failure, drops). */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/** Event kinds that skip the flush timer and go out at once (DESIGN §1). */
export const CRITICAL_EVENT_KINDS: ReadonlySet<GpuEvent['kind']> = new Set([
  'gpu_lost',
  'ecc_dbe',
  'remap_failure',
  'xid',
]);

/**
 * The agent's run loop: poll the source every `pollIntervalMs`, aggregate each GPU's samples into
 * a flush window every `flushIntervalS`, build batches and send them. A batch that cannot be sent
 * stays queued in memory (bounded; the durable on-disk spool is a later step) and is retried at
 * the next flush, in order. Critical events flush at once.
 */
export class AgentLoop {
  private samples = new Map<number, GpuSample[]>();
  private events: GpuEvent[] = [];
  private pending: Batch[] = [];
  private windowStart: Date;
  private readonly stats = { samples: 0, spooled: 0, dropped: 0, nvml_errors: 0 };

  /** @param options - see {@link AgentLoopOptions} */
  constructor(private readonly options: AgentLoopOptions) {
    this.windowStart = this.now();
  }

  /** Batches built but not delivered yet. */
  get pendingCount(): number {
    return this.pending.length;
  }

  /** Counters reported in `agent.stats`. */
  get counters(): Readonly<typeof this.stats> {
    return this.stats;
  }

  /**
   * Takes one reading. Returns true when a critical event asks for an immediate flush.
   */
  poll(): boolean {
    const reading = this.options.source.sample(this.now());
    this.stats.samples += 1;
    this.stats.nvml_errors += reading.errors.length;
    for (const s of reading.gpus) {
      const list = this.samples.get(s.gpu_index);
      if (list) list.push(s);
      else this.samples.set(s.gpu_index, [s]);
    }
    this.events.push(...reading.events);
    return reading.events.some((e) => CRITICAL_EVENT_KINDS.has(e.kind));
  }

  /**
   * Closes the current window: aggregates every GPU with samples, builds batches, and tries to send
   * everything pending in order. Never throws: an undelivered batch stays queued.
   * @returns the batches built for this window
   */
  async flush(): Promise<Batch[]> {
    const end = this.now();
    const start = this.windowStart;
    const identities = new Map(this.options.source.identity().map((g) => [g.index, g]));
    const windows: GpuWindow[] = [];
    if (end.getTime() > start.getTime()) {
      for (const [index, list] of [...this.samples.entries()].sort((a, b) => a[0] - b[0])) {
        if (list.length === 0) continue;
        windows.push(aggregateWindow(list, start, end, identities.get(index) ?? { index }));
      }
    }
    const events = this.events;
    this.samples = new Map();
    this.events = [];
    this.windowStart = end;
    if (windows.length === 0 && events.length === 0) return [];
    const batches = this.options.builder.build({
      host: this.options.host,
      agent: { ...this.options.agent, stats: { ...this.stats } },
      windows,
      events,
    });
    this.enqueue(batches);
    await this.drain();
    return batches;
  }

  /**
   * Runs until `signal` aborts: poll, flush on the interval (or at once on a critical event), then
   * a final flush.
   */
  async run(signal: AbortSignal): Promise<void> {
    const pollMs = this.options.pollIntervalMs ?? 1000;
    const flushMs = (this.options.flushIntervalS ?? 10) * 1000;
    while (!signal.aborted) {
      const urgent = this.poll();
      if (urgent || this.now().getTime() - this.windowStart.getTime() >= flushMs) await this.flush();
      await sleep(pollMs, signal);
    }
    await this.flush();
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

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const next = this.pending[0]!;
      try {
        await this.options.send(next);
      } catch (err) {
        if ((err as Error).name === 'SendRejectedError') {
          // The API refused the batch as invalid: retrying cannot help. Keep it out of the queue, say so.
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

  private now(): Date {
    return this.options.clock ? this.options.clock() : new Date();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
