import type {
  Alert,
  AlertBounds,
  AlertSink,
  DecisionSink,
  Diagnosis,
  Finding,
  GpuWindowRow,
  InstanceDirectory,
  Log,
  PriceOverrides,
  PriceRates,
  RemediationDecision,
  RemediationLimits,
  RemediationMode,
  Remediator,
  RuleContext,
  StateStore,
  StormLimits,
  TelemetryStore,
} from '../domain';
import type { SpotPriceSource } from '../domain/spot-price-source';

/**
 * What the ingest application service (`processBatch`) is given: the ports, injected, and the
 * deployment's settings. The Lambda wires the AWS adapters (`handlers/ingest.ts`), local mode the
 * DuckDB store and the console sinks (`local/local-pipeline.ts`), tests fakes.
 */
export interface PipelineDeps {
  /** Where the batch's rows go (Athena/Firehose, Timestream, DuckDB). */
  readonly store: TelemetryStore;
  /** Broken and idle marks, alert leases and firing records, remediation reservations. */
  readonly state: StateStore;
  /** Where alerts are published (SNS by severity; console + JSONL locally). */
  readonly alerts: AlertSink;
  /** Where every remediation decision is recorded (SNS; JSONL locally). */
  readonly decisions: DecisionSink;
  /** Carries out replace and quarantine decisions (Auto Scaling / EC2). */
  readonly remediator: Remediator;
  /** The structured log. */
  readonly log: Log;
  /** Remediation mode (docs/design.md §8). */
  readonly remediationMode: RemediationMode;
  /** True when remediations are decided and recorded but never executed (local mode). */
  readonly dryRun: boolean;
  /** Negotiated prices by instance type, USD/hour. @default {} */
  readonly priceOverrides?: PriceOverrides;
  /**
   * The deployment's Capacity Block, Savings Plans and spot rates; a spot host without a spot rate or
   * discount is unpriced, never billed at on-demand. @default {}
   */
  readonly priceRates?: PriceRates;
  /**
   * The spot price of a spot host no configured spot rate prices (EC2's spot price history, per
   * type, AZ and hour). @default undefined (such a host is priced by `spot_discount`, or unpriced)
   */
  readonly spotPrices?: SpotPriceSource;
  /** Rule thresholds and XID policy. */
  readonly rules: RuleContext;
  /** An alert that is still firing is sent again after this many seconds. @default DEFAULT_ALERT_COOLDOWN_S (3600) */
  readonly alertCooldownS?: number;
  /**
   * What EC2 and Auto Scaling say about the sender (server-side enrichment): the real Auto Scaling
   * group, its desired capacity and tags for the remediation policy. @default undefined (trust the
   * batch's `host`; local mode)
   */
  readonly instances?: InstanceDirectory;
  /**
   * The grace period, s, 0..86400: a reboot or replacement is announced this long before it is
   * carried out (docs/remediation.md). @default 0 (act at once)
   */
  readonly remediationDelayS?: number;
  /** Replacement budgets per group and fleet-wide. @default DEFAULT_REMEDIATION_LIMITS */
  readonly remediationLimits?: RemediationLimits;
  /** When correlated faults are a storm (one incident, remediation paused). @default DEFAULT_STORM_LIMITS */
  readonly stormLimits?: StormLimits;
  /** Alerts one batch and one instance send one by one; the rest go into a summary. @default DEFAULT_ALERT_BOUNDS */
  readonly alertBounds?: AlertBounds;
}

/** What the alert lifecycle needs of the pipeline: state, sink, log and cooldown (ingest and fleet alike). */
export type AlertLifecycleDeps = Pick<PipelineDeps, 'state' | 'alerts' | 'log' | 'alertCooldownS'>;

/** What `processBatch` did with one batch. */
export interface ProcessResult {
  /** Windows + EFA windows + events stored. */
  readonly accepted: number;
  /** Records the store refused (logged with their reasons). */
  readonly rejected: number;
  /** Point findings (most severe first), then window findings (in `WINDOW_RULES` order). */
  readonly findings: readonly Finding[];
  /** GPU key (`3`, a MIG slice `3/gi7`) → the diagnosis of its judged horizon (stored with its flush windows); empty without one. */
  readonly diagnoses: ReadonlyMap<string, Diagnosis>;
  /** Alerts published (after cooldown), resolve messages included (`status: 'resolved'`). */
  readonly alerts: readonly Alert[];
  /** The batch's remediation decision (one per batch, for its most severe point fault), or none. */
  readonly decisions: readonly RemediationDecision[];
  /** The GPU flush-window rows written (metrics, ledger, enriched team): what ingest's CloudWatch metrics are computed from. */
  readonly windows: readonly GpuWindowRow[];
}
