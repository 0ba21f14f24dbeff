import type { CfnResource } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { stackPropsFromContext } from '../../bin/cdk-app-context';
import { API_BINARY_MEDIA_TYPES } from '../../lambdas/contract/constants';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { batchesInvokeArn, buildStack } from './build-stack';

/** A Deny of `execute-api:Invoke` on the batches resource to anyone, under `condition`. */
function denyInvoke(sid: string, condition: Record<string, unknown>): Record<string, unknown> {
  return {
    Sid: sid,
    Effect: 'Deny',
    Action: 'execute-api:Invoke',
    Principal: { AWS: '*' },
    Resource: 'execute-api:/prod/POST/v1/batches',
    Condition: condition,
  };
}

describe('IngestApi', () => {
  let stack: GpuSentinelStack;
  let template: Template;
  let apiLogicalId: string;

  beforeAll(() => {
    stack = buildStack();
    template = Template.fromStack(stack);
    apiLogicalId = stack.getLogicalId(stack.api.api.node.defaultChild as CfnResource);
  });

  it('names the REST API after its stack, so two stacks in one region keep their API Gateway metrics apart', () => {
    // Prepare / Act / Assess (API Gateway's metrics and the Ingest5xx alarm are keyed by ApiName)
    template.hasResourceProperties('AWS::ApiGateway::RestApi', { Name: 'TestStack-ingest' });
  });

  it('exposes POST /v1/batches with AWS_IAM authorization and a Lambda proxy integration', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::ApiGateway::Method', 1);
    template.hasResourceProperties('AWS::ApiGateway::Method', {
      HttpMethod: 'POST',
      AuthorizationType: 'AWS_IAM',
      Integration: { Type: 'AWS_PROXY', IntegrationHttpMethod: 'POST' },
      RequestValidatorId: Match.anyValue(),
    });
    template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'v1' });
    template.hasResourceProperties('AWS::ApiGateway::Resource', { PathPart: 'batches' });
  });

  it('validates request parameters and bodies', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::ApiGateway::RequestValidator', {
      RestApiId: { Ref: apiLogicalId },
      ValidateRequestBody: true,
      ValidateRequestParameters: true,
    });
  });

  it('allows principals of this account, and denies all but the agent role with instance credentials', () => {
    // Prepare
    const roleId = stack.getLogicalId(stack.agentRole.role.node.defaultChild as CfnResource);
    // Act / Assess
    template.hasResourceProperties('AWS::ApiGateway::RestApi', {
      Policy: {
        Statement: [
          {
            Sid: 'AllowThisAccount',
            Effect: 'Allow',
            Action: 'execute-api:Invoke',
            Principal: {
              AWS: {
                'Fn::Join': [
                  '',
                  ['arn:', { Ref: 'AWS::Partition' }, ':iam::', { Ref: 'AWS::AccountId' }, ':root'],
                ],
              },
            },
            Resource: 'execute-api:/prod/POST/v1/batches',
          },
          denyInvoke('DenyOtherThanAgentRoles', {
            ArnNotLike: { 'aws:PrincipalArn': [{ 'Fn::GetAtt': [roleId, 'Arn'] }] },
          }),
          denyInvoke('DenyWithoutInstanceCredentials', { Null: { 'ec2:SourceInstanceARN': 'true' } }),
        ],
      },
    });
  });

  it('allows principals of the organization when organizationId is set, with the same Denies', () => {
    // Prepare
    const orgStack = buildStack({ organizationId: 'o-a1b2c3d4e5' });

    // Act
    const statements = Object.values(
      Template.fromStack(orgStack).findResources('AWS::ApiGateway::RestApi'),
    )[0]!.Properties.Policy.Statement as { Sid: string }[];

    // Assess
    expect(statements[0]).toEqual({
      Sid: 'AllowThisOrganization',
      Effect: 'Allow',
      Action: 'execute-api:Invoke',
      Principal: { AWS: '*' },
      Resource: 'execute-api:/prod/POST/v1/batches',
      Condition: { StringEquals: { 'aws:PrincipalOrgID': 'o-a1b2c3d4e5' } },
    });
    expect(statements.map((st) => st.Sid)).toEqual([
      'AllowThisOrganization',
      'DenyOtherThanAgentRoles',
      'DenyWithoutInstanceCredentials',
    ]);
  });

  it.each([
    ['arn:aws:iam::123456789012:user/alice'],
    ['GpuNodeRole'],
    ['arn:aws:sts::123456789012:assumed-role/R/i-0abc'],
  ])('fails at synth when agentRoleArns holds %s, naming the prop', (arn) => {
    expect(() => buildStack({ agentRoleArns: [arn] })).toThrow(PropsValidationError);
    expect(() => buildStack({ agentRoleArns: [arn] })).toThrow(/agentRoleArns/);
  });

  it('turns on compression and declares gzip bodies binary, on a regional endpoint', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::ApiGateway::RestApi', {
      MinimumCompressionSize: 1024,
      // the same list the local API Gateway model base64-encodes
      BinaryMediaTypes: [...API_BINARY_MEDIA_TYPES],
      EndpointConfiguration: { Types: ['REGIONAL'] },
    });
  });

  it('deploys stage prod with throttling, execution and JSON access logging, no X-Ray and no detailed metrics', () => {
    // Prepare
    const accessLogGroupId = stack.getLogicalId(stack.api.accessLogGroup.node.defaultChild as CfnResource);

    // Act / Assess
    template.hasResourceProperties('AWS::ApiGateway::Stage', {
      StageName: 'prod',
      TracingEnabled: false,
      AccessLogSetting: {
        // cdk.json's @aws-cdk/aws-apigateway:logGroupDestinationArnWithoutWildcard: the log group's ARN without ":*"
        DestinationArn: {
          'Fn::Join': [
            '',
            [
              'arn:',
              { Ref: 'AWS::Partition' },
              ':logs:',
              { Ref: 'AWS::Region' },
              ':',
              { Ref: 'AWS::AccountId' },
              ':log-group:',
              { Ref: accessLogGroupId },
            ],
          ],
        },
        Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"'),
      },
      MethodSettings: [
        Match.objectLike({
          HttpMethod: '*',
          ResourcePath: '/*',
          LoggingLevel: 'ERROR',
          DataTraceEnabled: false,
          MetricsEnabled: false,
          ThrottlingRateLimit: 1000,
          ThrottlingBurstLimit: 2000,
        }),
      ],
    });
  });

  it('traces the stage with X-Ray when asked', () => {
    // Prepare / Act
    const traced = Template.fromStack(buildStack({ tracing: true }));

    // Assess
    traced.hasResourceProperties('AWS::ApiGateway::Stage', { TracingEnabled: true });
  });

  it('keeps access logs one month', () => {
    // Prepare
    const accessLogGroupId = stack.getLogicalId(stack.api.accessLogGroup.node.defaultChild as CfnResource);

    // Act
    const group = template.findResources('AWS::Logs::LogGroup')[accessLogGroupId];

    // Assess
    expect(group?.Properties.RetentionInDays).toBe(30);
  });

  it('creates the account logging role for API Gateway by default, retained (it is account-wide)', () => {
    // Prepare / Act
    const accounts = Object.values(template.findResources('AWS::ApiGateway::Account'));
    const pushRoles = Object.values(template.findResources('AWS::IAM::Role')).filter((r) =>
      JSON.stringify(r.Properties?.ManagedPolicyArns ?? []).includes('AmazonAPIGatewayPushToCloudWatchLogs'),
    );

    // Assess
    expect(accounts).toHaveLength(1);
    expect(accounts[0]?.DeletionPolicy).toBe('Retain');
    expect(pushRoles).toHaveLength(1);
    expect(pushRoles[0]?.DeletionPolicy).toBe('Retain');
  });

  it('synthesizes from `-c apiGatewayCloudWatchRole=false` and leaves the account-wide setting alone', () => {
    // Prepare
    const props = stackPropsFromContext(
      { tryGetContext: (k) => (k === 'apiGatewayCloudWatchRole' ? 'false' : undefined) },
      {},
    );
    const s = buildStack(props);

    // Act
    const t = Template.fromStack(s);
    const nag = new AwsSolutionsChecks(undefined, { verbose: true }).validateScope(s).violations;

    // Assess
    t.resourceCountIs('AWS::ApiGateway::Account', 0);
    t.resourceCountIs('AWS::ApiGateway::RestApi', 1);
    expect(JSON.stringify(t.toJSON())).not.toContain('AmazonAPIGatewayPushToCloudWatchLogs');
    expect(nag.map((v) => v.ruleName)).toEqual([]);
  });

  it('lets only API Gateway invoke the function, from this method', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::Lambda::Permission', 1);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'apigateway.amazonaws.com',
      SourceArn: Match.objectLike({ 'Fn::Join': Match.anyValue() }),
    });
  });

  it('grantIngest allows execute-api:Invoke on POST /v1/batches of stage prod only', () => {
    // Prepare
    const role = new iam.Role(stack, 'GpuInstanceRole', {
      assumedBy: new iam.ServicePrincipal('ec2.amazonaws.com'),
    });

    // Act
    stack.grantIngest(role);
    const policy = stack.resolve((role.node.findChild('DefaultPolicy') as iam.Policy).document.toJSON());

    // Assess
    expect(policy.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: batchesInvokeArn(apiLogicalId),
      },
    ]);
  });

  it.each([
    ['throttlingRateLimit', { throttlingRateLimit: 0 }, '`0` (number)'],
    ['throttlingRateLimit', { throttlingRateLimit: -5 }, '`-5` (number)'],
    ['throttlingRateLimit', { throttlingRateLimit: Number.NaN }, '`NaN`'],
    ['throttlingBurstLimit', { throttlingBurstLimit: 0 }, '`0` (number)'],
    ['throttlingBurstLimit', { throttlingBurstLimit: Number.POSITIVE_INFINITY }, '`Infinity`'],
    ['organizationId', { organizationId: 'o-short' }, '`"o-short"`'],
    ['organizationId', { organizationId: 'O-A1B2C3D4E5' }, '`"O-A1B2C3D4E5"`'],
    ['organizationId', { organizationId: '123456789012' }, '`"123456789012"`'],
  ])('fails if %s is invalid (%j)', (prop, props, got) => {
    // Prepare / Act
    const build = () => buildStack(props);

    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(`Expected \`${prop}\` to be`);
    expect(build).toThrow(got);
  });
});
