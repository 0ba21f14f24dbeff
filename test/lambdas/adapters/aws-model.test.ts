import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { expectValidAwsInputs, loadServiceModel, validateInput } from './aws-model';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(suffix))
    .map((f) => join(ROOT, dir, f));
}

describe('AWS model validation (botocore service models)', () => {
  it.each<[string, string, string, unknown, RegExp]>([
    [
      'a missing required member',
      'sns',
      'Publish',
      { TopicArn: 'arn:aws:sns:us-east-1:1:t' },
      /Publish\.Message: required/,
    ],
    ['an unknown member', 'sns', 'Publish', { Message: 'm', Topic: 'x' }, /Publish\.Topic: unknown member/],
    [
      'a string where a structure map value is due',
      'sns',
      'Publish',
      { Message: 'm', MessageAttributes: { a: 'x' } },
      /expected a structure/,
    ],
    [
      'a number where a string is due',
      'sns',
      'Publish',
      { Message: 42 },
      /Publish\.Message: expected a string/,
    ],
    [
      'a value outside an enum',
      'dynamodb',
      'PutItem',
      { TableName: 'state', Item: {}, ReturnValues: 'EVERYTHING' },
      /ReturnValues: expected one of NONE\|/,
    ],
    [
      'a string over its max length',
      'autoscaling',
      'SetInstanceHealth',
      { InstanceId: `i-${'0'.repeat(40)}`, HealthStatus: 'Unhealthy' },
      /InstanceId: expected at most 19 characters/,
    ],
    [
      'a string under its min length',
      'autoscaling',
      'DescribeAutoScalingGroups',
      { AutoScalingGroupNames: [''] },
      /expected at least 1 characters/,
    ],
    [
      'a string breaking its pattern',
      'autoscaling',
      'SetInstanceHealth',
      { InstanceId: 'i-0abc\u0001', HealthStatus: 'Unhealthy' },
      /expected to match/,
    ],
    [
      'a string where a boolean is due',
      'autoscaling',
      'SetInstanceHealth',
      { InstanceId: 'i-0abc1234', HealthStatus: 'Unhealthy', ShouldRespectGracePeriod: 'no' },
      /expected a boolean/,
    ],
    [
      'a list over its max entries',
      'timestream-write',
      'WriteRecords',
      { DatabaseName: 'db', TableName: 'tb', Records: Array.from({ length: 101 }, () => ({})) },
      /Records: expected at most 100 entries/,
    ],
    [
      'a value outside an enum (Timestream MeasureValueType)',
      'timestream-write',
      'WriteRecords',
      { DatabaseName: 'db', TableName: 'tb', Records: [{ MeasureValueType: 'FLOAT' }] },
      /MeasureValueType: expected one of/,
    ],
    [
      'a fraction where a long is due',
      'timestream-write',
      'WriteRecords',
      { DatabaseName: 'db', TableName: 'tb', Records: [{ Version: 1.5 }] },
      /Version: expected an long/,
    ],
    [
      'a string where a list is due',
      'ec2',
      'DescribeInstances',
      { InstanceIds: 'i-0abc1234' },
      /InstanceIds: expected a list/,
    ],
    [
      'a string where a timestamp is due',
      'cloudwatch',
      'PutMetricData',
      { Namespace: 'ns', MetricData: [{ MetricName: 'm', Timestamp: '2026-01-01' }] },
      /Timestamp: expected a valid Date/,
    ],
    [
      'a number where bytes are due',
      'dynamodb',
      'PutItem',
      { TableName: 'tbl', Item: { pk: { B: 7 } } },
      /B: expected bytes/,
    ],
    [
      'an infinite double',
      'cloudwatch',
      'PutMetricData',
      { Namespace: 'ns', MetricData: [{ MetricName: 'm', Value: Number.POSITIVE_INFINITY }] },
      /Value: expected a finite double/,
    ],
    [
      'an empty table name',
      'dynamodb',
      'GetItem',
      { TableName: '', Key: {} },
      /TableName: expected at least 1 characters/,
    ],
  ])('finds %s', (_name, service, operation, input, problem) => {
    // Act
    const problems = validateInput(loadServiceModel(service), operation, input);
    // Assess
    expect(problems.join('\n')).toMatch(problem);
  });

  it.each<[string, string, unknown]>([
    ['sns', 'Publish', { TopicArn: 'arn:aws:sns:us-east-1:123456789012:t', Message: 'm', Subject: 's' }],
    [
      'autoscaling',
      'SetInstanceHealth',
      { InstanceId: 'i-0abc12345def67890', HealthStatus: 'Unhealthy', ShouldRespectGracePeriod: false },
    ],
    ['ec2', 'CreateTags', { Resources: ['i-0abc12345def67890'], Tags: [{ Key: 'k', Value: 'v' }] }],
    [
      'dynamodb',
      'PutItem',
      { TableName: 'state', Item: { pk: { S: 'a' }, n: { N: '1' }, b: { B: new Uint8Array([1]) } } },
    ],
    [
      'cloudwatch',
      'PutMetricData',
      { Namespace: 'ns', MetricData: [{ MetricName: 'm', Value: 1, Timestamp: new Date() }] },
    ],
  ])('accepts a valid %s %s input', (service, operation, input) => {
    expect(validateInput(loadServiceModel(service), operation, input)).toEqual([]);
  });

  it('validates every input a mocked client received and names each bad one', async () => {
    // Prepare
    const client = new SNSClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 's' },
    });
    const mock = mockClient(client);
    mock.on(PublishCommand).resolves({});
    await client.send(
      new PublishCommand({ TopicArn: 'arn:aws:sns:us-east-1:123456789012:t', Message: 'ok' }),
    );
    await client.send(new PublishCommand({ Message: 'm', Subjekt: 'typo' } as never));
    // Act / Assess
    expect(() => expectValidAwsInputs(mock, 'sns')).toThrow(/Publish\.Subjekt: unknown member/);
    mock.restore();
  });

  it('covers every command the code sends: each is validated by some test that checks inputs against the models', () => {
    // Prepare: commands sent by the product (lambdas/, agent/, bin/), by client package
    const sent = new Map<string, string>();
    for (const file of [
      ...filesUnder('lambdas', '.ts'),
      ...filesUnder('agent', '.ts'),
      ...filesUnder('bin', '.ts'),
    ]) {
      const text = readFileSync(file, 'utf8');
      if (!text.includes("from '@aws-sdk/client-")) continue;
      for (const m of text.matchAll(/new (\w+Command)\(/g)) sent.set(m[1]!, relative(ROOT, file));
    }
    // The commands named in test files that validate what their mocks received
    const validated = new Set<string>();
    for (const file of filesUnder('test', '.test.ts')) {
      const text = readFileSync(file, 'utf8');
      if (!text.includes('expectValidAwsInputs(')) continue;
      for (const m of text.matchAll(/\b(\w+Command)\b/g)) validated.add(m[1]!);
    }
    // Act
    const unvalidated = [...sent]
      .filter(([command]) => !validated.has(command))
      .map(([c, f]) => `${c} (${f})`);
    // Assess
    expect(sent.size).toBeGreaterThan(0);
    expect(unvalidated).toEqual([]);
  });
});
