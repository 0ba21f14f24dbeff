import { Metrics } from '@aws-lambda-powertools/metrics';
import type { MetricGroup } from '../domain/batch-metrics';
import { METRICS_NAMESPACE } from '../domain/cloudwatch-metrics';
import type { MetricsSink } from '../domain/ports';

/** Where the sink reports its own trouble (the handlers' `Log` has this shape). */
export interface MetricsSinkLog {
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
}

/** Options of {@link EmfMetricsSink}. */
export interface EmfMetricsSinkOptions {
  /** Where emit failures and Powertools' own warnings go. */
  readonly log: MetricsSinkLog;
  /**
   * The CloudWatch namespace. @default `POWERTOOLS_METRICS_NAMESPACE`, else `METRICS_NAMESPACE`
   * (`GpuSentinel`)
   */
  readonly namespace?: string;
  /**
   * The Powertools Metrics instance to write with (tests inject one). Its default dimensions are
   * cleared: Powertools adds `service` to every metric, and the dashboard and alarms read the
   * metrics by name and the dimensions `acceptedBatchMetrics` chose, the same as the fleet
   * evaluator's `PutMetricData`.
   * @default new Metrics({ namespace })
   */
  readonly metrics?: Metrics;
}

/**
 * Emits ingest metrics in CloudWatch embedded metric format (EMF) with Powertools Metrics: one JSON
 * line on stdout per {@link MetricGroup} (`_aws.CloudWatchMetrics[0]` with the group's one
 * dimension set, `[]` for the dimensionless series), which the Lambda log group turns into
 * metrics; no API call and no IAM permission (docs/aws.md §7). `POWERTOOLS_METRICS_DISABLED=true`
 * silences it.
 *
 * Never throws: a value that is not finite is left out (EMF would write it as `null`, which
 * CloudWatch refuses) and counted in one warning; any other failure is logged once per emit and
 * the rest of the metrics are dropped, so metrics never fail a batch.
 *
 * @example
 * const sink = new EmfMetricsSink({ log });
 * sink.emit(acceptedBatchMetrics({ batch, windows, alerts, metricTeams, now }), now);
 */
export class EmfMetricsSink implements MetricsSink {
  readonly #metrics: Metrics;
  readonly #log: MetricsSinkLog;

  constructor(options: EmfMetricsSinkOptions) {
    this.#log = options.log;
    this.#metrics =
      options.metrics ??
      new Metrics({
        namespace: options.namespace ?? (process.env.POWERTOOLS_METRICS_NAMESPACE || METRICS_NAMESPACE),
        logger: {
          debug: () => {},
          info: () => {},
          warn: (...content: unknown[]) =>
            options.log.warn('powertools metrics', { detail: content.join(' ') }),
          error: (...content: unknown[]) =>
            options.log.error('powertools metrics', { detail: content.join(' ') }),
        },
      });
    this.#metrics.clearDefaultDimensions();
  }

  /**
   * Writes one EMF line per group, stamped `at`.
   * @param groups - the groups to emit (a group with no metric is skipped)
   * @param at - the timestamp of every line
   */
  emit(groups: readonly MetricGroup[], at: Date): void {
    let dropped = 0;
    try {
      for (const group of groups) {
        const values = group.metrics.flatMap((m) => m.values.filter(Number.isFinite));
        if (values.length === 0) continue;
        this.#metrics.setTimestamp(at);
        this.#metrics.addDimensions({ ...group.dimensions });
        for (const metric of group.metrics) {
          for (const value of metric.values) {
            // EMF would carry NaN/Infinity as null, which CloudWatch refuses: never sent.
            if (Number.isFinite(value)) this.#metrics.addMetric(metric.name, metric.unit, value);
            else dropped += 1;
          }
        }
        this.#metrics.publishStoredMetrics();
      }
      if (dropped > 0) this.#log.warn('metric values not finite; left out', { dropped });
    } catch (err) {
      this.#metrics.clearMetrics();
      this.#metrics.clearDimensions();
      this.#log.error('metrics not emitted; the batch is unaffected', { error: (err as Error).message });
    }
  }
}
