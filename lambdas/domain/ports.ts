import type { MetricGroup } from './batch-metrics';
import type { RuleId } from './rule-registry';
import type {
  Alert,
  Diagnosis,
  Finding,
  GpuWindowRow,
  InstanceInfo,
  LedgerSums,
  RemediationDecision,
  Severity,
  StoreRows,
  WasteReportRow,
} from './types';

/**
 * Ports: what the pipeline needs from the outside world. Adapters in `lambdas/adapters/` and
 * `lambdas/local/` implement them; handlers receive them injected.
 */

/**
 * The structured log the application services and handlers write to: Powertools Logger in Lambda
 * (it has this shape), a pino adapter in local mode, a recording fake in tests. Log once per
 * condition, never per sample.
 */
export interface Log {
  /** Normal operation worth a line (batch accepted, alert sent). */
  info(message: string, data?: Record<string, unknown>): void;
  /** Something an operator may act on (rejected records, remediation escalated). */
  warn(message: string, data?: Record<string, unknown>): void;
  /** A failure (store down, publish failed). */
  error(message: string, data?: Record<string, unknown>): void;
}

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
 * What a grouped waste report sums by: a column of `gpu_windows` (`instance` = `instance_id`;
 * `namespace` and `pod` = the Kubernetes pod holding the GPU in each window, absent off Kubernetes).
 */
export const WASTE_GROUPS = [
  'team',
  'job',
  'namespace',
  'pod',
  'instance_type',
  'instance',
  'diagnosis',
] as const;
/** One of {@link WASTE_GROUPS}. */
export type WasteGroup = (typeof WASTE_GROUPS)[number];

/** A waste report over a time range, summed by one grouping. */
export interface WasteGroupQuery extends WasteQuery {
  readonly by: WasteGroup;
}

/** The ledger summed over every GPU window of one group in a time range. All money in USD. */
export interface WasteGroupRow extends LedgerSums {
  /** The group's value (team name, job, namespace, pod, instance type, instance id, diagnosis); absent for windows without one (no team tag, no pod, no diagnosis). */
  readonly group?: string;
  /** `wasted_usd` split by diagnosis; diagnoses without windows absent. */
  readonly wasted_by_diagnosis_usd: Partial<Record<Diagnosis, number>>;
  /**
   * GPU-hours of the group's windows priced by nobody (`price_source` `unpriced`, costed at $0), so
   * the group's cost is understated; absent when none.
   */
  readonly unpriced_gpu_hours?: number;
}

/** The recent GPU windows of one instance. */
export interface RecentWindowsQuery extends WasteQuery {
  readonly instance_id: string;
  /** Most rows returned, integer ≥ 1. @default 1000 */
  readonly limit?: number;
}

/**
 * A GPU window as a store gives it back: every column it keeps. Timestream keeps no batch id, seq,
 * region or GPU name (they are neither dimensions nor measures there), so those may be absent.
 */
export type StoredGpuWindow = Omit<GpuWindowRow, 'batch_id' | 'seq' | 'region' | 'gpu_name'> &
  Partial<Pick<GpuWindowRow, 'batch_id' | 'seq' | 'region' | 'gpu_name'>>;

/**
 * One node of one job over a time range, as the cross-node `straggler` rule needs it: per
 * instance and `job` tag (the tag each window had), the mean of each straggler metric over the
 * instance's GPU windows that carry it (every GPU, latest `seq` per window). A metric no window
 * carried is absent, never 0. Units as the contract's metrics: `sm_active` 0–1 (DCGM
 * `DCGM_FI_PROF_SM_ACTIVE`), `power_w` W (NVML `nvmlDeviceGetPowerUsage`), `gpu_temp_c` °C
 * (NVML `nvmlDeviceGetTemperature`).
 */
