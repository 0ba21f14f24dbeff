import { Duration } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import { METRIC_DIMENSIONS, METRIC_NAMES, METRICS_NAMESPACE } from '../lambdas/domain/cloudwatch-metrics';
import { SEVERITIES } from '../lambdas/domain/types';
import { MONITORING_PERIOD_S } from './constants';
import { fleetMetric, type MonitoredFunction } from './monitoring-alarms';

/** Props of {@link MonitoringDashboard}. */
export interface MonitoringDashboardProps {
  /** The ingest REST API (requests, 4xx, 5xx, latency; dimension `ApiName`). */
  readonly api: apigw.RestApi;
  /** Functions whose invocations, errors, throttles and duration are graphed (ingest, report, …). */
  readonly functions: readonly MonitoredFunction[];
  /**
   * Firehose delivery streams of the Athena store (`DeliveryToS3.Success`, `DeliveryToS3.DataFreshness`).
   * @default - none (the Timestream store has no Firehose)
   */
  readonly deliveryStreamNames?: readonly string[];
  /**
   * Alarms shown in the dashboard's alarm status widget. The array is read at synth, so alarms
   * pushed to it later (`MonitoringAlarms.addFunction`) are shown too.
   * @default - none
   */
  readonly alarms?: readonly cloudwatch.IAlarm[];
  /**
   * The dashboard's name.
   * @default - CloudFormation generates one
   */
  readonly dashboardName?: string;
}

/** Width of the dashboard grid, columns (CloudWatch dashboards are 24 wide). */
const FULL_WIDTH = 24;
/** Height of a graph row, grid units. */
const GRAPH_HEIGHT = 6;

/** Period of every graph and number: the monitoring period (5 min). */
const PERIOD = Duration.seconds(MONITORING_PERIOD_S);
/** Periods per hour: a sum per period × this = per hour. */
const HOURLY_PER_PERIOD = 3600 / MONITORING_PERIOD_S;

/** A `GpuSentinel` fleet metric with a legend label. */
function fleet(name: string, statistic: string, label: string): cloudwatch.Metric {
  return fleetMetric(name, statistic, PERIOD).with({ label });
}

/** A CloudWatch `SEARCH` over the `GpuSentinel` series of metric `name` by `dimensions`. */
function search(dimensions: readonly string[], name: string, statistic: string): string {
  return `SEARCH('{${METRICS_NAMESPACE},${dimensions.join(',')}} MetricName="${name}"', '${statistic}', ${MONITORING_PERIOD_S})`;
}

/** A graph of the monitoring period and the row height. */
function graph(widget: cloudwatch.GraphWidgetProps): cloudwatch.GraphWidget {
  return new cloudwatch.GraphWidget({ period: PERIOD, height: GRAPH_HEIGHT, ...widget });
}

/**
 * The gpu-sentinel CloudWatch dashboard (docs/design.md §13), one row per failure mode, each under
 * a text header saying what to look for:
 *
 * 1. **Health**: XID events, alerts by severity (summed over rules with a search expression),
 *    silent agents and stragglers (fleet evaluator), and the alarms' states;
 * 2. **Throughput and utilization**: SM active vs SM occupancy and tensor active (Average = mean per
 *    GPU), efficiency, batches and flush windows;
 * 3. **Bottlenecks**: PCIe RX (left axis, bytes/s) vs DRAM active (right axis, %): PCIe busy with DRAM
 *    idle is an input-bound job;
 * 4. **Waste dollars**: the numbers now (single values), wasted USD/h of the fleet and by team (ingest's `WastedUsd` sums × 3600 /
 *    period), fleet waste rate and unmonitored USD/h (fleet evaluator);
 * 5. **Pipeline**: API Gateway requests/4xx/5xx and latency, refused batches by status class, agent
 *    lag, each Lambda's errors, throttles and duration, Firehose delivery.
 *
 * All graphs use a 5-minute period.
 *
 * @example
 * new MonitoringDashboard(this, 'MonitoringDashboard', { api: api.api, functions, alarms: alarms.alarms });
 */
