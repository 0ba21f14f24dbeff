import type {
  Alert,
  InstanceInfo,
  RemediationDecision,
  RuleId,
  Severity,
  StoreRows,
  WasteReportRow,
} from './types';

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
