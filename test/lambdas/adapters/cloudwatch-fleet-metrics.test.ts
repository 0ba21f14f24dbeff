import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CloudWatchFleetMetrics } from '../../../lambdas/adapters/cloudwatch-fleet-metrics';
import type { FleetMetricDatum } from '../../../lambdas/domain';
import { METRIC_NAMES } from '../../../lambdas/domain/cloudwatch-metrics';
import { expectValidAwsInputs } from './aws-model';

const AT = new Date('2026-03-10T12:00:00.000Z');

describe('CloudWatchFleetMetrics', () => {
  const cwMock = mockClient(CloudWatchClient);
  const client = new CloudWatchClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'A', secretAccessKey: 's' },
  });

  beforeEach(() => {
    cwMock.reset();
    cwMock.on(PutMetricDataCommand).resolves({});
  });

  afterEach(() => {
    expectValidAwsInputs(cwMock, 'cloudwatch');
  });

  it('puts each datum in the GpuSentinel namespace with its unit, dimensions and one timestamp', async () => {
    // Prepare
    const data: FleetMetricDatum[] = [
      { name: METRIC_NAMES.silentAgents, unit: 'Count', value: 2 },
      { name: METRIC_NAMES.fleetWasteRate, unit: 'Percent', value: 62.5, dimensions: { Team: 'vision' } },
    ];
    // Act
    await new CloudWatchFleetMetrics(client).publish(data, AT);
    // Assess
    expect(cwMock.commandCalls(PutMetricDataCommand).map((c) => c.args[0].input)).toEqual([
      {
        Namespace: 'GpuSentinel',
        MetricData: [
          { MetricName: 'SilentAgents', Unit: 'Count', Value: 2, Timestamp: AT },
          {
            MetricName: 'FleetWasteRate',
            Unit: 'Percent',
            Value: 62.5,
            Timestamp: AT,
            Dimensions: [{ Name: 'Team', Value: 'vision' }],
          },
        ],
      },
    ]);
  });

  it('splits more than 1,000 data into requests of at most 1,000', async () => {
    // Prepare
    const data: FleetMetricDatum[] = Array.from({ length: 1001 }, (_, i) => ({
      name: METRIC_NAMES.fleetWastedUsdPerHour,
      unit: 'None',
      value: i,
      dimensions: { Team: `team-${i}` },
    }));
    // Act
    await new CloudWatchFleetMetrics(client).publish(data, AT);
    // Assess
    const sizes = cwMock.commandCalls(PutMetricDataCommand).map((c) => c.args[0].input.MetricData?.length);
    expect(sizes).toEqual([1000, 1]);
  });

  it('lets a CloudWatch failure through for the evaluator to log', async () => {
    // Prepare
    cwMock.on(PutMetricDataCommand).rejects(new Error('Throttling'));
    // Act
    const put = new CloudWatchFleetMetrics(client).publish(
      [{ name: METRIC_NAMES.stragglers, unit: 'Count', value: 0 }],
      AT,
    );
    // Assess
    await expect(put).rejects.toThrow('Throttling');
  });
});
