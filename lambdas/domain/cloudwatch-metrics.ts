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
  /** Ingest: batches refused with a 4xx (Count). Dimensions: none. */
  rejectedBatches: 'RejectedBatches',
  /** Ingest: flush windows stored (Count). Dimensions: none. */
  flushWindows: 'FlushWindows',
  /** Ingest: mean `sm_active` of the batch's flush windows, 0..100 (Percent). Dimensions: none, Team. */
  smActive: 'SmActive',
  /** Ingest: mean `sm_occupancy`, 0..100 (Percent). */
  smOccupancy: 'SmOccupancy',
  /** Ingest: mean `tensor_active`, 0..100 (Percent). */
  tensorActive: 'TensorActive',
  /** Ingest: mean `dram_active`, 0..100 (Percent). */
  dramActive: 'DramActive',
  /** Ingest: mean PCIe RX throughput, bytes/s (Bytes/Second). */
  pcieRxBytesPerSecond: 'PcieRxBytesPerSecond',
  /** Ingest: efficiency of the batch's GPUs (ledger `efficiency`), 0..100 (Percent). */
  efficiency: 'Efficiency',
  /** Ingest: wasted USD per hour of the batch's GPUs (None). Dimensions: none, Team. */
  wastedUsdPerHour: 'WastedUsdPerHour',
  /** Ingest: alerts published (Count). Dimensions: Rule, Severity. */
  alerts: 'Alerts',
  /** Ingest: seconds from the newest window's end to its arrival (Seconds). */
  agentLagS: 'AgentLag',
  /** Ingest: XID events received (Count). */
  xidEvents: 'XidEvents',
  /** Fleet evaluator: running GPU instances with no batch for the silence threshold (Count). */
  silentAgents: 'SilentAgents',
  /** Fleet evaluator: on-demand USD per hour of the silent instances, unmonitored spend (None). */
  unmonitoredUsdPerHour: 'UnmonitoredUsdPerHour',
  /** Fleet evaluator: fleet waste rate, wasted / cost over the evaluation span, 0..100 (Percent). Dimensions: none, Team. */
  fleetWasteRate: 'FleetWasteRate',
  /** Fleet evaluator: wasted USD per hour over the evaluation span (None). Dimensions: none, Team. */
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
  /** Rule id of an alert (`xid`, `idle_gpu`, `agent_silent`, …). */
  rule: 'Rule',
  /** Alert severity (`critical`, `warning`, `info`). */
  severity: 'Severity',
} as const;

/** The `Team` dimension's value for spend without a `team` tag. */
export const UNTAGGED_TEAM = 'untagged';