export class MonitoringDashboard extends Construct {
  /** The dashboard. */
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: MonitoringDashboardProps) {
    super(scope, id);
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      ...(props.dashboardName === undefined ? {} : { dashboardName: props.dashboardName }),
      defaultInterval: Duration.hours(3),
    });
    this.addHealthRow(props.alarms);
    this.addThroughputRow();
    this.addBottlenecksRow();
    this.addWasteRow();
    this.addPipelineRow(props);
  }

  /** 1. Health: XID events, alerts by severity, silent agents and stragglers, the alarms' states. */
  private addHealthRow(alarms: readonly cloudwatch.IAlarm[] | undefined): void {
    this.dashboard.addWidgets(
      header(
        'Health',
        'Broken hardware and unwatched GPUs: XID events and critical alerts page on-call; a silent agent is a dead agent, a hung host or a GPU fleet nobody watches.',
      ),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'XID events',
        left: [fleet(METRIC_NAMES.xidEvents, cloudwatch.Stats.SUM, 'XID events')],
        width: 6,
      }),
      graph({
        title: 'Alerts by severity',
        left: SEVERITIES.map(
          (severity) =>
            new cloudwatch.MathExpression({
              expression: `SUM(SEARCH('{${METRICS_NAMESPACE},${METRIC_DIMENSIONS.severity}} MetricName="${METRIC_NAMES.alerts}" ${METRIC_DIMENSIONS.severity}="${severity}"', 'Sum', ${MONITORING_PERIOD_S}))`,
              label: severity,
              period: PERIOD,
            }),
        ),
        stacked: true,
        width: 6,
      }),
      graph({
        title: 'Silent agents and stragglers',
        left: [
          fleet(METRIC_NAMES.silentAgents, cloudwatch.Stats.MAXIMUM, 'silent agents'),
          fleet(METRIC_NAMES.stragglers, cloudwatch.Stats.MAXIMUM, 'straggler nodes'),
        ],
        width: 6,
      }),
      new cloudwatch.AlarmStatusWidget({
        title: 'Alarms',
        // The live array, not a copy: the body is rendered at synth, after every addFunction.
        alarms: (alarms ?? []) as cloudwatch.IAlarm[],
        width: 6,
        height: GRAPH_HEIGHT,
      }),
    );
  }

  /** 2. Throughput and utilization: SM active vs occupancy, tensor active and efficiency, batches. */
  private addThroughputRow(): void {
    this.dashboard.addWidgets(
      header(
        'Throughput and utilization',
        'SM active is the share of time the SMs had work; occupancy how full they were; tensor active whether the tensor cores were used. GPU util is not here: it reads 100 % while one tiny kernel runs.',
      ),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'SM active vs SM occupancy (mean per GPU)',
        left: [
          fleet(METRIC_NAMES.smActive, cloudwatch.Stats.AVERAGE, 'SM active %'),
          fleet(METRIC_NAMES.smOccupancy, cloudwatch.Stats.AVERAGE, 'SM occupancy %'),
        ],
        leftYAxis: { min: 0, max: 100, label: '%', showUnits: false },
        width: 8,
      }),
      graph({
        title: 'Tensor active and efficiency (mean per GPU)',
        left: [
          fleet(METRIC_NAMES.tensorActive, cloudwatch.Stats.AVERAGE, 'tensor active %'),
          fleet(METRIC_NAMES.efficiency, cloudwatch.Stats.AVERAGE, 'efficiency %'),
        ],
        leftYAxis: { min: 0, max: 100, label: '%', showUnits: false },
        width: 8,
      }),
      graph({
        title: 'Batches and flush windows ingested',
        left: [
          fleet(METRIC_NAMES.batches, cloudwatch.Stats.SUM, 'batches'),
          fleet(METRIC_NAMES.flushWindows, cloudwatch.Stats.SUM, 'flush windows'),
        ],
        width: 8,
      }),
    );
  }

  /** 3. Bottlenecks: PCIe RX vs DRAM active. */
  private addBottlenecksRow(): void {
    this.dashboard.addWidgets(
      header(
        'Bottlenecks',
        'PCIe RX high with DRAM active low: the job waits on input (data loading); DRAM active ≥ 80 %: memory bound.',
      ),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'PCIe RX vs DRAM active (mean per GPU)',
        left: [fleet(METRIC_NAMES.pcieRxBytesPerSecond, cloudwatch.Stats.AVERAGE, 'PCIe RX bytes/s')],
        right: [fleet(METRIC_NAMES.dramActive, cloudwatch.Stats.AVERAGE, 'DRAM active %')],
        rightYAxis: { min: 0, max: 100, label: '%', showUnits: false },
        width: FULL_WIDTH,
      }),
    );
  }

  /** 4. Waste dollars: the numbers now, wasted USD/h of the fleet and by team, waste rate, unmonitored USD/h. */
  private addWasteRow(): void {
    this.dashboard.addWidgets(
      header(
        'Waste dollars',
        'Wasted USD/h from ingest (the ledger of every window, summed) and from the fleet evaluator; unmonitored USD/h is the price of running GPU instances that send nothing.',
      ),
    );
    const wasted = fleet(METRIC_NAMES.wastedUsd, cloudwatch.Stats.SUM, 'wasted USD');
    const wastedPerHour = new cloudwatch.MathExpression({
      expression: `3600 * wasted / PERIOD(wasted)`,
      usingMetrics: { wasted },
      label: 'wasted USD/h (ingest)',
      period: PERIOD,
    });
    this.dashboard.addWidgets(
      new cloudwatch.SingleValueWidget({
        title: 'Now: wasted USD/h, fleet waste rate, unmonitored USD/h, silent agents',
        metrics: [
          wastedPerHour,
          fleet(METRIC_NAMES.fleetWasteRate, cloudwatch.Stats.AVERAGE, 'fleet waste rate %'),
          fleet(METRIC_NAMES.unmonitoredUsdPerHour, cloudwatch.Stats.AVERAGE, 'unmonitored USD/h'),
          fleet(METRIC_NAMES.silentAgents, cloudwatch.Stats.MAXIMUM, 'silent agents'),
        ],
        period: PERIOD,
        width: FULL_WIDTH,
        height: 3,
      }),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'Wasted USD/h, fleet',
        left: [
          new cloudwatch.MathExpression({
            expression: `3600 * wasted / PERIOD(wasted)`,
            usingMetrics: { wasted },
            label: 'wasted USD/h (ingest)',
            period: PERIOD,
          }),
          fleet(
            METRIC_NAMES.fleetWastedUsdPerHour,
            cloudwatch.Stats.AVERAGE,
            'wasted USD/h (fleet evaluator)',
          ),
        ],
        width: 8,
      }),
      graph({
        title: 'Wasted USD/h by team',
        left: [
          new cloudwatch.MathExpression({
            expression: `${HOURLY_PER_PERIOD} * ${search([METRIC_DIMENSIONS.team], METRIC_NAMES.wastedUsd, 'Sum')}`,
            // A dynamic label: one line per team, named after it.
            label: dimensionLabel(METRIC_DIMENSIONS.team),
            period: PERIOD,
          }),
        ],
        stacked: true,
        width: 8,
      }),
      graph({
        title: 'Fleet waste rate and unmonitored USD/h',
        left: [fleet(METRIC_NAMES.fleetWasteRate, cloudwatch.Stats.AVERAGE, 'fleet waste rate %')],
        right: [fleet(METRIC_NAMES.unmonitoredUsdPerHour, cloudwatch.Stats.AVERAGE, 'unmonitored USD/h')],
        leftYAxis: { min: 0, max: 100, label: '%', showUnits: false },
        width: 8,
      }),
    );
  }

  /** 5. Pipeline: API answers and latency, refused batches, agent lag, the Lambdas, Firehose delivery. */
  private addPipelineRow(props: MonitoringDashboardProps): void {
    this.dashboard.addWidgets(
      header(
        'Pipeline',
        'The AWS side of gpu-sentinel: API answers, refused batches, agent lag, the Lambdas and the store delivery. 5xx and throttles mean agents are spooling.',
      ),
    );
    this.dashboard.addWidgets(
      graph({
        title: 'API requests, 4xx, 5xx',
        left: [
          props.api.metricCount({ period: PERIOD, label: 'requests' }),
          props.api.metricClientError({ period: PERIOD, statistic: cloudwatch.Stats.SUM, label: '4xx' }),
          props.api.metricServerError({ period: PERIOD, statistic: cloudwatch.Stats.SUM, label: '5xx' }),
        ],
        width: 6,
      }),
      graph({
        title: 'API latency',
        left: [
          props.api.metricLatency({
            period: PERIOD,
            statistic: cloudwatch.Stats.percentile(50),
            label: 'p50',
          }),
          props.api.metricLatency({
            period: PERIOD,
            statistic: cloudwatch.Stats.percentile(99),
            label: 'p99',
          }),
        ],
        width: 6,
      }),
      graph({
        title: 'Refused batches by status class',
        left: [
          new cloudwatch.MathExpression({
            expression: search([METRIC_DIMENSIONS.statusClass], METRIC_NAMES.rejectedBatches, 'Sum'),
            label: dimensionLabel(METRIC_DIMENSIONS.statusClass),
            period: PERIOD,
          }),
        ],
        width: 6,
      }),
      graph({
        title: 'Agent lag (window end → arrival)',
        left: [
          fleet(METRIC_NAMES.agentLagS, cloudwatch.Stats.percentile(50), 'p50 s'),
          fleet(METRIC_NAMES.agentLagS, cloudwatch.Stats.MAXIMUM, 'max s'),
        ],
        width: 6,
      }),
    );
    const streams = props.deliveryStreamNames ?? [];
    this.dashboard.addWidgets(
      graph({
        title: 'Lambda errors and throttles',
        left: props.functions.flatMap((f) => [
          f.function.metricErrors({
            period: PERIOD,
            statistic: cloudwatch.Stats.SUM,
            label: `${f.name} errors`,
          }),
          f.function.metricThrottles({
            period: PERIOD,
            statistic: cloudwatch.Stats.SUM,
            label: `${f.name} throttles`,
          }),
        ]),
        width: streams.length > 0 ? 8 : 12,
      }),
      graph({
        title: 'Lambda duration p99',
        left: props.functions.map((f) =>
          f.function.metricDuration({
            period: PERIOD,
            statistic: cloudwatch.Stats.percentile(99),
            label: f.name,
          }),
        ),
        width: streams.length > 0 ? 8 : 12,
      }),
      ...(streams.length === 0
        ? []
        : [
            graph({
              title: 'Firehose delivery to S3',
              left: streams.map((name) =>
                firehoseMetric('DeliveryToS3.Success', 'delivered', name, cloudwatch.Stats.AVERAGE, PERIOD),
              ),
              right: streams.map((name) =>
                firehoseMetric('DeliveryToS3.DataFreshness', 'age s', name, cloudwatch.Stats.MAXIMUM, PERIOD),
              ),
              leftYAxis: { min: 0, max: 1, label: 'success ratio', showUnits: false },
              rightYAxis: { min: 0, label: 'oldest record s', showUnits: false },
              width: 8,
            }),
          ]),
    );
  }
}

/** A CloudWatch dynamic label: the value of dimension `name` of each line (one line per value of a search). */
function dimensionLabel(name: string): string {
  return `\${PROP('Dim.${name}')}`;
}

/** A full-width Markdown header: the failure mode and what to look for. */
function header(title: string, body: string): cloudwatch.TextWidget {
  return new cloudwatch.TextWidget({ markdown: `## ${title}\n${body}`, width: FULL_WIDTH, height: 2 });
}

/** An `AWS/Firehose` metric of one delivery stream. */
function firehoseMetric(
  name: string,
  label: string,
  stream: string,
  statistic: string,
  period: Duration,
): cloudwatch.Metric {
  return new cloudwatch.Metric({
    namespace: 'AWS/Firehose',
    metricName: name,
    dimensionsMap: { DeliveryStreamName: stream },
    statistic,
    period,
    // The stream's name is a token at synth time: CloudWatch fills it in.
    label: `${dimensionLabel('DeliveryStreamName')} ${label}`,
  });
}