export interface NodeJobMeans {
  /** EC2 instance id. */
  readonly instance_id: string;
  /** The `job` tag its windows had. */
  readonly job: string;
  /** Mean SM active, 0–1. */
  readonly sm_active?: number;
  /** Mean power draw, W. */
  readonly power_w?: number;
  /** Mean GPU temperature, °C. */
  readonly gpu_temp_c?: number;
}

/** When an instance last sent a GPU window. */
export interface LastSeen {
  readonly instance_id: string;
  /** The instance type of its latest window. */
  readonly instance_type: string;
  /** End of its latest window, ISO 8601 UTC with ms. */
  readonly last_seen: string;
}

/**
 * The telemetry store (docs/design.md §4): tables `gpu_windows`, `efa_windows`, `events`. Writes are
 * idempotent per (dimensions, time) with `seq` as version: writing the same batch twice stores it
 * once, or (stores without upsert, Athena) every read counts it once.
 */
export interface TelemetryStore {
  /**
   * Writes one batch's rows.
   * @throws when the store cannot be reached at all (the caller answers 5xx, the agent retries)
   */
  write(rows: StoreRows): Promise<StoreWriteResult>;
  /** Sums the ledger per GPU over a time range, ordered by wasted_usd descending. */
  queryWaste(query: WasteQuery): Promise<WasteReportRow[]>;
  /**
   * Sums the ledger per team, job, namespace, pod, instance type, instance or diagnosis over a time range (reports).
   * @returns one row per group, ordered by `wasted_usd` descending, then group (absent last)
   */
  queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]>;
  /**
   * The GPU windows of one instance in a time range (fleet rules), newest first.
   * @returns at most `limit` rows as they were written (the latest `seq` per window)
   */
  recentWindows(query: RecentWindowsQuery): Promise<StoredGpuWindow[]>;
  /**
   * Per instance and `job` tag, the straggler metric means of its GPU windows in a time range
   * (cross-node `straggler`): one aggregate query for the whole fleet, so the evaluator's reads do
   * not grow with its number of instances. Windows without a `job` tag are left out.
   * @returns one entry per instance and job, ordered by instance id then job
   */
  nodeJobMeans(query: WasteQuery): Promise<NodeJobMeans[]>;
  /**
   * When each instance last sent a GPU window in a time range (`agent_silent`).
   * @returns one entry per instance, ordered by instance id
   */
  lastSeen(query: WasteQuery): Promise<LastSeen[]>;
}

/** Publishes alerts (SNS topics by severity; console + JSONL locally). */
export interface AlertSink {
  publish(alert: Alert): Promise<void>;
}

/**
 * Where ingest's CloudWatch metrics go (docs/design.md §13): EMF lines on stdout in Lambda
 * (`EmfMetricsSink`); nothing in local mode. Emitting must never fail a batch: an implementation
 * logs its own failures and returns.
 */
export interface MetricsSink {
  /**
   * Emits the groups (one EMF document each), stamped `at`.
   * @param groups - from `acceptedBatchMetrics` / `rejectedBatchMetrics`
   * @param at - the metrics' timestamp (the batch's arrival)
   */
  emit(groups: readonly MetricGroup[], at: Date): void;
}

/**
 * A past remediation, as the policy needs it for idempotency and rate limits: a `replace` or
 * `quarantine` (one per instance, ever) or a `reboot` (the last one per instance is kept; the
 * ladder's first step, see `docs/remediation.md`).
 */
export interface RemediationRecord {
  readonly instance_id: string;
  readonly asg_name?: string;
  readonly action: 'replace' | 'quarantine' | 'reboot';
  /** ISO 8601. */
  readonly at: string;
  readonly rule: string;
}

/**
 * The budgets a replacement must fit in, checked and taken in one atomic step by
 * {@link StateStore.reserveRemediation}. A slot is taken for `windowS` seconds from the reservation's `at`.
 */
