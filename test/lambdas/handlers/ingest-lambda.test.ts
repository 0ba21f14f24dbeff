import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
  SetInstanceHealthCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import {
  FirehoseClient,
  PutRecordBatchCommand,
  type PutRecordBatchCommandInput,
} from '@aws-sdk/client-firehose';
import { GetInstanceProfileCommand, IAMClient } from '@aws-sdk/client-iam';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { TimestreamWriteClient, WriteRecordsCommand } from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Batch } from '../../../lambdas/contract';
import { MetricsTeamsError, RuleThresholdsError } from '../../../lambdas/domain';
import { handlerFromEnvironment, IngestConfigError } from '../../../lambdas/handlers/ingest';
import {
  autoScalingGroupAnswer,
  describeInstancesAnswer,
  instanceProfileAnswer,
} from '../adapters/aws-answers';
import { expectValidAwsInputs } from '../adapters/aws-model';
import { emfLines } from '../adapters/emf-lines';
import { firehoseRowColumns } from '../adapters/firehose-rows';
import { ago, validBatch } from '../contract/batches';
import { batchEvent, INSTANCE_ID } from './proxy-event';

/** What EC2 answers for the test instance: a running p5 with the agent's instance profile. */
function describeInstances(state = 'running', instanceType = 'p5.48xlarge') {
  return describeInstancesAnswer({
    instanceId: INSTANCE_ID,
    state,
    instanceType,
    tags: { team: 'research', 'aws:autoscaling:groupName': 'gpu-train-p5' },
  });
}

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
  PRICE_OVERRIDES: '{"p5.48xlarge": 40}',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_METRICS_NAMESPACE: 'GpuSentinel',
  // EMF lines stay off the test output; the test that reads them turns them on.
  POWERTOOLS_METRICS_DISABLED: 'true',
  METRICS_TEAMS: 'training',
  AWS_REGION: 'us-east-1',
};

/** The ingest function's environment with the Athena store (its three Firehose streams). */
const ATHENA_ENV = {
  STORE: 'athena',
  FIREHOSE_GPU_STREAM: 'gs-gpu',
  FIREHOSE_EFA_STREAM: 'gs-efa',
  FIREHOSE_EVENTS_STREAM: 'gs-events',
  ATHENA_DATABASE: 'gpu_sentinel',
  ATHENA_WORKGROUP: 'gpu_sentinel-GpuSentinel',
};

