import type { Alert, InstanceInfo, RemediationDecision, StoreRows, WasteReportRow } from './types';
import type { WasteSeriesRow } from './waste-report';

/**
 * Ports: what the pipeline needs from the outside world. Adapters in `lambdas/adapters/` and
 * `lambdas/local/` implement them; handlers receive them injected.
 */

/** A record the store refused, with the reason it gave (e.g. Timestream's RejectedRecord). */
export interface RejectedRow {
  readonly table: 'gpu_windows' | 'efa_windows' | 'events';
  /** Index into the corresponding array of the `StoreRows` written. */
  readonly index: number;
  readonly reason: string;
}

/** Result of a store write: rows written and rows refused (logged and counted, never silently lost). */
export interface StoreWriteResult {
  readonly written: number;
  readonly rejected: readonly RejectedRow[];
}

/** Time range and grouping of a waste report query. */
export interface WasteQuery {
  /** Inclusive start (window end ≥ from). */
  readonly from: Date;
  /** Exclusive end (window end < to). */
  readonly to: Date;
}

/**
 * The telemetry store (DESIGN §4): tables `gpu_windows`, `efa_windows`, `events`. Writes are
 * idempotent per (dimensions, time) with `seq` as version: writing the same batch twice stores it once.
 */
export interface TelemetryStore {
  /**
   * Writes one batch's rows.
   * @throws when the store cannot be reached at all (the caller answers 5xx, the agent retries)
   */
  write(rows: StoreRows): Promise<StoreWriteResult>;
  /** Sums the ledger per GPU over a time range, ordered by wasted_usd descending. */
  queryWaste(query: WasteQuery): Promise<WasteReportRow[]>;
}

/** Publishes alerts (SNS topics by severity; console + JSONL locally). */
export interface AlertSink {
  publish(alert: Alert): Promise<void>;
}

/** A past remediation, as the policy needs it for idempotency and rate limits. */
export interface RemediationRecord {
  readonly instance_id: string;
  readonly asg_name?: string;
  readonly action: 'replace' | 'quarantine';
  /** ISO 8601. */
  readonly at: string;
  readonly rule: string;
}

/**
 * Durable state the remediation policy and the ledger need across batches: who was already
 * replaced, recent replacements per group, and since when a GPU is known broken.
 */
export interface StateStore {
  /** The replace/quarantine record of an instance, if any (one per instance, ever). */
  getRemediation(instanceId: string): Promise<RemediationRecord | undefined>;
  /**
   * Records a replace/quarantine for an instance, only if none exists (conditional write).
   * @returns false when one already existed (another invocation won the race)
   */
  putRemediationIfAbsent(record: RemediationRecord): Promise<boolean>;
  /** Replace actions in a group since `since` (for the per-group rate limit). */
  listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]>;
  /** Since when a GPU (`gpuKey` = index, or PCI bus id, or `*` for the whole instance) is known broken, ISO 8601. */
  getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>>;
  /** Marks a GPU broken from `at` (keeps the earliest time if already marked). */
  markBroken(instanceId: string, gpuKey: string, at: string): Promise<void>;
  /**
   * Claims the right to send alert `alertId` now: true (and records `at`) when it was never sent or
   * its last send is older than `cooldownS`; false otherwise. Conditional write, so two Lambdas
   * never send the same alert twice.
   */
  claimAlert(alertId: string, at: string, cooldownS: number): Promise<boolean>;
}

/** Carries out a remediation decision (Auto Scaling / EC2), or only logs it in dry-run. */
export interface Remediator {
  /** Auto Scaling `SetInstanceHealth(Unhealthy, ShouldRespectGracePeriod=false)`: the group replaces it. */
  replace(decision: RemediationDecision): Promise<void>;
  /** EC2 `CreateTags gpu-sentinel:quarantine=<rule>` on an instance outside a group; never terminates. */
  quarantine(decision: RemediationDecision): Promise<void>;
}

/** Receives every remediation decision, done or skipped (audit log: SNS + JSONL locally). */
export interface DecisionSink {
  record(decision: RemediationDecision): Promise<void>;
}

/**
 * Looks up what EC2 and Auto Scaling say about an instance (server-side enrichment). Adapters cache
 * answers for a while; the ingest path asks once per batch.
 */
export interface InstanceDirectory {
  /**
   * @param instanceId - EC2 instance id
   * @param region - the instance's region (`host.region`); clients are made per region
   * @returns the instance, or undefined when EC2 does not know it (terminated long ago, or never existed)
   * @throws when EC2 or Auto Scaling cannot be asked (throttled, no permission, unreachable)
   */
  describe(instanceId: string, region: string): Promise<InstanceInfo | undefined>;
}

/**
 * The reads the finance report needs (DESIGN §9): per-GPU ledger sums, and the ledger per UTC day
 * and per each window's own diagnosis, team, job, instance type and price source. The local store
 * has both; the Athena and Timestream adapters have `queryWaste`.
 */
export interface WasteReportSource {
  /** See {@link TelemetryStore.queryWaste}. */
  queryWaste(query: WasteQuery): Promise<WasteReportRow[]>;
  /**
   * @returns the ledger per day and slice over `from ≤ time < to`
   * @throws when the store cannot be reached, or the range is empty
   */
  queryWasteSeries(query: WasteQuery): Promise<WasteSeriesRow[]>;
}

/** Where a report's files are written (a KMS-encrypted S3 bucket; a folder locally). */
export interface ReportFileSink {
  /**
   * Writes one file, replacing any file of that name (a re-run of a report rewrites it whole).
   * @param name - the file's path under the sink's root, e.g. `week/2026-03-11/waste-by-team.csv`
   * @param body - the file's text (UTF-8)
   * @param contentType - its media type, e.g. `text/csv; charset=utf-8`
   * @returns where it now is, e.g. `s3://bucket/reports/week/2026-03-11/waste-by-team.csv`
   * @throws when it cannot be written (nothing is announced then)
   */
  put(name: string, body: string, contentType: string): Promise<string>;
}

/** Announces a written report (the SNS `reports` topic; the console locally). */
export interface ReportNotifier {
  /**
   * @param message - subject (≤ 100 characters) and plain-text body
   * @param attributes - message attributes, e.g. `report_period`
   * @throws when the message cannot be sent
   */
  publish(
    message: { readonly subject: string; readonly body: string },
    attributes: Readonly<Record<string, string>>,
  ): Promise<void>;
}
