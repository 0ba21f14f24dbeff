import type { CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AthenaTelemetryStore } from '../../lib/athena-telemetry-store';
import { REPORT_SCHEDULES } from '../../lib/constants';
import type { FinanceReports } from '../../lib/finance-reports';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import type { TelemetryDatabase } from '../../lib/telemetry-database';
import { buildStack } from './build-stack';
import { actionsOf, resourcesOf, roleStatements, type TemplateStatement } from './iam-statements';

function logicalId(stack: GpuSentinelStack, resource: { node: { defaultChild?: unknown } }): string {
  return stack.getLogicalId(resource.node.defaultChild as CfnResource);
}

describe('FinanceReports', () => {
  let stack: GpuSentinelStack;
  let template: Template;
  let statements: TemplateStatement[];
  let reports: FinanceReports;
  let database: TelemetryDatabase;

  beforeAll(() => {
    stack = buildStack({ store: 'timestream' });
    reports = stack.reports as FinanceReports;
    database = stack.database as TelemetryDatabase;
    template = Template.fromStack(stack);
    statements = roleStatements(template, logicalId(stack, reports.role));
  });

  it('keeps reports in a private, versioned bucket encrypted with the stack’s rotated KMS key, with access logs', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::S3::Bucket', {
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [
          {
            BucketKeyEnabled: true,
            ServerSideEncryptionByDefault: {
              SSEAlgorithm: 'aws:kms',
              KMSMasterKeyID: { 'Fn::GetAtt': [logicalId(stack, reports.key), 'Arn'] },
            },
          },
        ],
      },
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      VersioningConfiguration: { Status: 'Enabled' },
      LoggingConfiguration: Match.objectLike({ LogFilePrefix: 'reports-bucket/' }),
    });
    template.hasResourceProperties('AWS::KMS::Key', {
      Description: Match.stringLikeRegexp('encrypts its buckets, streams, topics, store and log groups'),
      EnableKeyRotation: true,
    });
  });

  it('refuses every request to the reports bucket that is not TLS', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logicalId(stack, reports.bucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('runs the report Lambda on nodejs24.x, arm64, 1 GiB, 300 s, with the documented environment', () => {
    // Prepare
    const fn = template.findResources('AWS::Lambda::Function')[logicalId(stack, reports.function)];
    // Act
    const props = fn?.Properties;
    // Assess
    expect(props).toMatchObject({
      Runtime: 'nodejs24.x',
      Architectures: ['arm64'],
      MemorySize: 1024,
      Timeout: 300,
    });
    expect(props).not.toHaveProperty('TracingConfig');
    expect(Object.keys(props.Environment.Variables).sort()).toEqual([
      'NODE_OPTIONS',
      'POWERTOOLS_SERVICE_NAME',
      'REPORTS_BUCKET',
      'REPORTS_KEY_ARN',
      'STORE',
      'TIMESTREAM_DATABASE',
      'TIMESTREAM_EFA_TABLE',
      'TIMESTREAM_EVENTS_TABLE',
      'TIMESTREAM_GPU_TABLE',
      'TOPIC_REPORTS_ARN',
    ]);
  });

  it('grants the report Lambda exactly what it uses', () => {
    // Prepare / Act
    const grants = statements.map((s) => [actionsOf(s).sort().join(','), resourcesOf(s)]);
    // Assess
    expect(grants).toEqual([
      [
        'logs:CreateLogStream,logs:PutLogEvents',
        [expect.objectContaining({ 'Fn::GetAtt': expect.any(Array) })],
      ],
      ['timestream:Select', [{ 'Fn::GetAtt': [stack.getLogicalId(database.gpuTable), 'Arn'] }]],
      // The minimizePolicies feature flag merges the statements on `*` into one.
      ['timestream:DescribeEndpoints', ['*']],
      [
        's3:PutObject',
        [
          {
            'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack, reports.bucket), 'Arn'] }, '/reports/*']],
          },
        ],
      ],
      // One key encrypts the reports bucket and the topics: minimizePolicies merges the two grants.
      ['kms:Decrypt,kms:GenerateDataKey', [{ 'Fn::GetAtt': [logicalId(stack, reports.key), 'Arn'] }]],
      ['sns:Publish', [{ Ref: logicalId(stack, stack.topics.reports) }]],
    ]);
    expect(reports.key).toBe(stack.topics.key);
    expect(statements.every((s) => s.Effect === 'Allow')).toBe(true);
  });

  it.each(Object.entries(REPORT_SCHEDULES))(
    'runs the %s report on %s UTC with its period as input',
    (period, cron) => {
      // Prepare / Act / Assess
      template.hasResourceProperties('AWS::Scheduler::Schedule', {
        ScheduleExpression: cron,
        ScheduleExpressionTimezone: 'Etc/UTC',
        State: 'ENABLED',
        Target: Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(stack, reports.function), 'Arn'] },
          Input: JSON.stringify({ period }),
          RetryPolicy: { MaximumEventAgeInSeconds: 21600, MaximumRetryAttempts: 3 },
        }),
      });
    },
  );

  it('lets the schedules only invoke the report Lambda, trusted from this account only', () => {
    // Prepare
    const schedules = Object.values(template.findResources('AWS::Scheduler::Schedule')).filter(
      (s) => s.Properties.Target.Arn['Fn::GetAtt'][0] === logicalId(stack, reports.function),
    );
    const roleArns = new Set(schedules.map((s) => JSON.stringify(s.Properties.Target.RoleArn)));
    const [roleArn] = [...roleArns];
    const scheduleRoleId = (JSON.parse(roleArn as string) as { 'Fn::GetAtt': [string, string] })[
      'Fn::GetAtt'
    ][0];
    // Act
    const invoke = roleStatements(template, scheduleRoleId);
    // Assess
    expect(roleArns.size).toBe(1);
    expect(invoke.flatMap(actionsOf)).toEqual(['lambda:InvokeFunction']);
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          Match.objectLike({
            Principal: { Service: 'scheduler.amazonaws.com' },
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          }),
        ],
      },
    });
  });

  it('reads the Athena store through its read grant when the store is athena', () => {
    // Prepare
    const athena = buildStack();
    const athenaTemplate = Template.fromStack(athena);
    const store = athena.athenaStore as AthenaTelemetryStore;
    // Act
    const grants = roleStatements(athenaTemplate, logicalId(athena, athena.reports.role)).map((s) => [
      actionsOf(s).sort().join(','),
      resourcesOf(s).length,
    ]);
    const env =
      athenaTemplate.findResources('AWS::Lambda::Function')[logicalId(athena, athena.reports.function)]
        ?.Properties.Environment.Variables;
    // Assess
    expect(grants).toEqual([
      ['logs:CreateLogStream,logs:PutLogEvents', 1],
      [
        'athena:GetQueryExecution,athena:GetQueryResults,athena:StartQueryExecution,athena:StopQueryExecution',
        1,
      ],
      ['glue:GetDatabase,glue:GetTable', 5],
      ['s3:GetBucketLocation,s3:ListBucket', 1],
      ['s3:GetObject', 3],
      ['s3:AbortMultipartUpload,s3:GetObject,s3:PutObject', 1],
      // The stack's one key: minimizePolicies merges the store's, the bucket's and the topics' grants.
      ['kms:Decrypt,kms:GenerateDataKey', 1],
      ['s3:PutObject', 1],
      ['sns:Publish', 1],
    ]);
    expect(env).toMatchObject({
      STORE: 'athena',
      ATHENA_DATABASE: expect.anything(),
      ATHENA_WORKGROUP: expect.anything(),
    });
    expect(
      JSON.stringify(roleStatements(athenaTemplate, logicalId(athena, athena.reports.role))),
    ).not.toContain('timestream');
    expect(JSON.stringify(roleStatements(athenaTemplate, logicalId(athena, athena.reports.role)))).toContain(
      `${logicalId(athena, store.bucket)}`,
    );
  });

  it('outputs the reports bucket name', () => {
    // Prepare / Act / Assess
    template.hasOutput('ReportsBucketName', { Value: { Ref: logicalId(stack, reports.bucket) } });
  });
});
