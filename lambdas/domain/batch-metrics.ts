import { type Batch, epochMs, type GpuMetrics } from '../contract';
import {
  MAX_METRIC_TEAMS,
  METRIC_DIMENSIONS,
  METRIC_NAMES,
  type MetricName,
  OTHER_TEAM,
  UNTAGGED_TEAM,
} from './cloudwatch-metrics';
import { MS_PER_SECOND } from './constants';
import { MetricsTeamsError } from './errors';
import type { Alert, GpuWindowRow } from './types';

/**
 * CloudWatch units the ingest metrics use (a subset of CloudWatch's `StandardUnit`, spelled as the
 * PutMetricData API and EMF spell them).
 */
export const METRIC_UNITS = {
  count: 'Count',
  percent: 'Percent',
  seconds: 'Seconds',
  bytesPerSecond: 'Bytes/Second',
  /** Dollars: CloudWatch has no currency unit. */
  none: 'None',
} as const;
/** One CloudWatch unit of {@link METRIC_UNITS}. */
export type MetricUnitName = (typeof METRIC_UNITS)[keyof typeof METRIC_UNITS];

/** One metric of a {@link MetricGroup}: every value is one sample (CloudWatch statistics run over all of them). */
export interface MetricDatum {
  readonly name: MetricName;
  readonly unit: MetricUnitName;
  /** 1..`MAX_EMF_VALUES_PER_METRIC` (100) samples; per-GPU metrics hold one per GPU (≤ 64 per batch). */
  readonly values: readonly number[];
}

/**
 * Metrics that share one dimension set: one EMF document (one `_aws.CloudWatchMetrics` directive).
 * `dimensions` empty: the metrics are published without dimensions (the fleet-wide series).
 */
export interface MetricGroup {
  /** Dimension name → value, names from `METRIC_DIMENSIONS`. */
  readonly dimensions: Readonly<Record<string, string>>;
  readonly metrics: readonly MetricDatum[];
}

/** What {@link acceptedBatchMetrics} reads: the validated batch and what the pipeline made of it. */
export interface AcceptedBatchInput {
  /** The batch as `parseBatch` returned it (events and every window's end). */
  readonly batch: Batch;
  /** The GPU flush-window rows stored: metrics, ledger and the (server-side enriched) team. */
  readonly windows: readonly GpuWindowRow[];
  /** Alerts published for this batch; resolve messages are not counted. */
  readonly alerts: readonly Alert[];
  /** Teams with their own `Team` value (see {@link teamDimensionValue}). */
  readonly metricTeams: ReadonlySet<string>;
  /** When the batch arrived (the server's clock). */
  readonly now: Date;
}

/** Profiling and PCIe metrics sent per GPU: the contract field, the metric, and the factor to its unit. */
const PER_GPU_METRICS: readonly {
  readonly field: keyof GpuMetrics;
  readonly name: MetricName;
  readonly unit: MetricUnitName;
  /** Ratio 0..1 → Percent 0..100, or 1. */
  readonly factor: number;
}[] = [
  { field: 'sm_active', name: METRIC_NAMES.smActive, unit: METRIC_UNITS.percent, factor: 100 },
  { field: 'sm_occupancy', name: METRIC_NAMES.smOccupancy, unit: METRIC_UNITS.percent, factor: 100 },
  { field: 'tensor_active', name: METRIC_NAMES.tensorActive, unit: METRIC_UNITS.percent, factor: 100 },
  { field: 'dram_active', name: METRIC_NAMES.dramActive, unit: METRIC_UNITS.percent, factor: 100 },
  {
    field: 'pcie_rx_bytes_per_s',
    name: METRIC_NAMES.pcieRxBytesPerSecond,
    unit: METRIC_UNITS.bytesPerSecond,
    factor: 1,
  },
];

