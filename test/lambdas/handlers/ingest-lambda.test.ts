import { gzipSync } from 'node:zlib';
import {
  AutoScalingClient,
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
import {
  FirehoseClient,
  PutRecordBatchCommand,
  type PutRecordBatchCommandInput,
} from '@aws-sdk/client-firehose';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { TimestreamWriteClient, WriteRecordsCommand } from '@aws-sdk/client-timestream-write';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handlerFromEnvironment, IngestConfigError } from '../../../lambdas/handlers/ingest';
import { ago, validBatch } from '../contract/batches';

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
  AWS_REGION: 'us-east-1',
};

describe('ingest Lambda wired from the environment (real SDK clients, mocked AWS)', () => {
  const timestream = mockClient(TimestreamWriteClient);
  const sns = mockClient(SNSClient);
  const dynamo = mockClient(DynamoDBClient);
  const autoscaling = mockClient(AutoScalingClient);
  const saved = { ...process.env };

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
  });

  afterEach(() => {
    process.env = { ...saved };
  });

  it('writes Timestream, publishes the critical alert and replaces the instance on Xid 79', async () => {
    // Prepare
    const now = new Date();
    const batch = validBatch(
      { events: [{ at: ago(5, now), kind: 'xid', xid: 79, source: 'kmsg', pci_bus_id: '0000:53:00.0' }] },
      8,
      now,
    );
    const event = {
      body: gzipSync(JSON.stringify(batch)).toString('base64'),
      isBase64Encoded: true,
      headers: { 'Content-Encoding': 'gzip' },
      requestContext: {
        identity: { userArn: 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1' },
      },
    } as unknown as APIGatewayProxyEvent;
    // Act
    const res = await handlerFromEnvironment(process.env)(event);
    // Assess
    expect(res.statusCode).toBe(202);
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
    const firehose = mockClient(FirehoseClient);
    firehose.on(PutRecordBatchCommand).callsFake((input: PutRecordBatchCommandInput) => ({
      FailedPutCount: 0,
      RequestResponses: (input.Records ?? []).map((_, i) => ({ RecordId: `r${i}` })),
    }));
    const env = {
      ...process.env,
      STORE: 'athena',
      FIREHOSE_GPU_STREAM: 'gs-gpu',
      FIREHOSE_EFA_STREAM: 'gs-efa',
      FIREHOSE_EVENTS_STREAM: 'gs-events',
      ATHENA_DATABASE: 'gpu_sentinel',
      ATHENA_WORKGROUP: 'gpu_sentinel-GpuSentinel',
    };
    const batch = validBatch({}, 8, new Date());
    const event = {
      body: JSON.stringify(batch),
      isBase64Encoded: false,
      headers: {},
      requestContext: {
        identity: { userArn: 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1' },
      },
    } as unknown as APIGatewayProxyEvent;

    // Act
    const res = await handlerFromEnvironment(env)(event);

    // Assess
    expect(res.statusCode).toBe(202);
    const puts = firehose.commandCalls(PutRecordBatchCommand).map((c) => c.args[0].input);
    expect(puts.map((p) => p.DeliveryStreamName)).toContain('gs-gpu');
    const gpu = puts.find((p) => p.DeliveryStreamName === 'gs-gpu');
    const lines = new TextDecoder().decode(gpu?.Records?.[0]?.Data).trim().split('\n');
    expect(lines).toHaveLength(8);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      instance_id: 'i-0a5e00000000000a1',
      seq: 42,
      price_usd_per_hour: 40,
    });
    expect(timestream.commandCalls(WriteRecordsCommand)).toHaveLength(0);
    firehose.restore();
  });
});
