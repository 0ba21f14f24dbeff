import {
  LEGACY_MAX_EFA_PORTS_PER_BATCH,
  MAX_DETAIL_CHARS,
  MAX_EFA_PORTS_PER_BATCH,
} from '../../lambdas/contract/constants';
import type { Batch, GpuEvent } from '../../lambdas/contract/schema';
import { SendRejectedError } from '../errors';
import { DEFAULT_MAX_BATCH_BYTES } from '../send/batcher';
import { MAX_MERGED_BATCHES, mergeableCount, mergeBatches } from '../send/merge-batches';
import type { QuarantineReason } from './dead-letter';
import type { Spool } from './spool';
import type { DroppedReport } from './spool-cursor';

/** What became of an appended batch: queued on disk, or lost (the spool could not take it; counted). */
export const APPEND_OUTCOMES = ['spooled', 'dropped'] as const;
/** Union of {@link APPEND_OUTCOMES}. */
export type AppendOutcome = (typeof APPEND_OUTCOMES)[number];

/** Options of {@link SpoolingSender}. */
export interface SpoolingSenderOptions {
  /** The open spool undelivered batches wait in. */
  readonly spool: Spool;
  /**
   * Sends one batch (`HttpSender.send`, after its own retries). Resolves on a 2xx; throws a
   * {@link SendRejectedError} (matched with `instanceof`: a wrapper must throw that class, not
   * one of the same name) when the API refused the batch (4xx: quarantined, not retried), anything
   * else when it could not be delivered now (it stays spooled; a later {@link SpoolingSender.drain} retries).
   */
  readonly send: (batch: Batch) => Promise<unknown>;
  /** Called once per condition worth an operator's attention (API unreachable, refusals, spool errors). @default none */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/**
 * Drains (send intervals) an agent merges within `LEGACY_MAX_EFA_PORTS_PER_BATCH` after an older API
 * refused a bigger `efa[]`, before it tries the contract's limit again: 60, ≈ 1 h at the default 60 s
 * send interval, so an agent started before its stack was updated merges fully again without a
 * restart, at the cost of one refused request an hour while the stack is old.
 */
export const LEGACY_EFA_RETRY_DRAINS = 60;

/** Counters of a {@link SpoolingSender} since it was made (`dropped`: since the spool directory was created). */
export interface SpoolingSenderCounters {
  /** Batches delivered (2xx); several spooled batches may have gone in one request. */
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
  /** HTTP requests that delivered them (merged batches), ≥ 0. */
  readonly requests: number;
  /** Spooled or held batches refused by the API and quarantined, ≥ 0. */
  readonly rejected: number;
  /** Spooled batches refused with 401/403 after every credential refresh and moved to `held/`, ≥ 0. */
  readonly held: number;
  /** Held batches resent and delivered (after a send succeeded again), ≥ 0. */
  readonly resent: number;
  /** Batches still spooled when the drain stopped, ≥ 0. */
  readonly remaining: number;
  /** Why it stopped early (the send or spool error); absent when the spool was emptied. */
  readonly error?: unknown;
}

/**
 * The agent's one delivery path, spool first (docs/design.md §10, chosen by measurement: see
 * BENCHMARKS.md): every closed flush window is appended to the on-disk {@link Spool} as it closes,
 * so a `kill -9` loses at most the window still open; {@link drain}, called every send interval (or
 * at once for a critical event), replays the spool oldest first, merging consecutive batches into one
 * request (`mergeBatches`: ≤ 64 batches, ≤ 1 MiB, the contract's counts) and acking them together
 * after the 2xx. A merged request the API refuses is retried batch by batch, so only the refused
 * batch is quarantined, never retried. A batch refused with 401/403 after every credential refresh
 * is not the batch's fault (expired or rotated credentials, clock skew): it is held in `held/`
 * (one per drain while no send succeeds; the rest waits in the queue) and resent, lowest `seq`
 * first, once the queue is empty and a send succeeds again; held batches are bounded by the
 * spool's age and bytes, and one refused again while others are accepted is quarantined. Every loss (spool bounds, damaged records, write errors,
 * refusals) becomes one `data_dropped` event through {@link takeDroppedEvent}.
 *
 * Rollout: an API deployed before `efa[]` was sized per window refuses more than 64 entries
 * (`LEGACY_MAX_EFA_PORTS_PER_BATCH`) with `400` at path `efa`. A merged request refused so is sent
 * again at once merged within 64 (every spooled batch fits it: the batcher packs ≤ 64), nothing
 * quarantined, warned once; the lower limit holds for {@link LEGACY_EFA_RETRY_DRAINS} drains, then
 * the contract's is tried again.
 *
 * Neither method throws: failures are outcomes, counters and warnings.
 *
 * @example
 * const sender = new SpoolingSender({ spool, send: (b) => http.send(b) });
 * await sender.append(batch); // every flush
 * await sender.drain(); // every send interval: replays the spool once the API answers
 */
export class SpoolingSender {
  private readonly spool: Spool;
  private readonly send: (batch: Batch) => Promise<unknown>;
  private readonly warn: (message: string, data?: Record<string, unknown>) => void;
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
  /** Most `efa[]` entries a merged request carries: the contract's, or the older API's after a refusal. */
  private maxEfaPorts = MAX_EFA_PORTS_PER_BATCH;
  /** Drains left at the older API's limit before the contract's is tried again. */
  private legacyEfaDrainsLeft = 0;
  private legacyEfaWarned = false;