/**
 * The ingest metrics of one accepted batch (docs/design.md §13), as EMF groups:
 *
 * 1. no dimensions: `Batches` 1, `FlushWindows`, `XidEvents` (0 included, so a sum is a count),
 *    `WastedUsd` (Σ ledger `wasted_usd`), `AgentLag` (arrival − newest window end, s, ≥ 0); and one
 *    value per GPU for `SmActive`, `SmOccupancy`, `TensorActive`, `DramActive` (Percent),
 *    `PcieRxBytesPerSecond` and `Efficiency` (ledger, Percent): the GPU's time-weighted mean over
 *    its flush windows. A metric no window measured is left out, never sent as 0;
 * 2. `Team`: `WastedUsd` again, under the host's team as {@link teamDimensionValue} bounds it (the
 *    dashboard's wasted USD/h by team);
 * 3. `Severity`, one group per severity: `Alerts`, the firing alerts published (the dashboard's
 *    alerts by severity; the rule of each alert is in its message and the state table).
 *
 * Each dimension set is a custom metric series billed by the month, so only the sets the stack's
 * dashboard and alarms read are sent: `Team` on `SmActive` and `Rule` on `Alerts` were not read
 * and made 12 of the default deployment's 37 series.
 *
 * Pure: the adapter only serialises what this returns.
 *
 * @param input - the batch, its stored GPU rows, the alerts sent, the metric teams and `now`
 * @returns the groups, the dimensionless one first; groups with no metric are left out
 * @example
 * acceptedBatchMetrics({ batch, windows: rows.gpu, alerts: [], metricTeams: new Set(['ml']), now });
 */
export function acceptedBatchMetrics(input: AcceptedBatchInput): readonly MetricGroup[] {
  const { batch, windows } = input;
  const perGpu = perGpuMeans(windows);
  const wastedUsd = windows.reduce((sum, w) => sum + w.ledger.wasted_usd, 0);
  const xid = (batch.events ?? []).filter((e) => e.kind === 'xid').length;
  const newestEndMs = Math.max(...batch.windows.map((w) => epochMs(w.end)));
  const fleet: MetricDatum[] = [
    { name: METRIC_NAMES.batches, unit: METRIC_UNITS.count, values: [1] },
    { name: METRIC_NAMES.flushWindows, unit: METRIC_UNITS.count, values: [windows.length] },
    { name: METRIC_NAMES.xidEvents, unit: METRIC_UNITS.count, values: [xid] },
    { name: METRIC_NAMES.wastedUsd, unit: METRIC_UNITS.none, values: [wastedUsd] },
  ];
  if (Number.isFinite(newestEndMs)) {
    const lagS = Math.max(0, (input.now.getTime() - newestEndMs) / MS_PER_SECOND);
    fleet.push({ name: METRIC_NAMES.agentLagS, unit: METRIC_UNITS.seconds, values: [lagS] });
  }
  for (const m of PER_GPU_METRICS) pushIfAny(fleet, m.name, m.unit, perGpu.values(m.field, m.factor));
  pushIfAny(fleet, METRIC_NAMES.efficiency, METRIC_UNITS.percent, perGpu.efficiency());

  const groups: MetricGroup[] = [{ dimensions: {}, metrics: fleet }];
  if (windows.length > 0) {
    groups.push({
      dimensions: { [METRIC_DIMENSIONS.team]: teamDimensionValue(windows[0]?.team, input.metricTeams) },
      metrics: [{ name: METRIC_NAMES.wastedUsd, unit: METRIC_UNITS.none, values: [wastedUsd] }],
    });
  }
  const alerts = new Map<string, number>();
  for (const a of input.alerts) {
    if ((a.status ?? 'firing') !== 'firing') continue;
    alerts.set(a.finding.severity, (alerts.get(a.finding.severity) ?? 0) + 1);
  }
  for (const [severity, count] of alerts) {
    groups.push({
      dimensions: { [METRIC_DIMENSIONS.severity]: severity },
      metrics: [{ name: METRIC_NAMES.alerts, unit: METRIC_UNITS.count, values: [count] }],
    });
  }
  return groups;
}

/**
 * The ingest metric of a batch answered with anything but 202: `RejectedBatches` 1 under
 * `StatusClass` `4xx` or `5xx`.
 *
 * @param statusCode - the HTTP status answered, 400..599
 * @returns one group
 */
