import { type Batch, type GpuEvent, MAX_DETAIL_CHARS } from '../../lambdas/contract';
import { SendRejectedError } from '../errors';
import type { QuarantineReason, Spool } from './spool';
import type { DroppedReport } from './spool-cursor';

/** What became of a submitted batch: delivered now, queued on disk, refused by the API (quarantined), or lost (the spool could not take it; counted). */
export const SUBMIT_OUTCOMES = ['sent', 'spooled', 'rejected', 'dropped'] as const;
/** Union of {@link SUBMIT_OUTCOMES}. */
export type SubmitOutcome = (typeof SUBMIT_OUTCOMES)[number];

/** Options of {@link SpoolingSender}. */
export interface SpoolingSenderOptions {
  /** The open spool undelivered batches wait in. */
  readonly spool: Spool;
  /**
   * Sends one batch (`HttpSender.send`, after its own retries). Resolves on a 2xx; throws
   * `SendRejectedError` when the API refused the batch (4xx: quarantined, not retried), anything
   * else when it could not be delivered now (spooled, retried by {@link SpoolingSender.drain}).
   */
  readonly send: (batch: Batch) => Promise<unknown>;
  /** Called once per condition worth an operator's attention (API unreachable, refusals, spool errors). @default none */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/** Counters of a {@link SpoolingSender} since it was made (`dropped`: since the spool directory was created). */
export interface SpoolingSenderCounters {
  /** Batches delivered (2xx), directly or from the spool. */
  readonly sent: number;
  /** Batches written to the spool. */
  readonly spooled: number;
  /** Batches the API refused (4xx), saved to `rejected/`. */
  readonly rejected: number;
  /** Batches lost: dropped by the spool's bounds (`dropped_total`) plus those the spool could not write. */
  readonly dropped: number;
}

/** What one {@link SpoolingSender.drain} did. */
export interface DrainResult {
  /** Spooled batches delivered and removed, ≥ 0. */
  readonly sent: number;
  /** Spooled batches refused by the API and quarantined, ≥ 0. */
  readonly rejected: number;
  /** Batches still spooled when the drain stopped, ≥ 0. */
  readonly remaining: number;
  /** Why it stopped early (the send or spool error); absent when the spool was emptied. */
  readonly error?: unknown;
}

/**
 * Delivers batches in order without losing any silently: a batch that cannot be sent now goes to the
 * on-disk {@link Spool} and is replayed, oldest first, by {@link drain}. Nothing overtakes a spooled
 * batch: while the spool holds anything (or a drain runs), {@link submit} appends instead of sending.
 * A batch the API refuses (4xx, or a 401/403 that outlived the sender's credential refreshes) is
 * quarantined, never retried. Every loss (spool bounds, damaged records, write errors, refusals)
 * becomes one `data_dropped` event through {@link takeDroppedEvent}.
 *
 * Neither method throws: failures are outcomes, counters and warnings.
 *
 * @example
 * const sender = new SpoolingSender({ spool, send: (b) => http.send(b) });
 * for (const batch of batches) await sender.submit(batch);
 * await sender.drain(); // after every flush: replays the spool once the API is back
 */
export class SpoolingSender {
  private readonly spool: Spool;
  private readonly send: (batch: Batch) => Promise<unknown>;
  private readonly warn: (message: string, data?: Record<string, unknown>) => void;
  private directChain: Promise<unknown> = Promise.resolve();
  private draining: Promise<DrainResult> | undefined;
  private failing = false;
  private sent = 0;
  private spooled = 0;
  private rejected = 0;
  /** Batches the spool could not take (write errors), lifetime / not yet reported in an event. */
  private lost = 0;
  private lostUnreported: DroppedReport | undefined;
  /** Batches the API refused (set aside in `rejected/`), not yet reported in an event. */
  private refusedUnreported: DroppedReport | undefined;

  /** @param opts - see {@link SpoolingSenderOptions} */
  constructor(opts: SpoolingSenderOptions) {
    this.spool = opts.spool;
    this.send = opts.send;
    this.warn = opts.onWarning ?? (() => undefined);
  }

  /** Counters since this sender was made; `dropped` includes the spool's lifetime `dropped_total`. */
  get counters(): SpoolingSenderCounters {
    return {
      sent: this.sent,
      spooled: this.spooled,
      rejected: this.rejected,
      dropped: this.spool.stats().dropped_total + this.lost,
    };
  }

  /**
   * Sends a batch now when the spool is empty and no drain runs; otherwise, or when the send fails
   * with anything but a refusal, appends it to the spool. Submits run one after another in call order.
   *
   * @param batch - a contract batch, `seq` higher than every batch submitted before
   * @returns what became of it (see {@link SUBMIT_OUTCOMES})
   */
  submit(batch: Batch): Promise<SubmitOutcome> {
    const run = this.directChain.then(() => this.submitNow(batch));
    this.directChain = run.catch(() => undefined);
    return run;
  }

  /**
   * Replays the spool oldest first: sends each batch, acks it after the 2xx, quarantines a refused
   * one, and stops at the first other failure (the batch stays; call again later). A call while a
   * drain runs returns that drain's result.
   *
   * @returns what this drain did
   */
  drain(): Promise<DrainResult> {
    if (this.draining) return this.draining;
    const run = this.runDrain().finally(() => {
      this.draining = undefined;
    });
    this.draining = run;
    return run;
  }

