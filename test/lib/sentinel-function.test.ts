import { type CfnResource, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sns from 'aws-cdk-lib/aws-sns';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEPS_LOCK_FILE_PATH } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { SentinelFunction, type SentinelFunctionProps } from '../../lib/sentinel-function';
import { STUB_INGEST_ENTRY, testApp } from './build-stack';
import { actionsOf, resourcesOf, roleStatements } from './iam-statements';

const PROPS: SentinelFunctionProps = {
  entry: STUB_INGEST_ENTRY,
  depsLockFilePath: DEPS_LOCK_FILE_PATH,
  label: 'probe Lambda',
  description: 'gpu-sentinel: a probe',
  serviceName: 'gpu-sentinel-probe',
  memoryMiB: 256,
  timeoutSeconds: 30,
};

function logicalId(stack: Stack, construct: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(construct.node.defaultChild as CfnResource);
}

describe('SentinelFunction', () => {
  let stack: Stack;
  let fn: SentinelFunction;
  let topic: sns.Topic;
  let template: Template;

  beforeAll(() => {
    stack = new Stack(testApp(), 'ProbeStack');
    topic = new sns.Topic(stack, 'Topic');
    fn = new SentinelFunction(stack, 'Probe', {
      ...PROPS,
      tracing: true,
      environment: { STATE_TABLE: 'state' },
      initialGrants: [(grantee) => topic.grantPublish(grantee)],
    });
    fn.addEnvironment({ TOPIC_INFO_ARN: topic.topicArn });
    iam.Grant.addToPrincipal({
      grantee: fn,
      actions: ['sqs:SendMessage'],
      resourceArns: ['arn:aws:sqs:::late'],
    });
    fn.grantInvoke(new iam.Role(stack, 'Operator', { assumedBy: new iam.AccountRootPrincipal() }));
    template = Template.fromStack(stack);
  });

  it('runs the handler on nodejs24.x, arm64, with X-Ray active when asked and the given memory and timeout', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      MemorySize: 256,
      Timeout: 30,
      TracingConfig: { Mode: 'Active' },
      Description: 'gpu-sentinel: a probe',
    });
  });

  it('sets the service name and source maps beside the given and added variables', () => {
    // Prepare / Act
    const variables =
      template.findResources('AWS::Lambda::Function')[logicalId(stack, fn.function)]?.Properties.Environment
        .Variables;

    // Assess
    expect(variables).toEqual({
      STATE_TABLE: 'state',
      TOPIC_INFO_ARN: { Ref: logicalId(stack, topic) },
      POWERTOOLS_SERVICE_NAME: 'gpu-sentinel-probe',
      NODE_OPTIONS: '--enable-source-maps',
    });
  });

  it('keeps its logs in its own log group, encrypted with the stack’s rotated key', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::Logs::LogGroup', {
      KmsKeyId: { 'Fn::GetAtt': [logicalId(stack, fn.logKey), 'Arn'] },
      RetentionInDays: 30,
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      Description: Match.stringLikeRegexp('encrypts its buckets, streams, topics, store and log groups'),
      EnableKeyRotation: true,
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      LoggingConfig: { LogGroup: { Ref: logicalId(stack, fn.logGroup) } },
    });
  });

  it('has a role trusted by Lambda only, with no managed policy', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::IAM::Role', {
      Description: 'gpu-sentinel probe Lambda: least privilege, written by hand',
      AssumeRolePolicyDocument: {
        Statement: [
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
        ],
      },
      ManagedPolicyArns: Match.absent(),
    });
  });

  it('traces nothing and grants no X-Ray action by default', () => {
    // Prepare
    const s = new Stack(testApp(), 'UntracedStack');
    const untraced = new SentinelFunction(s, 'Untraced', PROPS);

    // Act
    const t = Template.fromStack(s);
    const fnProps = t.findResources('AWS::Lambda::Function')[logicalId(s, untraced.function)]?.Properties;

    // Assess
    expect(fnProps).not.toHaveProperty('TracingConfig');
    expect(JSON.stringify(t.toJSON())).not.toContain('xray:');
  });

  it('lists its logs, the initial grants, X-Ray, then later grants, in that order', () => {
    // Prepare / Act
    const actions = roleStatements(template, logicalId(stack, fn.role)).map((s) =>
      actionsOf(s).sort().join(','),
    );

    // Assess
    expect(actions).toEqual([
      'logs:CreateLogStream,logs:PutLogEvents',
      'sns:Publish',
      'xray:PutTelemetryRecords,xray:PutTraceSegments',
      'sqs:SendMessage',
    ]);
  });

  it('grantInvoke allows lambda:InvokeFunction on the function and its versions only', () => {
    // Prepare
    const operator = stack.node.findChild('Operator') as iam.Role;

    // Act
    const statements = roleStatements(template, logicalId(stack, operator));

    // Assess
    expect(statements.map(actionsOf)).toEqual([['lambda:InvokeFunction']]);
    expect(resourcesOf(statements[0] as (typeof statements)[number])).toEqual([
      { 'Fn::GetAtt': [logicalId(stack, fn.function), 'Arn'] },
      { 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack, fn.function), 'Arn'] }, ':*']] },
    ]);
  });

  it('reserves concurrency only when asked', () => {
    // Prepare
    const s = new Stack(testApp(), 'ReservedStack');

    // Act
    const reserved = new SentinelFunction(s, 'Reserved', { ...PROPS, reservedConcurrentExecutions: 7 });
    const t = Template.fromStack(s);

    // Assess
    expect(
      t.findResources('AWS::Lambda::Function')[logicalId(s, reserved.function)]?.Properties,
    ).toMatchObject({
      ReservedConcurrentExecutions: 7,
    });
    expect(
      template.findResources('AWS::Lambda::Function')[logicalId(stack, fn.function)]?.Properties,
    ).not.toHaveProperty('ReservedConcurrentExecutions');
  });

  it.each([
    ['memoryMiB', { memoryMiB: 127 }, '`127` (number)'],
    ['memoryMiB', { memoryMiB: 10_241 }, '`10241` (number)'],
    ['memoryMiB', { memoryMiB: 256.5 }, '`256.5` (number)'],
    ['timeoutSeconds', { timeoutSeconds: 0 }, '`0` (number)'],
    ['timeoutSeconds', { timeoutSeconds: 901 }, '`901` (number)'],
    ['reservedConcurrentExecutions', { reservedConcurrentExecutions: 0 }, '`0` (number)'],
    ['reservedConcurrentExecutions', { reservedConcurrentExecutions: 0 }, 'quota >= N + 100'],
    ['reservedConcurrentExecutions', { reservedConcurrentExecutions: 7.5 }, '`7.5` (number)'],
    ['label', { label: ' ' }, '`" "` (string)'],
    ['serviceName', { serviceName: 'gpu sentinel' }, '`"gpu sentinel"` (string)'],
  ])('fails at synth naming %s (%j)', (prop, change, got) => {
    // Prepare / Act
    const build = () =>
      new SentinelFunction(new Stack(testApp(), 'BadStack'), 'Bad', { ...PROPS, ...change });

    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(`Expected \`${prop}\` to be`);
    expect(build).toThrow(got);
  });
});
