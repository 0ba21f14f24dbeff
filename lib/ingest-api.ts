import { Aws, RemovalPolicy, Size, Stack, Token, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import { Construct } from 'constructs';
import { API_BINARY_MEDIA_TYPES } from '../lambdas/contract/constants';
import {
  AGENT_ROLE_ARN_PATTERN,
  DEFAULT_THROTTLING_BURST_LIMIT,
  DEFAULT_THROTTLING_RATE_LIMIT,
  INGEST_STAGE_NAME,
  INSTANCE_CREDENTIALS_CONDITION_KEY,
  MIN_COMPRESSION_SIZE_BYTES,
  ORGANIZATION_ID_PATTERN,
} from './constants';
import { encryptedLogGroup } from './encrypted-log-group';
import { PropsValidationError } from './props-validation-error';
import { validatePattern, validatePositiveNumber } from './validate-props';

/** Path of the batches resource, below the stage. */
export const BATCHES_PATH = '/v1/batches';

/** Props of {@link IngestApi}. */
export interface IngestApiProps {
  /** The function behind `POST /v1/batches` (Lambda proxy integration). */
  readonly handler: lambda.IFunction;
  /**
   * AWS Organizations id whose principals may call the API (`aws:PrincipalOrgID`), pattern
   * `o-[a-z0-9]{10,32}`. Callers still need an IAM policy allowing `execute-api:Invoke`.
   * @default - only principals of this account
   */
  readonly organizationId?: string;
  /**
   * ARNs of the IAM roles agents sign with (their instance profiles' roles), `ArnLike` patterns
   * (`*`, `?`): the resource policy denies every other principal, whatever its own IAM policies
   * allow. At least one.
   */
  readonly agentRoleArns: readonly string[];
  /**
   * Keep the resource policy's `DenyWithoutInstanceCredentials` statement, which refuses requests
   * whose credentials carry no `ec2:SourceInstanceARN` (IAM sets the key for credentials an EC2
   * instance got from its instance profile). `false` drops it, for an account where API Gateway
   * does not evaluate the key and every agent gets 403 (`gpu-sentinel doctor` names the case); the
   * other Deny and the handler's checks (an agent-role session named after a running instance of
   * this account) still apply.
   * @default true
   */
  readonly requireInstanceCredentials?: boolean;
  /**
   * Stage-wide steady-state request rate, requests per second, > 0. The account-wide limit is
   * 10,000 rps in most regions (API Gateway quotas page).
   * @default 1000
   */
  readonly throttlingRateLimit?: number;
  /**
   * Stage-wide burst, requests, > 0 (token bucket size; account default 5,000).
   * @default 2000
   */
  readonly throttlingBurstLimit?: number;
  /**
   * How long access logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * X-Ray active tracing of the stage: a trace per request ($5 per million recorded, AWS X-Ray pricing
   * page).
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * Create the account's API Gateway CloudWatch Logs role (`AWS::ApiGateway::Account`, one per
   * account and region) so that access and execution logging work. Set `false` when the account
   * already has one, e.g. from another stack.
   * @default true
   */
  readonly apiGatewayCloudWatchRole?: boolean;
  /**
   * ARN of a regional AWS WAFv2 web ACL to associate with the stage.
   * @default - no WAF (the API already requires SigV4 and a resource policy)
   */
  readonly webAclArn?: string;
}

/**
 * The ingest REST API (API Gateway v1, docs/design.md §11): `POST /v1/batches` with IAM (SigV4)
 * authorization and a Lambda proxy integration; a resource policy allowing `execute-api:Invoke`
 * only to principals of this account (or of an organization), and denying it to any principal that
 * is not one of the agent roles or that did not sign with EC2 instance-profile credentials (see
 * {@link agentResourcePolicy}); regional endpoint; stage `prod` with
 * access logging (JSON), execution logging (ERROR), throttling and, when asked, X-Ray tracing; a request
 * validator; payload compression on, so API Gateway decompresses `Content-Encoding: gzip` request
 * bodies, and gzip media types declared binary so an undecompressed gzip body reaches the handler
 * base64-encoded (the handler accepts both).
 *
 * @example
 * const api = new IngestApi(this, 'IngestApi', { handler: fn, organizationId: 'o-a1b2c3d4e5' });
 * api.grantIngest(gpuInstanceRole);
 */
export class IngestApi extends Construct {
  /** The REST API. */
  readonly api: apigw.RestApi;
  /** The `POST /v1/batches` method. */
  readonly batchesMethod: apigw.Method;
  /** The access log group. */
  readonly accessLogGroup: logs.LogGroup;
  /** `https://<api id>.execute-api.<region>.<suffix>/prod/v1/batches`: where agents POST. */
  readonly batchesUrl: string;
  /** `arn:<partition>:execute-api:<region>:<account>:<api id>/prod/POST/v1/batches`. */
  readonly batchesArn: string;

  /**
   * @throws {PropsValidationError} when `organizationId` does not match `o-[a-z0-9]{10,32}`, a
   *   throttling limit is not a finite number > 0, or `agentRoleArns` is empty or holds a value
   *   that is not an IAM role ARN
   */
  constructor(scope: Construct, id: string, props: IngestApiProps) {
    super(scope, id);
    const throttlingRateLimit = validatePositiveNumber(
      'throttlingRateLimit',
      props.throttlingRateLimit ?? DEFAULT_THROTTLING_RATE_LIMIT,
    );
    const throttlingBurstLimit = validatePositiveNumber(
      'throttlingBurstLimit',
      props.throttlingBurstLimit ?? DEFAULT_THROTTLING_BURST_LIMIT,
    );
    const organizationId =
      props.organizationId === undefined
        ? undefined
        : validatePattern(
            'organizationId',
            props.organizationId,
            ORGANIZATION_ID_PATTERN,
            'an AWS Organizations id matching o-[a-z0-9]{10,32}',
          );
    const cloudWatchRole = props.apiGatewayCloudWatchRole ?? true;
    const agentRoleArns = validateAgentRoleArns(props.agentRoleArns);

    this.accessLogGroup = encryptedLogGroup(this, {
      groupId: 'AccessLogGroup',
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.RETAIN,
    }).logGroup;
    this.api = this.createRestApi({
      policy: agentResourcePolicy(organizationId, agentRoleArns, props.requireInstanceCredentials ?? true),
      cloudWatchRole,
      throttlingRateLimit,
      throttlingBurstLimit,
      tracing: props.tracing === true,
    });

    this.batchesMethod = this.addBatchesMethod(props.handler);
    this.batchesUrl = this.api.urlForPath(BATCHES_PATH);
    this.batchesArn = this.api.arnForExecuteApi('POST', BATCHES_PATH, INGEST_STAGE_NAME);

    if (props.webAclArn !== undefined) {
      new wafv2.CfnWebACLAssociation(this, 'WebAclAssociation', {
        resourceArn: this.api.deploymentStage.stageArn,
        webAclArn: props.webAclArn,
      });
    }
    this.acknowledgeFindings(props.webAclArn !== undefined, cloudWatchRole);
  }

  /**
   * Lets `grantee` send batches: `execute-api:Invoke` on exactly
   * `arn:<partition>:execute-api:<region>:<account>:<api id>/prod/POST/v1/batches`.
   *
   * @param grantee - the principal to grant to (e.g. a GPU instance role)
   * @returns the grant
   */
  grantIngest(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['execute-api:Invoke'],
      resourceArns: [this.batchesArn],
    });
  }

  /**
   * The REST API (`Api`): regional, per-stack name (API Gateway keys its metrics by name), the
   * resource policy, compression on (so gzip request bodies are decompressed), gzip media types
   * binary, and stage `prod` with throttling, ERROR execution logs, JSON access logs, no detailed
   * metrics, and X-Ray when asked.
   */
  private createRestApi(settings: {
    readonly policy: iam.PolicyDocument;
    readonly cloudWatchRole: boolean;
    readonly throttlingRateLimit: number;
    readonly throttlingBurstLimit: number;
    readonly tracing: boolean;
  }): apigw.RestApi {
    return new apigw.RestApi(this, 'Api', {
      // API Gateway keys its CloudWatch metrics by ApiName: a per-stack name keeps two stacks in one
      // region from sharing their 5XXError/Latency series and so the Ingest5xx alarm.
      restApiName: `${Stack.of(this).stackName}-ingest`,
      description: 'gpu-sentinel ingest API: agents POST SigV4-signed gzip JSON batches',
      endpointConfiguration: { types: [apigw.EndpointType.REGIONAL] },
      policy: settings.policy,
      minCompressionSize: Size.bytes(MIN_COMPRESSION_SIZE_BYTES),
      binaryMediaTypes: [...API_BINARY_MEDIA_TYPES],
      cloudWatchRole: settings.cloudWatchRole,
      // aws-cdk-lib refuses a removal policy for a role it is told not to create.
      ...(settings.cloudWatchRole ? { cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN } : {}),
      deployOptions: {
        stageName: INGEST_STAGE_NAME,
        tracingEnabled: settings.tracing,
        throttlingRateLimit: settings.throttlingRateLimit,
        throttlingBurstLimit: settings.throttlingBurstLimit,
        loggingLevel: apigw.MethodLoggingLevel.ERROR,
        dataTraceEnabled: false,
        // Detailed (per-method) metrics are billed as custom metrics; the alarms and the dashboard
        // read the API-level ones (dimension ApiName), which API Gateway sends anyway.
        metricsEnabled: false,
        accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogGroup),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields({
          caller: true,
          httpMethod: true,
          ip: true,
          protocol: true,
          requestTime: true,
          resourcePath: true,
          responseLength: true,
          status: true,
          user: true,
        }),
      },
    });
  }

  /** `POST /v1/batches`: IAM authorization, the request validator, a Lambda proxy integration. */
  private addBatchesMethod(handler: lambda.IFunction): apigw.Method {
    const validator = this.api.addRequestValidator('RequestValidator', {
      validateRequestBody: true,
      validateRequestParameters: true,
    });
    const batches = this.api.root.addResource('v1').addResource('batches');
    return batches.addMethod(
      'POST',
      new apigw.LambdaIntegration(handler, { proxy: true, allowTestInvoke: false }),
      { authorizationType: apigw.AuthorizationType.IAM, requestValidator: validator },
    );
  }

  /** Tells cdk-nag why there is no WAF (when none is given), no Cognito, and an AWS managed logging policy. */
  private acknowledgeFindings(hasWebAcl: boolean, cloudWatchRole: boolean): void {
    if (!hasWebAcl) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-APIG3',
        reason:
          'WAF is optional (prop webAclArn): every request must be SigV4-signed by a principal of this ' +
          'account or organization, enforced by IAM auth and the resource policy.',
      });
    }
    Validations.of(this.batchesMethod).acknowledge({
      id: 'AwsSolutions-COG4',
      reason: 'The API uses IAM (SigV4) authorization with the GPU instance roles, not Cognito user pools.',
    });
    if (cloudWatchRole) {
      Validations.of(this.api).acknowledge({
        id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
        reason:
          'The account-wide API Gateway logging role (created by RestApi cloudWatchRole) needs exactly the ' +
          'AWS-maintained logging policy; it is required for access and execution logging.',
      });
    }
  }
}