export interface RemediationBudget {
  /** Most replacements of the record's Auto Scaling group in any `windowS`, count ≥ 0 (from `groupReplacementLimit`). */
  readonly groupLimit: number;
  /** Most replacements of the whole fleet (every group of the deployment) in any `windowS`, count ≥ 0. */
  readonly fleetLimit: number;
  /** The rolling window of both limits, s > 0. */
  readonly windowS: number;
}

/** One reservation request: the remediation it would record, and, for a `replace`, the budgets it must fit in. */
export interface RemediationReservationRequest {
  /** The remediation to reserve; `asg_name` must be the real group (from Auto Scaling, not the agent). */
  readonly record: RemediationRecord;
  /**
   * Budgets of a `replace` in a group, or of a `reboot` (the group scope only when the instance is in
   * a group; reboots have budget scopes of their own); absent for a quarantine (which replaces nothing).
   */
  readonly budget?: RemediationBudget;
  /**
   * Seconds the reservation stays pending before another invocation may take it over (the holder
   * died between reserving and confirming), s > 0.
   */
  readonly leaseS: number;
  /**
   * For a `reboot` only: a confirmed reboot of the instance younger than this many seconds refuses
   * the reservation (`remediated`), so two invocations never reboot one instance for one fault.
   * @default 0 (any confirmed reboot is old enough)
   */
  readonly repeatAfterS?: number;
}

/** Why a reservation was refused. */
export const RESERVATION_REFUSALS = ['remediated', 'in_progress', 'group_budget', 'fleet_budget'] as const;
/** One of {@link RESERVATION_REFUSALS}. */
export type ReservationRefusal = (typeof RESERVATION_REFUSALS)[number];

/**
 * The answer of {@link StateStore.reserveRemediation}: granted with a lease id to confirm or release,
 * or refused with the reason (and, for a budget, the slots in use and the limit).
 */
export type RemediationReservation =
  | { readonly granted: true; readonly leaseId: string }
  | {
      readonly granted: false;
      readonly reason: ReservationRefusal;
      /** Replacements counted against the exhausted budget in the window (budget refusals only). */
      readonly used?: number;
      /** The exhausted budget's limit (budget refusals only). */
      readonly limit?: number;
    };

/**
 * A reboot or replacement announced and not carried out yet (the grace period `remediationDelayS`,
 * docs/remediation.md): one per instance, kept by the state store from the notice until it runs or
 * is cancelled.
 */
export interface PendingRemediation {
  readonly instance_id: string;
  /** What runs when due. */
  readonly action: 'reboot' | 'replace';
  /** The fault that decided it (re-judged by the remediation policy when due). */
  readonly finding: Finding;
  /** When the notice went out, ISO 8601: the pending record's identity (updates and takes name it). */
  readonly decided_at: string;
  /** When it runs, ISO 8601 (`decided_at` + the delay). */
  readonly due_at: string;
  /**
   * The instance's latest fault (a point finding of action `reset` or `replace`) seen by the
   * pipeline, ISO 8601 (the server's clock): `decided_at` until another fault arrives; a later one
   * means the instance did not recover.
   */
  readonly last_fault_at: string;
}

/** One instance's last fault in an incident scope (`StateStore.recordFault`). */
export interface ScopeFault {
  readonly instance_id: string;
  /** When it last faulted, ISO 8601 (as recorded). */
  readonly at: string;
}

/** What the pipeline knows about one instance before it judges a batch (read in one call). */
export interface InstanceState {
  /** gpuKey → since when broken, ISO 8601 (as {@link StateStore.getBrokenSince}). */
  readonly broken: ReadonlyMap<string, string>;
  /** gpuKey → since when idle with no process, ISO 8601 (as {@link StateStore.getIdleSince}). */
  readonly idle: ReadonlyMap<string, string>;
  /** The window-rule alerts firing on the instance (as {@link StateStore.listFiringAlerts}). */
  readonly firing: readonly FiringAlert[];
}

/**
 * Durable state the remediation policy and the ledger need across batches: who was already
 * replaced, recent replacements per group, and since when a GPU is known broken.
 */
