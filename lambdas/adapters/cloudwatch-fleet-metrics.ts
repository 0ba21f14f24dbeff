import { type CloudWatchClient, type MetricDatum, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { METRICS_NAMESPACE } from '../domain/cloudwatch-metrics';
import type { FleetMetricDatum } from '../domain/fleet/fleet-metrics';
import type { FleetMetricSink } from '../domain/fleet/fleet-ports';
import { PUT_METRIC_DATA_MAX_DATA } from './constants';

/**
 * The fleet metrics to CloudWatch (`PutMetricData`, namespace `GpuSentinel`, names and dimensions from
 * `cloudwatch-metrics.ts`), at most 1,000 data per request, one timestamp for all. IAM:
 * `cloudwatch:PutMetricData` on `*`, conditioned on `cloudwatch:namespace = GpuSentinel`.
 *
 * @example
 * await new CloudWatchFleetMetrics(new CloudWatchClient({})).publish(fleetMetrics(input, findings, t), now);
 */
export class CloudWatchFleetMetrics implements FleetMetricSink {
  readonly #client: CloudWatchClient;

  /** @param client - the CloudWatch client of the stack's region */
  constructor(client: CloudWatchClient) {
    this.#client = client;
  }

  /**
   * @param data - the values
   * @param at - their timestamp
   * @throws the SDK's error when CloudWatch refuses or cannot be reached
   */
  async publish(data: readonly FleetMetricDatum[], at: Date): Promise<void> {
    const metricData: MetricDatum[] = data.map((d) => ({
      MetricName: d.name,
      Unit: d.unit,
      Value: d.value,
      Timestamp: at,
      ...(d.dimensions === undefined
        ? {}
        : { Dimensions: Object.entries(d.dimensions).map(([Name, Value]) => ({ Name, Value })) }),
    }));
    for (let i = 0; i < metricData.length; i += PUT_METRIC_DATA_MAX_DATA) {
      await this.#client.send(
        new PutMetricDataCommand({
          Namespace: METRICS_NAMESPACE,
          MetricData: metricData.slice(i, i + PUT_METRIC_DATA_MAX_DATA),
        }),
      );
    }
  }
}