/**
 * The ingest API's resource policy. API Gateway with IAM authorization admits a caller of the API's
 * own account when either its identity policy or this policy allows it and neither denies it; a
 * caller of another account needs both to allow (API Gateway developer guide, "How API Gateway
 * resource policies affect authorization workflow"). An Allow here therefore cannot narrow who of
 * the account may call; only explicit Denies can, so:
 *
 * - `AllowThisAccount` (or `AllowThisOrganization` with `aws:PrincipalOrgID`): who may call at all;
 * - `DenyOtherThanAgentRoles`: `ArnNotLike aws:PrincipalArn <agent roles>` (for a role session
 *   `aws:PrincipalArn` is the role's ARN, so a session name cannot change it);
 * - `DenyWithoutInstanceCredentials`: `Null ec2:SourceInstanceARN = true`: credentials that an EC2
 *   instance did not obtain from its instance profile, e.g. an `sts:AssumeRole` of the agent role
 *   from anywhere else with a session name forged to an instance id.
 *
 * @param organizationId - AWS Organizations id, or undefined for this account only
 * @param agentRoleArns - the agent roles (ArnLike patterns)
 * @param requireInstanceCredentials - keep `DenyWithoutInstanceCredentials`. @default true
 * @returns the policy document
 */
export function agentResourcePolicy(
  organizationId: string | undefined,
  agentRoleArns: readonly string[],
  requireInstanceCredentials = true,
): iam.PolicyDocument {
  const resources = [`execute-api:/${INGEST_STAGE_NAME}/POST${BATCHES_PATH}`];
  const allow =
    organizationId === undefined
      ? new iam.PolicyStatement({
          sid: 'AllowThisAccount',
          principals: [new iam.AccountPrincipal(Aws.ACCOUNT_ID)],
          actions: ['execute-api:Invoke'],
          resources,
        })
      : new iam.PolicyStatement({
          sid: 'AllowThisOrganization',
          principals: [new iam.AnyPrincipal()],
          actions: ['execute-api:Invoke'],
          resources,
          conditions: { StringEquals: { 'aws:PrincipalOrgID': organizationId } },
        });
  const deny = (sid: string, conditions: Record<string, Record<string, unknown>>): iam.PolicyStatement =>
    new iam.PolicyStatement({
      sid,
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['execute-api:Invoke'],
      resources,
      conditions,
    });
  const denyOtherRoles = deny('DenyOtherThanAgentRoles', {
    ArnNotLike: { 'aws:PrincipalArn': [...agentRoleArns] },
  });
  const denyOtherCredentials = deny('DenyWithoutInstanceCredentials', {
    Null: { [INSTANCE_CREDENTIALS_CONDITION_KEY]: 'true' },
  });
  return new iam.PolicyDocument({
    statements: [allow, denyOtherRoles, ...(requireInstanceCredentials ? [denyOtherCredentials] : [])],
  });
}

function validateAgentRoleArns(arns: readonly string[]): readonly string[] {
  if (!Array.isArray(arns) || arns.length === 0) {
    throw new PropsValidationError('agentRoleArns', 'at least one IAM role ARN', arns);
  }
  for (const arn of arns) {
    if (!Token.isUnresolved(arn)) {
      validatePattern(
        'agentRoleArns',
        arn,
        AGENT_ROLE_ARN_PATTERN,
        'IAM role ARNs like arn:aws:iam::123456789012:role/GpuNodeRole',
      );
    }
  }
  return arns;
}
