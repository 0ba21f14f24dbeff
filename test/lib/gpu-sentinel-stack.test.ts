import type { CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack, sharedStack } from './build-stack';

describe('GpuSentinelStack', () => {
  let stack: GpuSentinelStack;
  let template: Template;

  beforeAll(() => {
    stack = buildStack({ logRetention: logs.RetentionDays.THREE_MONTHS });
    template = Template.fromStack(stack);
  });

  it.each(['AthenaStore', 'AlertTopics', 'RemediationState', 'IngestFunction', 'IngestApi', 'AgentPolicy'])(
    'keeps the construct id %s (a contract)',
    (id) => {
      // Prepare / Act / Assess
      expect(stack.node.tryFindChild(id)).toBeDefined();
    },
  );

  it('outputs the batches URL ending in /v1/batches', () => {
    // Prepare
    const apiLogicalId = stack.getLogicalId(stack.api.api.node.defaultChild as CfnResource);

    // Act / Assess
    template.hasOutput('BatchesUrl', {
      Value: {
        'Fn::Join': [
          '',
          [
            'https://',
            { Ref: apiLogicalId },
            '.execute-api.',
            { Ref: 'AWS::Region' },
            '.',
            { Ref: 'AWS::URLSuffix' },
            '/',
            Match.anyValue(),
            '/v1/batches',
          ],
        ],
      },
    });
  });

  it.each([
    ['CriticalTopicArn', (s: GpuSentinelStack) => s.topics.critical],
    ['WarningTopicArn', (s: GpuSentinelStack) => s.topics.warning],
    ['InfoTopicArn', (s: GpuSentinelStack) => s.topics.info],
    ['ReportsTopicArn', (s: GpuSentinelStack) => s.topics.reports],
    ['AgentPolicyArn', (s: GpuSentinelStack) => s.agentPolicy.policy],
    ['StateTableName', (s: GpuSentinelStack) => s.state.table],
  ])('outputs %s', (outputId, resource) => {
    // Prepare
    const logicalId = stack.getLogicalId(resource(stack).node.defaultChild as CfnResource);

    // Act / Assess
    template.hasOutput(outputId, { Value: { Ref: logicalId } });
  });

  it('outputs the Timestream database name with store timestream, and no Athena output', () => {
    // Prepare
    const timestream = buildStack({ store: 'timestream' });

    // Act
    const outputs = Template.fromStack(timestream);

    // Assess
    outputs.hasOutput('TimestreamDatabaseName', {
      Value: { Ref: timestream.getLogicalId(timestream.database?.database as CfnResource) },
    });
    expect(Object.keys(outputs.findOutputs('*'))).not.toContain('AthenaWorkGroup');
    expect(timestream.node.tryFindChild('TelemetryDatabase')).toBeDefined();
    expect(timestream.node.tryFindChild('AthenaStore')).toBeUndefined();
  });

  it('outputs the telemetry bucket, Glue database and Athena workgroup by default, and no Timestream output', () => {
    // Prepare / Act / Assess
    const athena = stack.athenaStore;
    template.hasOutput('TelemetryBucketName', {
      Value: { Ref: stack.getLogicalId(athena?.bucket.node.defaultChild as CfnResource) },
    });
    template.hasOutput('GlueDatabaseName', { Value: 'test_stack' });
    template.hasOutput('AthenaWorkGroup', {
      Value: { Ref: stack.getLogicalId(athena?.workGroup as CfnResource) },
    });
    expect(Object.keys(template.findOutputs('*'))).not.toContain('TimestreamDatabaseName');
  });

  it('applies logRetention to the Lambdas (ingest, reports, fleet evaluator), the access and the Firehose delivery log groups', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::Logs::LogGroup', 5);
    template.allResourcesProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
  });

  it('encrypts every log group with a customer-managed KMS key that rotates', () => {
    // Prepare
    const groups = Object.values(template.findResources('AWS::Logs::LogGroup'));
    const keys = template.findResources('AWS::KMS::Key');

    // Act
    const keyIds = groups.map(
      (g) => (g.Properties.KmsKeyId as { 'Fn::GetAtt'?: [string, string] })?.['Fn::GetAtt']?.[0],
    );

    // Assess
    expect(groups.length).toBeGreaterThan(0);
    for (const id of keyIds) {
      expect(id).toBeDefined();
      expect(keys[id as string]?.Properties.EnableKeyRotation).toBe(true);
    }
  });

  it.each(['athena', 'timestream'] as const)(
    'has one KMS key, the store’s, encrypting everything encrypted (store %s)',
    (store) => {
      // Prepare
      const { stack: s, template: t } = sharedStack({ store });
      const key = (s.athenaStore ?? s.database)?.key;
      const storeKey = s.getLogicalId(key?.node.defaultChild as CfnResource);

      // Act
      const keys = Object.keys(t.findResources('AWS::KMS::Key'));
      const keyRefs = new Set(
        [...JSON.stringify(t.toJSON().Resources).matchAll(/"Fn::GetAtt":\["([A-Za-z0-9]+)","Arn"\]/g)]
          .map((m) => m[1])
          .filter((id) => id !== undefined && t.toJSON().Resources[id]?.Type === 'AWS::KMS::Key'),
      );

      // Assess
      expect(keys).toEqual([storeKey]);
      expect([...keyRefs]).toEqual([storeKey]);
      expect(s.topics.key).toBe(key);
      expect(s.reports.key).toBe(key);
    },
  );

  it.each([
    [{ logRetention: 42 as logs.RetentionDays }, '`42` (number)'],
    [{ logRetention: -1 as logs.RetentionDays }, '`-1` (number)'],
  ])('fails if logRetention is not a RetentionDays value (%j)', (props, got) => {
    // Prepare / Act
    const build = () => buildStack(props);

    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(
      `Expected \`logRetention\` to be one of logs.RetentionDays (a number of days), got ${got}`,
    );
  });
});
