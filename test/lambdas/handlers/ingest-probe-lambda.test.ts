import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
} from '@aws-sdk/client-auto-scaling';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { GetInstanceProfileCommand, IAMClient } from '@aws-sdk/client-iam';
import { SNSClient } from '@aws-sdk/client-sns';
import { TimestreamWriteClient } from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROBE_HEADER } from '../../../lambdas/contract';
import { handlerFromEnvironment } from '../../../lambdas/handlers/ingest';
import {
  autoScalingGroupAnswer,
  describeInstancesAnswer,
  instanceProfileAnswer,
} from '../adapters/aws-answers';
import { expectValidAwsInputs } from '../adapters/aws-model';
import { ago, validBatch } from '../contract/batches';
import { batchEvent, INSTANCE_CALLER, INSTANCE_ID } from './proxy-event';

const ENV = {
  STORE: 'timestream',
  TIMESTREAM_DATABASE: 'gpu_sentinel',
  TIMESTREAM_GPU_TABLE: 'gpu_windows',
  TIMESTREAM_EFA_TABLE: 'efa_windows',
  TIMESTREAM_EVENTS_TABLE: 'events',
  TOPIC_CRITICAL_ARN: 'arn:aws:sns:us-east-1:123456789012:critical',
  TOPIC_WARNING_ARN: 'arn:aws:sns:us-east-1:123456789012:warning',
  TOPIC_INFO_ARN: 'arn:aws:sns:us-east-1:123456789012:info',
  STATE_TABLE: 'gpu-sentinel-state',
  REMEDIATION_MODE: 'replace',
  AGENT_ROLE_NAMES: 'GpuNodeRole',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_METRICS_DISABLED: 'true',
  AWS_REGION: 'us-east-1',
};

/** The signed probe's event: the agent's gzip POST with the probe header, through the API Gateway model. */
function probe(body: unknown, caller = INSTANCE_CALLER) {
  return batchEvent(body, {
    caller,
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', [PROBE_HEADER]: '1' },
  });
}

describe('signed probe on the ingest Lambda wired from the environment (real SDK clients, mocked AWS)', () => {
  const timestream = mockClient(TimestreamWriteClient);
  const sns = mockClient(SNSClient);
  const dynamo = mockClient(DynamoDBClient);
  const autoscaling = mockClient(AutoScalingClient);
  const ec2 = mockClient(EC2Client);
  const iam = mockClient(IAMClient);
  const saved = { ...process.env };

  beforeEach(() => {
    Object.assign(process.env, ENV, { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' });
    for (const m of [timestream, sns, dynamo, autoscaling, ec2, iam]) m.reset();
    autoscaling.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [{ InstanceId: INSTANCE_ID, AutoScalingGroupName: 'gpu-train-p5' } as never],
    });
    autoscaling.on(DescribeAutoScalingGroupsCommand).resolves(autoScalingGroupAnswer('gpu-train-p5', 40));
    iam.on(GetInstanceProfileCommand).resolves(instanceProfileAnswer('GpuNodeRole'));
  });

  afterEach(() => {
    process.env = { ...saved };
    expectValidAwsInputs(ec2, 'ec2');
    expectValidAwsInputs(autoscaling, 'autoscaling');
    expectValidAwsInputs(iam, 'iam');
  });

  it('asks EC2 about the caller, answers 200 with every check, and calls no store, table or topic even for an Xid 79', async () => {
    // Prepare
    ec2
      .on(DescribeInstancesCommand)
      .resolves(
        describeInstancesAnswer({ instanceId: INSTANCE_ID, state: 'running', instanceType: 'p5.48xlarge' }),
      );
    const now = new Date();
    const batch = validBatch(
      { events: [{ at: ago(5, now), kind: 'xid', xid: 79, source: 'kmsg', pci_bus_id: '0000:53:00.0' }] },
      8,
      now,
    );
    // Act
    const res = await handlerFromEnvironment(process.env)(probe(batch));
    // Assess
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({
      probe: true,
      caller_arn: INSTANCE_CALLER,
      verified: ['iam_authorization', 'instance_session', 'ec2_instance', 'contract'],
      stored: 0,
    });
    expect(ec2.commandCalls(DescribeInstancesCommand)).toHaveLength(1);
    expect(timestream.calls()).toEqual([]);
    expect(dynamo.calls()).toEqual([]);
    expect(sns.calls()).toEqual([]);
    expect(autoscaling.calls().map((c) => c.args[0].constructor.name)).not.toContain(
      'SetInstanceHealthCommand',
    );
  });

  it('gives a probe from a stopped instance the 403 a batch gets, and writes nothing', async () => {
    // Prepare
    ec2
      .on(DescribeInstancesCommand)
      .resolves(
        describeInstancesAnswer({ instanceId: INSTANCE_ID, state: 'stopped', instanceType: 'p5.48xlarge' }),
      );
    const batch = validBatch({ events: [] }, 8, new Date());
    // Act
    const asProbe = await handlerFromEnvironment(process.env)(probe(batch));
    const asBatch = await handlerFromEnvironment(process.env)(batchEvent(batch));
    // Assess
    expect(asProbe.statusCode).toBe(403);
    expect(asProbe.body).toBe(asBatch.body);
    expect(JSON.parse(asProbe.body).error).toMatch(/is stopped, expected running/);
    expect(timestream.calls()).toEqual([]);
  });
});