/** A Firehose client stub that accepts every record (`FailedPutCount: 0`); restore it after the test. */
function acceptingFirehose() {
  const firehose = mockClient(FirehoseClient);
  firehose.on(PutRecordBatchCommand).callsFake((input: PutRecordBatchCommandInput) => ({
    FailedPutCount: 0,
    RequestResponses: (input.Records ?? []).map((_, i) => ({ RecordId: `r${i}` })),
  }));
  return firehose;
}
describe('ingest Lambda wired from the environment (real SDK clients, mocked AWS)', () => {
  const timestream = mockClient(TimestreamWriteClient);
  const sns = mockClient(SNSClient);
  const dynamo = mockClient(DynamoDBClient);
  const autoscaling = mockClient(AutoScalingClient);
  const ec2 = mockClient(EC2Client);
  const iam = mockClient(IAMClient);
  const saved = { ...process.env };

  afterEach(() => {
    process.env = { ...saved };
    expectValidAwsInputs(timestream, 'timestream-write');
    expectValidAwsInputs(sns, 'sns');
    expectValidAwsInputs(dynamo, 'dynamodb');
    expectValidAwsInputs(autoscaling, 'autoscaling');
    expectValidAwsInputs(ec2, 'ec2');
    expectValidAwsInputs(iam, 'iam');
  });

  beforeEach(() => {
    Object.assign(process.env, ENV, { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' });
    timestream
      .reset()
      .on(WriteRecordsCommand)
      .resolves({ RecordsIngested: { Total: 9 } });
    sns.reset().on(PublishCommand).resolves({ MessageId: 'm-1' });
    dynamo.reset();
    dynamo.on(GetItemCommand).resolves({});
    dynamo.on(QueryCommand).resolves({ Items: [] });
    dynamo.on(PutItemCommand).resolves({});
    dynamo.on(UpdateItemCommand).resolves({});
    autoscaling.reset();
    autoscaling.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [
        { InstanceId: 'i-0a5e00000000000a1', AutoScalingGroupName: 'gpu-train-p5' } as never,
      ],
    });
    autoscaling.on(SetInstanceHealthCommand).resolves({});
    autoscaling
      .on(DescribeAutoScalingGroupsCommand)
      .resolves(autoScalingGroupAnswer('gpu-train-p5', 40, { 'cost-center': '42' }));
    ec2.reset();
    ec2.on(DescribeInstancesCommand).resolves(describeInstances());
    iam.reset();
    iam.on(GetInstanceProfileCommand).resolves(instanceProfileAnswer('GpuNodeRole'));
  });

  it('writes Timestream, publishes the critical alert and replaces the instance on Xid 79', async () => {
    // Prepare
    const now = new Date();
    const batch = validBatch(
      { events: [{ at: ago(5, now), kind: 'xid', xid: 79, source: 'kmsg', pci_bus_id: '0000:53:00.0' }] },
      8,
      now,
    );
    const event = batchEvent(batch);
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    // Act
    let res = { statusCode: 0 };
    const emf = await emfLines(async () => {
      res = await handlerFromEnvironment(process.env)(event);
    });
    // Assess
    expect(res.statusCode).toBe(202);
    expect(emf.map((l) => JSON.parse(l))).toMatchObject([
      {
        _aws: { CloudWatchMetrics: [{ Namespace: 'GpuSentinel', Dimensions: [[]] }] },
        Batches: 1,
        XidEvents: 1,
      },
      {
        _aws: { CloudWatchMetrics: [{ Namespace: 'GpuSentinel', Dimensions: [['Team']] }] },
        Team: 'training',
      },
      { Severity: 'critical', Alerts: 1 },
    ]);
    const writes = timestream.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input);
    expect(writes.map((w) => w.TableName).sort()).toEqual(['events', 'gpu_windows']);
    const gpu = writes.find((w) => w.TableName === 'gpu_windows')!;
    expect(gpu.DatabaseName).toBe('gpu_sentinel');
    expect(gpu.Records).toHaveLength(8);
    expect(gpu.Records![0]!.Version).toBe(42);
    const price = gpu.Records![0]!.MeasureValues!.find((m) => m.Name === 'price_usd_per_hour');
    expect(price).toEqual({ Name: 'price_usd_per_hour', Value: '40', Type: 'DOUBLE' });
    const published = sns.commandCalls(PublishCommand).map((c) => c.args[0].input);
    expect(
      published.some((p) => p.TopicArn === ENV.TOPIC_CRITICAL_ARN && /Xid 79/.test(p.Subject ?? '')),
    ).toBe(true);
    expect(autoscaling.commandCalls(SetInstanceHealthCommand)[0]!.args[0].input).toEqual({
      InstanceId: 'i-0a5e00000000000a1',
      HealthStatus: 'Unhealthy',
      ShouldRespectGracePeriod: false,
    });
  });

  it("asks EC2 and Auto Scaling in the instance's region, not the Lambda's, and stores the EC2 team tag", async () => {
    // Prepare: the Lambda runs in us-east-1; the instance reports eu-west-1
    const now = new Date();
    const base = validBatch({ events: [] }, 8, now);
    const batch = {
      ...base,
      host: { ...base.host, region: 'eu-west-1', az: 'eu-west-1a', tags: undefined, asg_name: undefined },
    };
    // Act
    const res = await handlerFromEnvironment(process.env)(batchEvent(batch));
    // Assess
    expect(res.statusCode).toBe(202);
    const describe = ec2.commandCalls(DescribeInstancesCommand)[0]!;
    expect(describe.args[0].input).toEqual({ InstanceIds: [INSTANCE_ID] });
    expect(await (describe.thisValue as EC2Client).config.region()).toBe('eu-west-1');
    const membership = autoscaling.commandCalls(DescribeAutoScalingInstancesCommand)[0]!;
    expect(await (membership.thisValue as AutoScalingClient).config.region()).toBe('eu-west-1');
    expect(autoscaling.commandCalls(DescribeAutoScalingGroupsCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupNames: ['gpu-train-p5'],
    });
    const gpu = timestream.commandCalls(WriteRecordsCommand)[0]!.args[0].input;
    expect(gpu.Records![0]!.Dimensions).toContainEqual({ Name: 'team', Value: 'research' });
  });

  it.each([
    ['a stopped instance', describeInstances('stopped'), /is stopped, expected running/],
    ['a CPU instance', describeInstances('running', 'm7i.large'), /expected a GPU instance type/],
  ])('refuses %s with 403 and stores nothing', async (_name, answer, reason) => {
    // Prepare
    ec2.on(DescribeInstancesCommand).resolves(answer);
    // Act
    const res = await handlerFromEnvironment(process.env)(batchEvent(validBatch({}, 8, new Date())));
    // Assess
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body).error).toMatch(reason);
    expect(timestream.commandCalls(WriteRecordsCommand)).toEqual([]);
  });

  it("refuses with 403 a caller whose role is not the role of the instance's profile", async () => {
    // Prepare
    iam.on(GetInstanceProfileCommand).resolves(instanceProfileAnswer('SomeOtherRole'));
    // Act
    const res = await handlerFromEnvironment(process.env)(batchEvent(validBatch({}, 8, new Date())));
    // Assess
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body).error).toMatch(/carries role SomeOtherRole/);
    expect(iam.commandCalls(GetInstanceProfileCommand)[0]!.args[0].input).toEqual({
      InstanceProfileName: 'GpuNodeProfile',
    });
  });

  it('answers 503 for an instance EC2 does not know yet (just launched), so the agent keeps the batch', async () => {
    // Prepare
    ec2.on(DescribeInstancesCommand).resolves({ Reservations: [] });
    // Act
    const res = await handlerFromEnvironment(process.env)(batchEvent(validBatch({}, 8, new Date())));
    // Assess
    expect(res.statusCode).toBe(503);
    expect(timestream.commandCalls(WriteRecordsCommand)).toEqual([]);
  });

  it('answers 503 when EC2 cannot be asked, so the agent retries', async () => {
    // Prepare
    ec2
      .on(DescribeInstancesCommand)
      .rejects(Object.assign(new Error('Rate exceeded'), { name: 'RequestLimitExceeded' }));
    // Act
    const res = await handlerFromEnvironment(process.env)(batchEvent(validBatch({}, 8, new Date())));
    // Assess
    expect(res.statusCode).toBe(503);
    expect(timestream.commandCalls(WriteRecordsCommand)).toEqual([]);
  });

  it('refuses a caller of a role that is not an agent role with 403', async () => {
    // Prepare
    const env = { ...process.env, AGENT_ROLE_NAMES: 'OtherRole, AnotherRole' };
    // Act
    const res = await handlerFromEnvironment(env)(batchEvent(validBatch({}, 8, new Date())));
    // Assess
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body).error).toMatch(/GpuNodeRole is not an agent role/);
    expect(ec2.commandCalls(DescribeInstancesCommand)).toEqual([]);
  });

  it('fails at cold start naming a missing environment variable', () => {
    const env = { ...ENV } as NodeJS.ProcessEnv;
    delete env.STATE_TABLE;
    expect(() => handlerFromEnvironment(env)).toThrow(IngestConfigError);
    expect(() => handlerFromEnvironment(env)).toThrow(/STATE_TABLE/);
  });

  it.each([
    [{ STORE: undefined }, /STORE/],
    [{ STORE: 'dynamodb' }, /STORE to be one of athena, timestream.*`dynamodb`/],
    [{ STORE: 'athena' }, /FIREHOSE_GPU_STREAM/],
    [{ TIMESTREAM_EVENTS_TABLE: '' }, /TIMESTREAM_EVENTS_TABLE/],
  ])('fails at cold start on a bad store setting: %j', (change, message) => {
    // Prepare
    const env = { ...ENV, ...change } as NodeJS.ProcessEnv;

    // Act / Assess
    expect(() => handlerFromEnvironment(env)).toThrow(IngestConfigError);
    expect(() => handlerFromEnvironment(env)).toThrow(message);
  });

  it('writes the batch to the Firehose streams with STORE=athena, and never calls Timestream', async () => {
    // Prepare
    const firehose = acceptingFirehose();
    const env = { ...process.env, ...ATHENA_ENV };
    const batch = validBatch({}, 8, new Date());
    const event = batchEvent(batch);

    // Act
    const res = await handlerFromEnvironment(env)(event);

    // Assess
    expect(res.statusCode).toBe(202);
    const puts = firehose.commandCalls(PutRecordBatchCommand).map((c) => c.args[0].input);
    expect(puts.map((p) => p.DeliveryStreamName)).toContain('gs-gpu');
    const gpu = puts.find((p) => p.DeliveryStreamName === 'gs-gpu');
    const lines = new TextDecoder().decode(gpu?.Records?.[0]?.Data).trim().split('\n');
    expect(lines).toHaveLength(8);
    expect(firehoseRowColumns('gpu_windows', lines[0] ?? '{}')).toMatchObject({
      instance_id: 'i-0a5e00000000000a1',
      seq: 42,
      price_usd_per_hour: 40,
    });
    expect(timestream.commandCalls(WriteRecordsCommand)).toHaveLength(0);
    expectValidAwsInputs(firehose, 'firehose');
    firehose.restore();
  });

  it("stores a p5's merged minute of EFA entries as one row per device and port, after efa_drops judged every 10 s window", async () => {
    // Prepare: 6 windows × 32 devices × (port 1, port 0); in window 2 one port retransmits 5 % of
    // what it sends, which the minute's sum (0.02 %) would hide
    const firehose = acceptingFirehose();
    const env = { ...process.env, ...ATHENA_ENV };
    const now = new Date();
    const devices = Array.from({ length: 32 }, (_, d) => `rdmap${d + 16}s27`);
    const efa = [5, 4, 3, 2, 1, 0].flatMap(
      (w): NonNullable<Batch['efa']> =>
        devices.flatMap(
          (device): NonNullable<Batch['efa']> => [
            {
              start: ago(10 * (w + 1), now),
              end: ago(10 * w, now),
              device,
              port: 0,
              deltas: { submitted_cmds: 3 },
            },
            {
              start: ago(10 * (w + 1), now),
              end: ago(10 * w, now),
              device,
              port: 1,
              deltas: {
                tx_pkts: w === 2 ? 100 : 100_000,
                retrans_pkts: w === 2 && device === 'rdmap20s27' ? 5 : 0,
              },
            },
          ],
        ),
    );
    const event = batchEvent(validBatch({ efa }, 8, now));

    // Act
    const res = await handlerFromEnvironment(env)(event);

    // Assess
    expect(res.statusCode).toBe(202);
    const rows = firehose
      .commandCalls(PutRecordBatchCommand)
      .map((c) => c.args[0].input)
      .filter((p) => p.DeliveryStreamName === 'gs-efa')
      .flatMap((p) => p.Records ?? [])
      .flatMap((r) => new TextDecoder().decode(r.Data).trim().split('\n'))
      .map((line) => firehoseRowColumns('efa_windows', line));
    expect(rows).toHaveLength(64);
    const port = rows.find((r) => r.device === 'rdmap20s27' && r.port === 1);
    expect(port).toMatchObject({ deltas: { tx_pkts: 5 * 100_000 + 100, retrans_pkts: 5 } });
    expect(rows.find((r) => r.device === 'rdmap47s27' && r.port === 0)).toMatchObject({
      deltas: { submitted_cmds: 18 },
    });
    const published = sns.commandCalls(PublishCommand).map((c) => c.args[0].input.Message ?? '');
    expect(published.some((m) => m.includes('efa_drops') && m.includes('rdmap20s27'))).toBe(true);
    expectValidAwsInputs(firehose, 'firehose');
    firehose.restore();
  });

  it('fails at cold start naming a bad rule threshold', () => {
    // Prepare
    const env = { ...ENV, RULE_THRESHOLDS: '{"fakeLoadGpuUtilAtLeast": 1.5}' } as NodeJS.ProcessEnv;

    // Act / Assess
    expect(() => handlerFromEnvironment(env)).toThrow(RuleThresholdsError);
    expect(() => handlerFromEnvironment(env)).toThrow(/fakeLoadGpuUtilAtLeast/);
  });

  it('fails at cold start naming a bad metric team list', () => {
    // Prepare
    const env = { ...ENV, METRICS_TEAMS: 'llm,untagged' } as NodeJS.ProcessEnv;

    // Act / Assess
    expect(() => handlerFromEnvironment(env)).toThrow(MetricsTeamsError);
    expect(() => handlerFromEnvironment(env)).toThrow(/METRICS_TEAMS.*`untagged`/);
  });
});