  /**
   * The `data_dropped` event for losses not reported yet (spool bounds, damaged records, write
   * errors, batches the API refused and that were set aside), then resets them; undefined when nothing was dropped since the last call. Put it in the
   * next batch's `events`.
   *
   * @param now - the event's time
   * @returns `{ at, kind: 'data_dropped', source: 'agent', count, detail }`; `count` = flush windows lost
   */
  takeDroppedEvent(now: Date): GpuEvent | undefined {
    const fromSpool = this.spool.takeDroppedReport();
    const fromWrites = this.lostUnreported;
    const refused = this.refusedUnreported;
    this.lostUnreported = undefined;
    this.refusedUnreported = undefined;
    if (!fromSpool && !fromWrites && !refused) return undefined;
    const parts: string[] = [];
    if (fromSpool)
      parts.push(`${describe(fromSpool)} dropped by the on-disk spool (bound reached or records damaged)`);
    if (fromWrites) parts.push(`${describe(fromWrites)} lost: the spool could not write them`);
    if (refused) parts.push(`${describe(refused)} refused by the API and set aside in rejected/`);
    const windows = (fromSpool?.windows ?? 0) + (fromWrites?.windows ?? 0) + (refused?.windows ?? 0);
    return {
      at: now.toISOString(),
      kind: 'data_dropped',
      source: 'agent',
      count: windows,
      detail: parts.join('; ').slice(0, MAX_DETAIL_CHARS),
    };
  }

  private async submitNow(batch: Batch): Promise<SubmitOutcome> {
    if (this.draining || this.spool.stats().batches > 0) return this.spoolIt(batch);
    try {
      await this.send(batch);
    } catch (error) {
      if (isRejection(error)) {
        await this.reject(batch, error, undefined);
        return 'rejected';
      }
      this.noteFailure(batch, error);
      return this.spoolIt(batch);
    }
    this.sent += 1;
    this.failing = false;
    return 'sent';
  }

  private async spoolIt(batch: Batch): Promise<SubmitOutcome> {
    try {
      await this.spool.append(batch);
    } catch (error) {
      this.lost += 1;
      this.lostUnreported = addLoss(this.lostUnreported, batch);
      this.warn('spool append failed; batch lost', { seq: batch.seq, error: (error as Error).message });
      return 'dropped';
    }
    this.spooled += 1;
    return 'spooled';
  }

  private async runDrain(): Promise<DrainResult> {
    // A direct send in flight may still fail and append: let it, so the drain sees it in order.
    await this.directChain;
    let sent = 0;
    let rejected = 0;
    const stop = (error: unknown): DrainResult => ({
      sent,
      rejected,
      remaining: this.spool.stats().batches,
      error,
    });
    for (;;) {
      let batch: Batch | undefined;
      try {
        batch = await this.spool.peek();
      } catch (error) {
        this.warn('spool read failed; drain stopped', { error: (error as Error).message });
        return stop(error);
      }
      if (!batch) break;
      try {
        await this.send(batch);
      } catch (error) {
        if (isRejection(error)) {
          const ok = await this.reject(batch, error, batch.batch_id);
          if (!ok) return stop(error);
          rejected += 1;
          continue;
        }
        this.noteFailure(batch, error);
        return stop(error);
      }
      this.sent += 1;
      sent += 1;
      this.failing = false;
      try {
        await this.spool.ack(batch.batch_id);
      } catch (error) {
        // Delivered but still spooled: it is sent again later and the API stores it once.
        this.warn('spool ack failed; drain stopped', { seq: batch.seq, error: (error as Error).message });
        return stop(error);
      }
    }
    return { sent, rejected, remaining: 0 };
  }

  /** Quarantines a refused batch (from the spool's head when `spooledId` is given). False when the spool could not. */
  private async reject(
    batch: Batch,
    error: SendRejectedError,
    spooledId: string | undefined,
  ): Promise<boolean> {
    const reason = reasonOf(error);
    this.warn('batch refused by the API; quarantined, not retried', {
      seq: batch.seq,
      batch_id: batch.batch_id,
      ...(reason.status !== undefined ? { status: reason.status } : {}),
      error: reason.message,
    });
    try {
      if (spooledId === undefined) await this.spool.saveRejected(batch, reason);
      else await this.spool.quarantine(spooledId, reason);
    } catch (writeError) {
      this.warn('quarantine write failed', { seq: batch.seq, error: (writeError as Error).message });
      if (spooledId !== undefined) return false;
    }
    this.rejected += 1;
    this.refusedUnreported = addLoss(this.refusedUnreported, batch);
    return true;
  }

  private noteFailure(batch: Batch, error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.warn('API unreachable; batches are spooled on disk until it answers', {
      seq: batch.seq,
      error: (error as Error)?.message ?? String(error),
    });
  }
}

/** A loss report with one more batch: its flush windows added, its seq widening the range. */
function addLoss(prev: DroppedReport | undefined, batch: Batch): DroppedReport {
  return {
    batches: (prev?.batches ?? 0) + 1,
    windows: (prev?.windows ?? 0) + batch.windows.filter((w) => w.kind !== 'horizon').length,
    firstSeq: Math.min(prev?.firstSeq ?? batch.seq, batch.seq),
    lastSeq: Math.max(prev?.lastSeq ?? batch.seq, batch.seq),
  };
}

function isRejection(error: unknown): error is SendRejectedError {
  return error instanceof SendRejectedError || (error as Error | undefined)?.name === 'SendRejectedError';
}

function reasonOf(error: SendRejectedError): QuarantineReason {
  return {
    message: error.message,
    ...(typeof error.status === 'number' ? { status: error.status } : {}),
    ...(error.body?.error !== undefined ? { error: error.body.error } : {}),
    ...(error.body?.path !== undefined ? { path: error.body.path } : {}),
  };
}

function describe(report: DroppedReport): string {
  const range =
    report.firstSeq !== undefined && report.lastSeq !== undefined
      ? `, seq ${report.firstSeq}..${report.lastSeq}`
      : '';
  return `${report.batches} batches (${report.windows} flush windows${range})`;
}