  /** @param opts - see {@link SpoolingSenderOptions} */
  constructor(opts: SpoolingSenderOptions) {
    this.spool = opts.spool;
    this.send = opts.send;
    this.warn = opts.onWarning ?? (() => undefined);
  }

  /**
   * Most `efa[]` entries the next merged request may carry: the contract's `MAX_EFA_PORTS_PER_BATCH`
   * (4,096), or `LEGACY_MAX_EFA_PORTS_PER_BATCH` (64) while an older API refuses more.
   */
  get efaPortsPerRequest(): number {
    return this.maxEfaPorts;
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
   * Appends a batch to the spool (fdatasync'd); appends run one after another in call order (the
   * spool serialises them). A batch the spool cannot take is counted and reported, never thrown.
   *
   * @param batch - a contract batch, `seq` higher than every batch appended before
   * @returns what became of it (see {@link APPEND_OUTCOMES})
   */
  append(batch: Batch): Promise<AppendOutcome> {
    return this.spoolIt(batch);
  }

  /**
   * Replays the spool oldest first: sends consecutive batches merged into one request, acks them
   * after the 2xx, retries a refused merge batch by batch and quarantines the refused one, and stops
   * at the first other failure (the batches stay; call again later). A call while a drain runs
   * returns that drain's result.
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

  private async spoolIt(batch: Batch): Promise<AppendOutcome> {
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
    if (this.maxEfaPorts < MAX_EFA_PORTS_PER_BATCH && --this.legacyEfaDrainsLeft <= 0)
      this.maxEfaPorts = MAX_EFA_PORTS_PER_BATCH;
    let sent = 0;
    let requests = 0;
    let rejected = 0;
    let held = 0;
    /** Batches still to send one by one: the members of a merged request the API refused. */
    let singles = 0;
    const stop = (error: unknown): DrainResult => ({
      sent,
      requests,
      rejected,
      held,
      resent: 0,
      remaining: this.spool.stats().batches,
      error,
    });
    for (;;) {
      let batches: Batch[];
      try {
        batches = await this.spool.peekMany(singles > 0 ? 1 : MAX_MERGED_BATCHES, DEFAULT_MAX_BATCH_BYTES);
      } catch (error) {
        this.warn('spool read failed; drain stopped', { error: (error as Error).message });
        return stop(error);
      }
      const group = batches.slice(0, mergeableCount(batches, this.maxEfaPorts));
      const request = group.length > 0 ? mergeBatches(group) : undefined;
      if (!request) break;
      try {
        await this.send(request);
      } catch (error) {
        if (error instanceof SendRejectedError && this.refusedForEfaCount(request, error)) {
          this.fallBackToLegacyEfa(request, error);
          continue;
        }
        if (error instanceof SendRejectedError && group.length > 1) {
          singles = group.length;
          continue;
        }
        if (error instanceof SendRejectedError) {
          const head = group[0] as Batch;
          const auth = isAuthRefusal(error);
          const ok = auth ? await this.hold(head, error) : await this.reject(head, error, head.batch_id);
          if (!ok) return stop(error);
          if (auth) held += 1;
          else rejected += 1;
          // No send of this drain succeeded: credentials, most likely, so the rest waits in the
          // queue (one batch per drain is held, not every queued batch tried with every refresh).
          if (auth && requests === 0) return stop(error);
          singles = Math.max(0, singles - 1);
          continue;
        }
        this.noteFailure(request, error);
        return stop(error);
      }
      this.sent += group.length;
      sent += group.length;
      requests += 1;
      singles = Math.max(0, singles - group.length);
      this.failing = false;
      try {
        await this.spool.ackMany(group.map((b) => b.batch_id));
      } catch (error) {
        // Delivered but still spooled: sent again later; the store keeps one row per window (`seq` is its version).
        this.warn('spool ack failed; drain stopped', { seq: request.seq, error: (error as Error).message });
        return stop(error);
      }
    }
    const resend = await this.resendHeld(requests > 0);
    return {
      sent,
      requests: requests + resend.requests,
      rejected: rejected + resend.rejected,
      held,
      resent: resend.resent,
      remaining: 0,
      ...(resend.error !== undefined ? { error: resend.error } : {}),
    };
  }

