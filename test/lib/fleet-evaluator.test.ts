import type { CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack } from './build-stack';
import { actionsOf, resourcesOf, roleStatements, type TemplateStatement } from './iam-statements';

function logicalId(stack: GpuSentinelStack, resource: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(resource.node.defaultChild as CfnResource);
}

describe.each(['athena', 'timestream'] as const)('FleetEvaluator, store %s', (store) => {
  let stack: GpuSentinelStack;
  let template: Template;
  let statements: TemplateStatement[];

  beforeAll(() => {
    stack = buildStack({ store });
    template = Template.fromStack(stack);
    statements = roleStatements(template, logicalId(stack, stack.fleet.role));
  });

  it('runs on nodejs24.x, arm64, 512 MiB, 240 s (under the 5-minute schedule), with the documented environment', () => {
    // Prepare
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(stack, stack.fleet.function)];
    // Act
    const props = fn?.Properties;
    // Assess
    expect(props).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      MemorySize: 512,
      Timeout: 240,
    });
    expect(props).not.toHaveProperty('TracingConfig');
    expect(props.Environment.Variables).toMatchObject({
      STORE: store,
      FLEET_REGIONS: { Ref: 'AWS::Region' },
      RULE_THRESHOLDS: '{}',
      STATE_TABLE: { Ref: logicalId(stack, stack.state.table) },
      POWERTOOLS_SERVICE_NAME: 'gpu-sentinel-fleet',
    });
  });

  it('is invoked every 5 minutes by a schedule whose role may invoke it only', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Scheduler::Schedule', {
      ScheduleExpression: 'rate(5 minutes)',
      State: 'ENABLED',
      Target: Match.objectLike({
        Arn: { 'Fn::GetAtt': [logicalId(stack, stack.fleet.function), 'Arn'] },
        RetryPolicy: { MaximumEventAgeInSeconds: 240, MaximumRetryAttempts: 0 },
      }),
    });
  });

  it('grants the store read, the alert topics, the state table, EC2 listing and namespaced PutMetricData, nothing more', () => {
    // Prepare / Act
    const actions = statements.map((s) => actionsOf(s).sort().join(','));
    const star = statements.filter((s) => JSON.stringify(resourcesOf(s)) === '["*"]').flatMap(actionsOf);
    const metrics = statements.find((s) => actionsOf(s).includes('cloudwatch:PutMetricData'));
    // Assess
    expect(actions).toEqual(
      expect.arrayContaining([
        'logs:CreateLogStream,logs:PutLogEvents',
        'sns:Publish',
        'dynamodb:DeleteItem,dynamodb:GetItem,dynamodb:PutItem,dynamodb:Query,dynamodb:UpdateItem',
        'ec2:DescribeInstances',
        'cloudwatch:PutMetricData',
        store === 'athena'
          ? 'athena:GetQueryExecution,athena:GetQueryResults,athena:StartQueryExecution,athena:StopQueryExecution'
          : 'timestream:Select',
      ]),
    );
    expect(actions.join(' ')).not.toMatch(
      /firehose:|timestream:WriteRecords|autoscaling:|ec2:CreateTags|s3:DeleteObject/,
    );
    expect(star.sort()).toEqual(
      [
        'cloudwatch:PutMetricData',
        'ec2:DescribeInstances',
        ...(store === 'timestream' ? ['timestream:DescribeEndpoints'] : []),
      ].sort(),
    );
    expect(metrics?.Condition).toEqual({ StringEquals: { 'cloudwatch:namespace': 'GpuSentinel' } });
    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
  });

  it('keeps its logs in a log group encrypted with its own key', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Logs::LogGroup', {
      KmsKeyId: { 'Fn::GetAtt': [logicalId(stack, stack.fleet.logKey), 'Arn'] },
    });
  });
});

describe('FleetEvaluator props', () => {
  it('lists the regions it is given', () => {
    // Prepare / Act
    const stack = buildStack({ fleetRegions: ['us-east-1', 'eu-north-1'] });
    // Assess
    Template.fromStack(stack).hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ FLEET_REGIONS: 'us-east-1,eu-north-1' }) },
    });
  });

  it.each([
    ['an empty region list', { fleetRegions: [] }, /regions/],
    ['a region that is not a code', { fleetRegions: ['Frankfurt'] }, /regions\[0\]/],
    ['an unknown threshold', { ruleThresholds: { agentSilentAfterMinutes: 5 } }, /ruleThresholds/],
    ['a silence threshold out of range', { ruleThresholds: { agentSilentAfterS: 1 } }, /agentSilentAfterS/],
  ])('fails at synth on %s', (_label, props, message) => {
    // Act
    const build = () => buildStack(props);
    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(message);
  });
});