export interface StateStore {
  /**
   * The broken marks, idle marks and firing alerts of an instance in one read (DynamoDB: one
   * strongly consistent `Query` of the instance's partition instead of three), taken once per batch
   * before judging it: the same answers as the three reads below.
   */
  getInstanceState(instanceId: string): Promise<InstanceState>;
  /** The confirmed replace/quarantine record of an instance, if any (one per instance, ever); a pending reservation is not one. */
  getRemediation(instanceId: string): Promise<RemediationRecord | undefined>;
  /** The instance's last confirmed `reboot` record, if any; a pending reservation is not one. */
  getLastReboot(instanceId: string): Promise<RemediationRecord | undefined>;
  /**
   * Records a replace/quarantine for an instance, only if none exists (conditional write).
   * @returns false when one already existed (another invocation won the race)
   */
  putRemediationIfAbsent(record: RemediationRecord): Promise<boolean>;
  /**
   * Reserves a remediation in one atomic step (DynamoDB: one conditional transaction; DuckDB: one
   * transaction): the instance's record (pending, leased for `leaseS`) and, for a `replace` with a
   * budget, one slot of the group's and one of the fleet's budget. Refused when the instance already
   * has a confirmed remediation (`remediated`), a live lease (`in_progress`), or a budget has no free
   * slot in the window. Confirmed remediations are the only ones {@link getRemediation} returns.
   * A `reboot` is kept apart from the replace/quarantine record (its own item or row, its own budget
   * scopes `reboot#asg#<group>` and `reboot#fleet`) and is refused as `remediated` only while a
   * confirmed reboot is younger than `repeatAfterS`; {@link getLastReboot} returns it once confirmed.
   *
   * @returns granted with a lease id, or refused and why
   * @throws when the store cannot be reached (nothing was reserved)
   */
  reserveRemediation(request: RemediationReservationRequest): Promise<RemediationReservation>;
  /**
   * Confirms a granted reservation after the remediation call succeeded: the record becomes the
   * instance's remediation and enters the group history ({@link listRemediations}).
   * @throws when the store cannot be reached
   */
  confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void>;
  /**
   * Releases a granted reservation after the remediation call failed: the record and the budget
   * slots are freed, so the next batch retries (or escalates) instead of the slot being consumed
   * by a replacement that never happened. Releasing a lease someone else took over does nothing.
   * @throws when the store cannot be reached
   */
  releaseRemediation(record: RemediationRecord, leaseId: string): Promise<void>;
  /**
   * Records that an instance faulted at `at` in an incident scope (`asg#<group>` or `fleet`; the
   * latest time per instance is kept), then reads the scope back: the incident's members. Correlated
   * faults are judged from this (docs/remediation.md, storms).
   *
   * @param scope - the incident scope
   * @param instanceId - EC2 instance id
   * @param at - the fault's time, ISO 8601
   * @param windowS - how far back a fault counts, s > 0
   * @returns every instance of the scope whose last fault is in `(at − windowS, at]`, this one
   *   included, oldest first (ties by instance id)
   * @throws when the store cannot be reached
   */
  recordFault(scope: string, instanceId: string, at: string, windowS: number): Promise<ScopeFault[]>;
  /** The instance's pending (announced, not yet carried out) remediation, if any. */
  getPendingRemediation(instanceId: string): Promise<PendingRemediation | undefined>;
  /**
   * Records a pending remediation: written when the instance has none, or when its pending record
   * has the same `decided_at` (an update: a later fault, a replace superseding a reboot); refused
   * when another notice (another `decided_at`) is pending (conditional write).
   * @returns false when refused
   * @throws {TypeError} when `decided_at`, `due_at` or `last_fault_at` is not an ISO 8601 time
   * @throws when the store cannot be reached
   */
  putPendingRemediation(pending: PendingRemediation): Promise<boolean>;
  /**
   * Removes the instance's pending remediation announced at `decidedAt`, once: true for the one
   * invocation that removed it (and so carries it out or publishes its cancellation), false when it
   * was already gone or is another notice.
   * @throws when the store cannot be reached
   */
  takePendingRemediation(instanceId: string, decidedAt: string): Promise<boolean>;
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
  /**
   * Gives back a claim whose message could not be sent (the publish failed after the claim), so
   * the next attempt sends it instead of the cooldown silently swallowing it. Only the claim made
   * at `at` is removed; a later claim by another invocation is kept.
   * @throws when the store cannot be reached
   */
  releaseAlert(alertId: string, at: string): Promise<void>;
  /**
   * Publish-then-record, step 1: leases the right to send alert `alertId` now. True when it was never
   * sent or its last send is at or before `at − cooldownS`, and no other lease younger than `leaseS` is
   * held (a lease of a crashed invocation expires after `leaseS`). Conditional write, so two Lambdas
   * never both hold it. Nothing is recorded as sent until {@link confirmAlert}.
   */
  leaseAlert(alertId: string, at: string, cooldownS: number, leaseS: number): Promise<boolean>;
  /**
   * Step 2 after a successful publish: records the send at `at` (the cooldown starts) and frees the lease
   * taken at `at`.
   */
  confirmAlert(alertId: string, at: string, cooldownS: number): Promise<void>;
  /**
   * Step 2 after a failed publish: frees the lease taken at `at` without recording a send, so the agent's
   * retry (or the next batch) sends the alert; never suppressed for the cooldown.
   */
  releaseAlertLease(alertId: string, at: string): Promise<void>;
  /** The window-rule alerts firing on an instance (sent, not resolved), by alert id order. */
  listFiringAlerts(instanceId: string): Promise<FiringAlert[]>;
  /** Records an alert as firing; an existing record (earlier `since`) is kept. */
  putFiringAlert(alert: FiringAlert): Promise<void>;
  /**
   * Removes a firing record, once: true for the one invocation that removed it (and so sends the
   * resolve message), false when it was already gone.
   */
  takeFiringAlert(instanceId: string, alertId: string): Promise<boolean>;
  /** Since when each GPU (`gpuKey`) of an instance has been idle with no process, ISO 8601. */
  getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>>;
  /** Marks a GPU idle from `at` (keeps the earliest time if already marked). */
  markIdle(instanceId: string, gpuKey: string, at: string): Promise<void>;
  /** Clears a GPU's idle mark (it was judged busy); no-op when none. */
  clearIdle(instanceId: string, gpuKey: string): Promise<void>;
}

