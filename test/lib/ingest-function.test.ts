import type { CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_GATEWAY_INTEGRATION_TIMEOUT_S } from '../../lambdas/contract/constants';
import { parsePriceRates } from '../../lambdas/domain/pricing';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import type { TelemetryDatabase } from '../../lib/telemetry-database';
import { buildStack, sharedStack } from './build-stack';
import {
  actionsOf,
  resourcesOf,
  roleStatements,
  statementsGranting,
  type TemplateStatement,
} from './iam-statements';

function logicalId(stack: GpuSentinelStack, resource: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(resource.node.defaultChild as CfnResource);
}

describe('IngestFunction (Timestream store)', () => {
  let stack: GpuSentinelStack;
  let template: Template;
  let statements: TemplateStatement[];
  let database: TelemetryDatabase;

  beforeAll(() => {
    stack = buildStack({
      store: 'timestream',
      priceOverridesUsdPerHour: { 'p5.48xlarge': 55.04, 'g6e.xlarge': 0 },
      ruleThresholds: { fakeLoadGpuUtilAtLeast: 0.8 },
    });
    database = stack.database as TelemetryDatabase;
    template = Template.fromStack(stack);
    statements = roleStatements(template, logicalId(stack, stack.ingest.role));
  });

  it('runs on nodejs24.x, arm64, 512 MB, 25 s, with X-Ray only when asked', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::Lambda::Function', 3); // ingest, finance reports, fleet evaluator
    template.hasResourceProperties('AWS::Lambda::Function', {
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      MemorySize: 512,
      Timeout: 25,
      Handler: 'index.handler',
      TracingConfig: Match.absent(),
    });
    sharedStack({ tracing: true }).template.resourcePropertiesCountIs(
      'AWS::Lambda::Function',
      { TracingConfig: { Mode: 'Active' } },
      3,
    );
  });

  it("times out before API Gateway does, so a slow batch ends in the function's own answer, not a 504", () => {
    // Prepare
    const fn = Object.values(template.findResources('AWS::Lambda::Function'))[0];
    // Act / Assess
    expect(fn?.Properties.Timeout).toBeLessThan(API_GATEWAY_INTEGRATION_TIMEOUT_S);
  });

  it('passes exactly the documented environment variables', () => {
    // Prepare
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(stack, stack.ingest.function)];

    // Act
    const names = Object.keys(fn?.Properties.Environment.Variables ?? {}).sort();

    // Assess
    expect(names).toEqual(
      [
        'AGENT_ROLE_NAMES',
        'NODE_OPTIONS',
        'POWERTOOLS_METRICS_NAMESPACE',
        'POWERTOOLS_SERVICE_NAME',
        'PRICE_OVERRIDES',
        'REMEDIATION_MODE',
        'RULE_THRESHOLDS',
        'SPOT_PRICE_HISTORY',
        'STATE_TABLE',
        'STORE',
        'TIMESTREAM_DATABASE',
        'TIMESTREAM_EFA_TABLE',
        'TIMESTREAM_EVENTS_TABLE',
        'TIMESTREAM_GPU_TABLE',
        'TOPIC_CRITICAL_ARN',
        'TOPIC_INFO_ARN',
        'TOPIC_WARNING_ARN',
      ].sort(),
    );
  });

  it('points the environment at this stack’s resources', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: {
          STORE: 'timestream',
          TIMESTREAM_DATABASE: { Ref: logicalId(stack, { node: { defaultChild: database.database } }) },
          TIMESTREAM_GPU_TABLE: { 'Fn::GetAtt': [stack.getLogicalId(database.gpuTable), 'Name'] },
          TIMESTREAM_EFA_TABLE: { 'Fn::GetAtt': [stack.getLogicalId(database.efaTable), 'Name'] },
          TIMESTREAM_EVENTS_TABLE: { 'Fn::GetAtt': [stack.getLogicalId(database.eventsTable), 'Name'] },
          TOPIC_CRITICAL_ARN: { Ref: logicalId(stack, stack.topics.critical) },
          TOPIC_WARNING_ARN: { Ref: logicalId(stack, stack.topics.warning) },
          TOPIC_INFO_ARN: { Ref: logicalId(stack, stack.topics.info) },
          STATE_TABLE: { Ref: logicalId(stack, stack.state.table) },
          REMEDIATION_MODE: 'replace',
          PRICE_OVERRIDES: '{"p5.48xlarge":55.04,"g6e.xlarge":0}',
          RULE_THRESHOLDS: '{"fakeLoadGpuUtilAtLeast":0.8}',
          SPOT_PRICE_HISTORY: 'ec2',
          POWERTOOLS_SERVICE_NAME: 'gpu-sentinel-ingest',
          NODE_OPTIONS: '--enable-source-maps',
        },
      },
    });
  });

  it('logs to its own log group kept one month', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      LoggingConfig: { LogGroup: { Ref: logicalId(stack, stack.ingest.logGroup) } },
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('encrypts its log group with its own rotated key that CloudWatch Logs may use for log groups only', () => {
    // Prepare
    const keyId = stack.getLogicalId(stack.ingest.logKey.node.defaultChild as CfnResource);

    // Act
    const key = template.findResources('AWS::KMS::Key')[keyId];
    const forLogs = ((key?.Properties.KeyPolicy.Statement ?? []) as Record<string, unknown>[]).filter((st) =>
      JSON.stringify(st.Principal).includes('logs.'),
    );

    // Assess
    template.hasResourceProperties('AWS::Logs::LogGroup', {
      RetentionInDays: 30,
      KmsKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
    });
    expect(key?.Properties.EnableKeyRotation).toBe(true);
    expect(forLogs).toHaveLength(1);
    expect(JSON.stringify(forLogs[0]?.Condition)).toContain('kms:EncryptionContext:aws:logs:arn');
  });

  it.each([{ props: {} }, { props: { ingestReservedConcurrency: 0 } }])(
    'reserves no concurrency by default, or for 0, so a new account (quota 10) can deploy: $props',
    ({ props }) => {
      // Prepare / Act
      const t = sharedStack(props).template;

      // Assess
      const reserved = Object.values(t.findResources('AWS::Lambda::Function')).filter(
        (fn) => fn.Properties?.ReservedConcurrentExecutions !== undefined,
      );
      expect(reserved).toEqual([]);
    },
  );

  it('reserves the concurrency asked for the ingest function', () => {
    // Prepare / Act
    const t = sharedStack({ ingestReservedConcurrency: 1250 }).template;

    // Assess
    t.hasResourceProperties('AWS::Lambda::Function', {
      Description: Match.stringLikeRegexp('validates agent batches'),
      ReservedConcurrentExecutions: 1250,
    });
  });

  it('uses a role with no managed policy, assumable by Lambda only', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [Match.objectLike({ Principal: { Service: 'lambda.amazonaws.com' } })],
      },
      ManagedPolicyArns: Match.absent(),
      Description: Match.stringLikeRegexp('ingest Lambda'),
    });
  });

  it('grants exactly the documented actions', () => {
    // Prepare / Act
    const actions = [...new Set(statements.flatMap(actionsOf))].sort();

    // Assess
    expect(actions).toEqual(
      [
        'autoscaling:DescribeAutoScalingGroups',
        'autoscaling:DescribeAutoScalingInstances',
        'autoscaling:SetInstanceHealth',
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:Query',
        'dynamodb:UpdateItem',
        'ec2:CreateTags',
        'ec2:DescribeInstances',
        'ec2:DescribeSpotPriceHistory',
        'ec2:RebootInstances',
        'iam:GetInstanceProfile',
        'kms:Decrypt',
        'kms:GenerateDataKey',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'sns:Publish',
        'timestream:DescribeEndpoints',
        'timestream:WriteRecords',
      ].sort(),
    );
    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
  });

  it.each([
    ['logs:CreateLogStream', (s: GpuSentinelStack) => [getAtt(s, s.ingest.logGroup, 'Arn')]],
    ['logs:PutLogEvents', (s: GpuSentinelStack) => [getAtt(s, s.ingest.logGroup, 'Arn')]],
    [
      'timestream:WriteRecords',
      (s: GpuSentinelStack) =>
        [s.database?.gpuTable, s.database?.efaTable, s.database?.eventsTable].map((t) => ({
          'Fn::GetAtt': [s.getLogicalId(t as CfnResource), 'Arn'],
        })),
    ],
    [
      'sns:Publish',
      (s: GpuSentinelStack) =>
        [s.topics.critical, s.topics.warning, s.topics.info].map((t) => ({ Ref: logicalId(s, t) })),
    ],
    ['kms:GenerateDataKey', (s: GpuSentinelStack) => [getAtt(s, s.topics.key, 'Arn')]],
    ['kms:Decrypt', (s: GpuSentinelStack) => [getAtt(s, s.topics.key, 'Arn')]],
    ['dynamodb:GetItem', (s: GpuSentinelStack) => [getAtt(s, s.state.table, 'Arn')]],
    ['dynamodb:PutItem', (s: GpuSentinelStack) => [getAtt(s, s.state.table, 'Arn')]],
    ['dynamodb:UpdateItem', (s: GpuSentinelStack) => [getAtt(s, s.state.table, 'Arn')]],
    ['dynamodb:DeleteItem', (s: GpuSentinelStack) => [getAtt(s, s.state.table, 'Arn')]],
    ['dynamodb:Query', (s: GpuSentinelStack) => [getAtt(s, s.state.table, 'Arn')]],
    ['dynamodb:DeleteItem', (s: GpuSentinelStack) => [getAtt(s, s.state.table, 'Arn')]],
    ['timestream:DescribeEndpoints', () => ['*']],
    ['autoscaling:DescribeAutoScalingInstances', () => ['*']],
    ['ec2:DescribeSpotPriceHistory', () => ['*']],
  ])('grants %s on exactly its resources', (action, expected) => {
    // Prepare
    const granting = statementsGranting(statements, action);

    // Act
    const resources = granting.flatMap(resourcesOf);

    // Assess
    expect(granting.every((s) => s.Condition === undefined)).toBe(true);
    expect(resources).toHaveLength(expected(stack).length);
    expect(resources).toEqual(expect.arrayContaining(expected(stack)));
  });

  it('grants Resource "*" only for actions without resource-level permissions', () => {
    // Prepare / Act
    const starActions = statements
      .filter((s) => resourcesOf(s).includes('*'))
      .flatMap(actionsOf)
      .sort();

    // Assess
    expect(starActions).toEqual(
      [
        'autoscaling:DescribeAutoScalingGroups',
        'autoscaling:DescribeAutoScalingInstances',
        'ec2:DescribeInstances',
        'ec2:DescribeSpotPriceHistory',
        'timestream:DescribeEndpoints',
      ].sort(),
    );
  });

  it('reads only this account’s instance profiles, for the sender check', () => {
    // Prepare / Act
    const statement = statements.find((st) => actionsOf(st).includes('iam:GetInstanceProfile'));
    // Assess
    expect(actionsOf(statement!)).toEqual(['iam:GetInstanceProfile']);
    expect(statement?.Resource).toEqual({
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':instance-profile/*'],
      ],
    });
  });

  it('grants SetInstanceHealth on the account’s groups unless tagged gpu-sentinel:remediation=off', () => {
    // Prepare / Act
    const [statement, ...rest] = statementsGranting(statements, 'autoscaling:SetInstanceHealth');

    // Assess
    expect(rest).toHaveLength(0);
    expect(actionsOf(statement!)).toEqual(['autoscaling:SetInstanceHealth']);
    expect(statement?.Resource).toEqual({
      'Fn::Join': [
        '',
        [
          'arn:',
          { Ref: 'AWS::Partition' },
          ':autoscaling:*:',
          { Ref: 'AWS::AccountId' },
          ':autoScalingGroup:*:autoScalingGroupName/*',
        ],
      ],
    });
    expect(statement?.Condition).toEqual({
      StringNotEquals: { 'aws:ResourceTag/gpu-sentinel:remediation': 'off' },
    });
  });

  it('grants CreateTags on the account’s instances for the quarantine tag key only', () => {
    // Prepare / Act
    const [statement, ...rest] = statementsGranting(statements, 'ec2:CreateTags');

    // Assess
    expect(rest).toHaveLength(0);
    expect(actionsOf(statement!)).toEqual(['ec2:CreateTags']);
    expect(statement?.Resource).toEqual({
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':ec2:*:', { Ref: 'AWS::AccountId' }, ':instance/*'],
      ],
    });
    expect(statement?.Condition).toEqual({
      'ForAllValues:StringEquals': { 'aws:TagKeys': ['gpu-sentinel:quarantine'] },
    });
  });

  it('grants RebootInstances on the account’s instances unless tagged gpu-sentinel:remediation=off', () => {
    // Prepare / Act
    const [statement, ...rest] = statementsGranting(statements, 'ec2:RebootInstances');

    // Assess
    expect(rest).toHaveLength(0);
    expect(actionsOf(statement!)).toEqual(['ec2:RebootInstances']);
    expect(statement?.Resource).toEqual({
      'Fn::Join': [
        '',
        ['arn:', { Ref: 'AWS::Partition' }, ':ec2:*:', { Ref: 'AWS::AccountId' }, ':instance/*'],
      ],
    });
    expect(statement?.Condition).toEqual({
      StringNotEquals: { 'aws:ResourceTag/gpu-sentinel:remediation': 'off' },
    });
  });

  it.each(['off', 'notify'] as const)(
    'grants no SetInstanceHealth, CreateTags nor RebootInstances in %s mode',
    (remediationMode) => {
      // Prepare
      const s = buildStack({ remediationMode });

      // Act
      const t = Template.fromStack(s);
      const actions = roleStatements(t, logicalId(s, s.ingest.role)).flatMap(actionsOf);

      // Assess
      t.hasResourceProperties('AWS::Lambda::Function', {
        Environment: {
          Variables: Match.objectLike({ REMEDIATION_MODE: remediationMode, PRICE_OVERRIDES: '{}' }),
        },
      });
      expect(actions).not.toContain('autoscaling:SetInstanceHealth');
      expect(actions).not.toContain('ec2:CreateTags');
      expect(actions).not.toContain('ec2:RebootInstances');
      expect(actions).toContain('autoscaling:DescribeAutoScalingInstances');
    },
  );

  it('passes the price rates as PRICE_RATES, which the Lambda parses back to the same rates', () => {
    // Prepare
    const priceRates = {
      savings_plans: { 'p5.48xlarge': 34.68 },
      capacity_blocks: { 'p5.48xlarge@us-east-2': 31.46 },
      spot: { 'g6e.12xlarge': 4.1 },
      spot_discount: 0.6,
    };
    const s = buildStack({ priceRates });

    // Act
    const fn = Template.fromStack(s).findResources('AWS::Lambda::Function')[logicalId(s, s.ingest.function)];
    const env = fn?.Properties.Environment.Variables as Record<string, string>;

    // Assess
    expect(parsePriceRates(env.PRICE_RATES)).toEqual(priceRates);
  });

  it('neither reads nor may read the spot price history when `spotPriceHistory` is false', () => {
    // Prepare
    const s = buildStack({ spotPriceHistory: false });

    // Act
    const t = Template.fromStack(s);
    const fn = t.findResources('AWS::Lambda::Function')[logicalId(s, s.ingest.function)];
    const actions = roleStatements(t, logicalId(s, s.ingest.role)).flatMap(actionsOf);

    // Assess
    expect(fn?.Properties.Environment.Variables).not.toHaveProperty('SPOT_PRICE_HISTORY');
    expect(actions).not.toContain('ec2:DescribeSpotPriceHistory');
    expect(actions).toContain('ec2:DescribeInstances');
  });

  it('passes no PRICE_RATES when the deployment gives none', () => {
    // Prepare
    const s = buildStack({});

    // Act
    const fn = Template.fromStack(s).findResources('AWS::Lambda::Function')[logicalId(s, s.ingest.function)];

    // Assess
    expect(fn?.Properties.Environment.Variables).not.toHaveProperty('PRICE_RATES');
  });

  it.each([
    [
      'remediationMode',
      { remediationMode: 'terminate' as never },
      'one of `off`, `notify`, `replace`, got `"terminate"`',
    ],
    ['remediationMode', { remediationMode: 'Replace' as never }, '`"Replace"`'],
    [
      'priceOverridesUsdPerHour.p5.48xlarge',
      { priceOverridesUsdPerHour: { 'p5.48xlarge': -1 } },
      '`-1` (number)',
    ],
    [
      'priceOverridesUsdPerHour.p5.48xlarge',
      { priceOverridesUsdPerHour: { 'p5.48xlarge': Number.NaN } },
      '`NaN`',
    ],
    [
      'priceOverridesUsdPerHour.p5.48xlarge',
      { priceOverridesUsdPerHour: { 'p5.48xlarge': Number.POSITIVE_INFINITY } },
      '`Infinity`',
    ],
    [
      'priceOverridesUsdPerHour.p4d.24xlarge',
      { priceOverridesUsdPerHour: { 'p4d.24xlarge': '21.96' as never } },
      '(string)',
    ],
    ['priceOverridesUsdPerHour', { priceOverridesUsdPerHour: { P5: 55 } }, '`"P5"`'],
    ['priceOverridesUsdPerHour', { priceOverridesUsdPerHour: { 'p5 48xlarge': 55 } }, '`"p5 48xlarge"`'],
    ['priceOverridesUsdPerHour', { priceOverridesUsdPerHour: [55] as never }, '(array)'],
    ['reservedConcurrentExecutions', { ingestReservedConcurrency: -1 }, 'quota must be >= N + 100'],
    ['reservedConcurrentExecutions', { ingestReservedConcurrency: 2.5 }, '`2.5`'],
    ['ruleThresholds.minHorizonSpanS', { ruleThresholds: { minHorizonSpanS: Number.NaN } }, '`null`'],
    ['ruleThresholds.minHorizonSpanS', { ruleThresholds: { minHorizonSpanS: '300' as never } }, '(string)'],
    ['ruleThresholds.minHorizonSpanS', { ruleThresholds: { minHorizonSpanS: 0 } }, 'a number 1..3600 (s)'],
    [
      'ruleThresholds.fakeLoadGpuUtil',
      { ruleThresholds: { fakeLoadGpuUtil: 0.8 } },
      'a threshold of the table',
    ],
    ['ruleThresholds', { ruleThresholds: [0.8] as never }, '(array)'],
    ['priceRates.spot_discount', { priceRates: { spot_discount: 1 } }, 'a fraction >= 0 and < 1'],
    ['priceRates.spot_discount', { priceRates: { spot_discount: -0.1 } }, '`-0.1` (number)'],
    [
      'priceRates.savings_plans.p5.48xlarge',
      { priceRates: { savings_plans: { 'p5.48xlarge': -3 } } },
      '`-3` (number)',
    ],
    ['priceRates.spot.p5.48xlarge', { priceRates: { spot: { 'p5.48xlarge': '12' as never } } }, '(string)'],
    [
      'priceRates.capacity_blocks.P5@us-east-1',
      { priceRates: { capacity_blocks: { 'P5@us-east-1': 30 } } },
      'under a key `type` or `type@region`',
    ],
    [
      'priceRates.reserved',
      { priceRates: { reserved: {} } as never },
      'one of capacity_blocks, savings_plans, spot',
    ],
    ['priceRates', { priceRates: [0.6] as never }, '(array)'],
  ])('fails if %s is invalid (%j)', (prop, props, got) => {
    // Prepare / Act
    const build = () => buildStack(props);

    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(`Expected \`${prop}\` to be`);
    expect(build).toThrow(got);
  });
});

function getAtt(
  stack: GpuSentinelStack,
  resource: { node: { defaultChild?: unknown } },
  attribute: string,
): unknown {
  return { 'Fn::GetAtt': [logicalId(stack, resource), attribute] };
}