export function rejectedBatchMetrics(statusCode: number): readonly MetricGroup[] {
  return [
    {
      dimensions: { [METRIC_DIMENSIONS.statusClass]: statusCode >= 500 ? '5xx' : '4xx' },
      metrics: [{ name: METRIC_NAMES.rejectedBatches, unit: METRIC_UNITS.count, values: [1] }],
    },
  ];
}

/**
 * The `Team` dimension value of a host's team tag, bounded so a fleet with many (or typo'd) team
 * tags cannot mint unbounded custom metrics: a team on the deployment's list keeps its name,
 * every other team is {@link OTHER_TEAM}, no tag is {@link UNTAGGED_TEAM}. At most
 * {@link MAX_METRIC_TEAMS} + 2 values, whatever the agents send. Per-team detail for every team
 * stays in the store (reports `--by team`).
 *
 * @param team - the host's `team` tag (after server-side enrichment), if any
 * @param metricTeams - the deployment's teams (`METRICS_TEAMS`)
 * @returns the dimension value
 */
export function teamDimensionValue(team: string | undefined, metricTeams: ReadonlySet<string>): string {
  if (team === undefined || team === '') return UNTAGGED_TEAM;
  return metricTeams.has(team) ? team : OTHER_TEAM;
}

/** A team name that may be a `Team` dimension value: 1–64 of letters, digits, `_ . - : / @ +`. */
const TEAM_NAME = /^[A-Za-z0-9_.\-:/@+]{1,64}$/;

/**
 * Parses the deployment's metric teams (`METRICS_TEAMS`, comma-separated; blanks and spaces around
 * names ignored).
 *
 * @param value - the variable's value; undefined or empty: no team has its own value
 * @returns the set of team names
 * @throws {MetricsTeamsError} when there are more than {@link MAX_METRIC_TEAMS} teams, a name is not
 *   1–64 of `[A-Za-z0-9_.\-:/@+]`, or a name is one of the reserved values `other`/`untagged`
 */
export function parseMetricsTeams(value: string | undefined): ReadonlySet<string> {
  const names = (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  if (names.length > MAX_METRIC_TEAMS) {
    throw new MetricsTeamsError(
      value,
      `Expected \`METRICS_TEAMS\` to list at most ${MAX_METRIC_TEAMS} teams, got ${names.length}; list the teams worth their own CloudWatch series (the others are counted as \`${OTHER_TEAM}\`)`,
    );
  }
  for (const name of names) {
    if (!TEAM_NAME.test(name) || name === OTHER_TEAM || name === UNTAGGED_TEAM) {
      throw new MetricsTeamsError(
        value,
        `Expected every \`METRICS_TEAMS\` entry to be 1–64 of [A-Za-z0-9_.-:/@+] and not \`${OTHER_TEAM}\` or \`${UNTAGGED_TEAM}\`, got \`${name}\``,
      );
    }
  }
  return new Set(names);
}

function pushIfAny(into: MetricDatum[], name: MetricName, unit: MetricUnitName, values: number[]): void {
  if (values.length > 0) into.push({ name, unit, values });
}

/** Per-GPU time-weighted means of the batch's flush windows (a batch holds ≤ 64 GPUs: ≤ 64 values). */
function perGpuMeans(windows: readonly GpuWindowRow[]) {
  const byGpu = new Map<number, GpuWindowRow[]>();
  for (const w of windows) {
    const list = byGpu.get(w.gpu_index);
    if (list === undefined) byGpu.set(w.gpu_index, [w]);
    else list.push(w);
  }
  const mean = (pick: (w: GpuWindowRow) => number | undefined, factor: number): number[] => {
    const out: number[] = [];
    for (const rows of byGpu.values()) {
      let weighted = 0;
      let seconds = 0;
      for (const w of rows) {
        const v = pick(w);
        if (v === undefined) continue;
        weighted += v * w.ledger.window_s;
        seconds += w.ledger.window_s;
      }
      if (seconds > 0) out.push((weighted / seconds) * factor);
    }
    return out;
  };
  return {
    values: (field: keyof GpuMetrics, factor: number) =>
      mean((w) => {
        const v = w.metrics[field];
        return typeof v === 'number' ? v : undefined;
      }, factor),
    efficiency: () => mean((w) => w.ledger.efficiency, 100),
  };
}