  /**
   * Resends the held batches (refused with 401/403), lowest `seq` first, once the spool is empty:
   * each delivered one is deleted. A 401/403 again stops the resend (credentials still refused;
   * they stay held, within the bounds) unless a send of this drain succeeded: then the batch
   * itself is refused (an identity that does not match, not expired credentials) and is
   * quarantined. Any other refusal quarantines it; any other failure stops the resend.
   *
   * @param confirmed - a send of this drain succeeded
   */
  private async resendHeld(
    confirmed: boolean,
  ): Promise<{ resent: number; requests: number; rejected: number; error?: unknown }> {
    let resent = 0;
    let requests = 0;
    let rejected = 0;
    let ok = confirmed;
    let list: Awaited<ReturnType<Spool['heldBatches']>>;
    try {
      list = await this.spool.heldBatches();
    } catch (error) {
      this.warn('held batches unreadable; resend skipped', { error: (error as Error).message });
      return { resent, requests, rejected, error };
    }
    for (const held of list) {
      try {
        const batch = await this.spool.readHeldBatch(held);
        if (!batch) continue;
        try {
          await this.send(batch);
          requests += 1;
        } catch (error) {
          requests += 1;
          if (!(error instanceof SendRejectedError)) {
            this.noteFailure(batch, error);
            return { resent, requests, rejected, error };
          }
          if (isAuthRefusal(error) && !ok) return { resent, requests, rejected, error };
          const reason = reasonOf(error);
          this.warn('held batch refused by the API while others are accepted; quarantined, not retried', {
            seq: batch.seq,
            batch_id: batch.batch_id,
            ...(reason.status !== undefined ? { status: reason.status } : {}),
            error: reason.message,
          });
          await this.spool.settleHeld(held, { batch, reason });
          this.rejected += 1;
          this.refusedUnreported = addLoss(this.refusedUnreported, batch);
          rejected += 1;
          continue;
        }
        ok = true;
        this.failing = false;
        this.sent += 1;
        resent += 1;
        await this.spool.settleHeld(held, { delivered: true });
      } catch (error) {
        this.warn('held batch resend stopped by a spool error', {
          seq: held.seq,
          error: (error as Error).message,
        });
        return { resent, requests, rejected, error };
      }
    }
    return { resent, requests, rejected };
  }

  /** Moves a batch refused with 401/403 (the spool's head) to `held/`, to be resent. False when the spool could not. */
  private async hold(batch: Batch, error: SendRejectedError): Promise<boolean> {
    const reason = reasonOf(error);
    this.warn(
      'batch refused with 401/403 after every credential refresh; held and resent once a send succeeds',
      {
        seq: batch.seq,
        batch_id: batch.batch_id,
        ...(reason.status !== undefined ? { status: reason.status } : {}),
        error: reason.message,
      },
    );
    try {
      await this.spool.hold(batch.batch_id, reason);
    } catch (writeError) {
      this.warn('held batch write failed', { seq: batch.seq, error: (writeError as Error).message });
      return false;
    }
    return true;
  }

  /** Quarantines a refused batch, the spool's head. False when the spool could not. */
  private async reject(batch: Batch, error: SendRejectedError, spooledId: string): Promise<boolean> {
    const reason = reasonOf(error);
    this.warn('batch refused by the API; quarantined, not retried', {
      seq: batch.seq,
      batch_id: batch.batch_id,
      ...(reason.status !== undefined ? { status: reason.status } : {}),
      error: reason.message,
    });
    try {
      await this.spool.quarantine(spooledId, reason);
    } catch (writeError) {
      this.warn('quarantine write failed', { seq: batch.seq, error: (writeError as Error).message });
      return false;
    }
    this.rejected += 1;
    this.refusedUnreported = addLoss(this.refusedUnreported, batch);
    return true;
  }

  /**
   * True when an older API refused `request` for its `efa[]` count: `400` at path `efa` (the array,
   * not one of its entries), more entries than `LEGACY_MAX_EFA_PORTS_PER_BATCH`, and this sender
   * not yet merging within that limit.
   */
  private refusedForEfaCount(request: Batch, error: SendRejectedError): boolean {
    return (
      error.status === 400 &&
      error.body?.path === 'efa' &&
      (request.efa?.length ?? 0) > LEGACY_MAX_EFA_PORTS_PER_BATCH &&
      this.maxEfaPorts > LEGACY_MAX_EFA_PORTS_PER_BATCH
    );
  }

  /** Merges within the older API's `efa[]` limit for the next {@link LEGACY_EFA_RETRY_DRAINS} drains; warns once. */
  private fallBackToLegacyEfa(request: Batch, error: SendRejectedError): void {
    this.maxEfaPorts = LEGACY_MAX_EFA_PORTS_PER_BATCH;
    this.legacyEfaDrainsLeft = LEGACY_EFA_RETRY_DRAINS;
    if (this.legacyEfaWarned) return;
    this.legacyEfaWarned = true;
    this.warn(
      `the API refused ${request.efa?.length ?? 0} EFA entries in one request: its stack predates this agent (at most ${LEGACY_MAX_EFA_PORTS_PER_BATCH} a batch); sending the same batches in requests of at most ${LEGACY_MAX_EFA_PORTS_PER_BATCH}, nothing lost. Update the stack (cdk deploy) to merge them again`,
      { seq: request.seq, status: error.status, error: error.body?.error ?? error.message },
    );
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

/** 401 or 403: credentials (expired, rotated, clock skew), not the batch, unless others are accepted meanwhile. */
function isAuthRefusal(error: SendRejectedError): boolean {
  return error.status === 401 || error.status === 403;
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