/** A window-rule alert that was sent and has not resolved yet (the StateStore's firing record). */
export interface FiringAlert {
  readonly instance_id: string;
  /** Stable alert id `rule:instance_id[:gpu]`. */
  readonly alert_id: string;
  readonly rule: RuleId;
  readonly severity: Severity;
  readonly instance_type: string;
  /** When it first fired, ISO 8601. */
  readonly since: string;
  /** The summary it fired with (the resolve message repeats it). */
  readonly summary: string;
}

/** Carries out a remediation decision (Auto Scaling / EC2), or only logs it in dry-run. */
export interface Remediator {
  /** Auto Scaling `SetInstanceHealth(Unhealthy, ShouldRespectGracePeriod=false)`: the group replaces it. */
  replace(decision: RemediationDecision): Promise<void>;
  /** EC2 `CreateTags gpu-sentinel:quarantine=<rule>` on an instance outside a group; never terminates. */
  quarantine(decision: RemediationDecision): Promise<void>;
  /** EC2 `RebootInstances` of the one instance: a reboot resets every GPU of it (the ladder's first step). */
  reboot(decision: RemediationDecision): Promise<void>;
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
   * @throws {InstanceLookupError} when EC2 or Auto Scaling cannot be asked (throttled, no permission, unreachable)
   */
  describe(instanceId: string, region: string): Promise<InstanceInfo | undefined>;
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
