/**
 * One home for the CloudWatch metric names the pipeline publishes and the stack's dashboard and
 * alarms read. Ingest emits its metrics in CloudWatch embedded metric format (EMF) through
 * Powertools Metrics; the fleet evaluator publishes its own with `PutMetricData`. Both write to
 * {@link METRICS_NAMESPACE}, so one dashboard and one set of alarms see all of them.
 *
 * Dimensions are kept few on purpose: every distinct dimension set is one custom metric, billed
 * at $0.30 per metric-month (first 10,000; CloudWatch pricing, us-east-1).
 */

/** The CloudWatch namespace of every gpu-sentinel metric. */
export const METRICS_NAMESPACE = 'GpuSentinel';

/**
 * Metric names, by the component that publishes them. Units are CloudWatch's (`Count`,
 * `Percent`, `Seconds`, `None` for USD).
 */
export const METRIC_NAMES = {
  /** Ingest: batches accepted (Count). Dimensions: none. */
  batches: 'Batches',
  /** Ingest: batches answered with anything but 202, 4xx (refused) or 5xx (retry later) (Count). Dimensions: StatusClass. */
  rejectedBatches: 'RejectedBatches',
  /** Ingest: flush windows stored (Count). Dimensions: none. */
  flushWindows: 'FlushWindows',
  /**
   * Ingest: `sm_active` of each GPU of the batch (time-weighted mean of its flush windows), one
   * value per GPU, 0..100 (Percent); the `Average` statistic is the fleet's mean per GPU.
   * Dimensions: none.
   */
  smActive: 'SmActive',
  /** Ingest: `sm_occupancy` per GPU, as {@link METRIC_NAMES.smActive}, 0..100 (Percent). */
  smOccupancy: 'SmOccupancy',
  /** Ingest: `tensor_active` per GPU, 0..100 (Percent). */
  tensorActive: 'TensorActive',
  /** Ingest: `dram_active` per GPU, 0..100 (Percent). */
  dramActive: 'DramActive',
  /** Ingest: PCIe RX throughput per GPU, bytes/s (Bytes/Second). */
  pcieRxBytesPerSecond: 'PcieRxBytesPerSecond',
  /** Ingest: ledger `efficiency` per GPU, 0..100 (Percent). */
  efficiency: 'Efficiency',
  /**
   * Ingest: wasted USD of the batch's flush windows (ledger `wasted_usd`), one value per batch
   * (None). Dollars add up where rates do not: `Sum` over a period of P seconds is the wasted
   * dollars ingested in it, and `3600 × Sum / P` the fleet's wasted USD per hour, whatever the
   * agents' batch interval. Dimensions: none, Team.
   */
  wastedUsd: 'WastedUsd',
  /** Ingest: firing alerts published (Count). Dimensions: Severity. */
  alerts: 'Alerts',
  /** Ingest: seconds from the newest window's end to its arrival (Seconds). */
  agentLagS: 'AgentLag',
  /** Ingest: XID events received (Count). */
  xidEvents: 'XidEvents',
  /** Fleet evaluator: running GPU instances with no batch for the silence threshold (Count). */
  silentAgents: 'SilentAgents',
  /** Fleet evaluator: on-demand USD per hour of the silent instances, unmonitored spend (None). */
  unmonitoredUsdPerHour: 'UnmonitoredUsdPerHour',
  /** Fleet evaluator: fleet waste rate, wasted / cost over the evaluation span, 0..100 (Percent). Dimensions: none; Team for each team the deployment lists. */
  fleetWasteRate: 'FleetWasteRate',
  /** Fleet evaluator: wasted USD per hour over the evaluation span (None). Dimensions: none; Team for each team the deployment lists. */
  fleetWastedUsdPerHour: 'FleetWastedUsdPerHour',
  /** Fleet evaluator: straggler nodes found (Count). */
  stragglers: 'Stragglers',
} as const;

/** One metric name. */
export type MetricName = (typeof METRIC_NAMES)[keyof typeof METRIC_NAMES];

/** Dimension names used on gpu-sentinel metrics. */
export const METRIC_DIMENSIONS = {
  /** The host's `team` tag (the ledger's team), `untagged` when absent. */
  team: 'Team',
  /** Alert severity (`critical`, `warning`, `info`). */
  severity: 'Severity',
  /** Answer class of a batch the ingest handler did not accept: `4xx` (refused: invalid, too large, not the sender it claims) or `5xx` (retry later). */
  statusClass: 'StatusClass',
} as const;

/** The `Team` value of a host without a `team` tag. */
export const UNTAGGED_TEAM = 'untagged';

/** The `Team` value ingest gives every team not on the deployment's list of metric teams (bounded cardinality). */
export const OTHER_TEAM = 'other';

/**
 * Most teams a deployment may list for their own `Team` dimension value on ingest metrics, teams.
 * With {@link OTHER_TEAM} and {@link UNTAGGED_TEAM}, at most 52 values: at most 52 ingest series
 * (`WastedUsd` by Team) and 2 × 50 of the fleet evaluator (`FleetWasteRate`, `FleetWastedUsdPerHour`
 * of each listed team), ≈ $46/month at $0.30 per metric-month; each listed team adds 3 series.
 * Source: this project's choice.
 */
export const MAX_METRIC_TEAMS = 50;

/**
 * Most values one metric may carry in one EMF document: Powertools Metrics flushes a metric at 100
 * values (`MAX_METRIC_VALUES_SIZE`; EMF allows 100 values per metric). Per-GPU metrics stay under
 * it because a batch holds at most `MAX_GPUS_PER_BATCH` (64) GPUs.
 */
export const MAX_EMF_VALUES_PER_METRIC = 100;
