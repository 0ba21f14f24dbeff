import { Aws, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE } from '../lambdas/domain/cloudwatch-metrics';
import type {
  COMMON_VARIABLES,
  LambdaEnvironment,
  StackVariables,
} from '../lambdas/domain/lambda-environment';
import type { AlertTopics } from './alert-topics';
import {
  FLEET_MEMORY_MIB,
  FLEET_RATE_MINUTES,
  FLEET_SERVICE_NAME,
  FLEET_TIMEOUT_SECONDS,
  REGION_PATTERN,
} from './constants';
import { encryptedLogGroup } from './encrypted-log-group';
import {
  INGEST_RUNTIME,
  LAMBDA_BUNDLING,
  validateMetricsTeams,
  validateRuleThresholds,
} from './ingest-function';
import { lambdaServiceRole } from './lambda-service-role';
import { PropsValidationError } from './props-validation-error';
import type { RemediationState } from './remediation-state';
import { scheduleInvokeRole } from './schedule-invoke-role';
import { starResourceReason } from './star-resource-reason';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validatePattern } from './validate-props';

/** Props of {@link FleetEvaluator}. */
export interface FleetEvaluatorProps {
  /** Absolute path of the evaluator's entry file (TypeScript), bundled by esbuild. */
  readonly entry: string;
  /** Absolute path of the lock file next to the project's package.json (bundling root). */
  readonly depsLockFilePath: string;
  /** The telemetry store read (its `grantRead` and environment). */
  readonly store: TelemetryStoreResources;
  /** The alert topics (`critical`, `warning`, `info`); fleet alerts go to the topic of their severity. */
  readonly topics: AlertTopics;
  /** The state table: alert leases, cooldowns and firing records, shared with ingest. */
  readonly state: RemediationState;
  /**
   * Regions whose running GPU instances are listed (`FLEET_REGIONS`), AWS region codes, at least one.
   * @default - the stack's region
   */
  readonly regions?: readonly string[];
  /**
   * Rule-threshold overrides by name, the same table as ingest (`agentSilentAfterS`, `fleetWasteRateAtLeast`, …).
   * @default - none (the thresholds table's defaults)
   */
  readonly ruleThresholds?: Readonly<Record<string, number>>;
  /**
   * Teams with their own CloudWatch `Team` value on the evaluator's waste metrics (`METRICS_TEAMS`),
   * the same list as ingest's (`IngestFunctionProps.metricsTeams`); others are summed as `other`.
   * @default - none
   */
  readonly metricsTeams?: readonly string[];
  /**
   * How long the function's logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the log group and its key when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly logRemovalPolicy?: RemovalPolicy;
}

/**
 * The fleet evaluator (docs/design.md §6): a Lambda run every 5 minutes by EventBridge Scheduler that
 * judges the fleet rules (`agent_silent`, the cross-node `straggler`, `waste_rate` per team) over the
 * store and EC2's running GPU instances, sends their alerts to the SNS topics with the ingest alert
 * lifecycle (state table), and publishes the fleet metrics to CloudWatch (namespace `GpuSentinel`).
 *
 * The function's role, written by hand: `logs:CreateLogStream`/`PutLogEvents` on its log group; the
 * store's read grant; `sns:Publish` on the alert topics with their key; DynamoDB read/write on the
 * state table; `ec2:DescribeInstances` on `*` (no resource-level permission);
 * `cloudwatch:PutMetricData` on `*` only when `cloudwatch:namespace` is `GpuSentinel`; X-Ray. The
 * schedule's role (trusting `scheduler.amazonaws.com` from this account only) may only invoke it.
 *
 * Construct IDs are a contract: `LogKey`, `LogGroup`, `ServiceRole`, `Function`, `ScheduleRole`, `Schedule`.
 *
 * @example
 * new FleetEvaluator(this, 'FleetEvaluator', { entry, depsLockFilePath, store, topics, state });
 */
export class FleetEvaluator extends Construct {
  /** The evaluator Lambda. */
  readonly function: nodejs.NodejsFunction;
  /** Its execution role. */
  readonly role: iam.Role;
  /** Its log group, KMS-encrypted. */
  readonly logGroup: logs.LogGroup;
  /** The key of its log group. */
  readonly logKey: kms.Key;
  /** The 5-minute schedule. */
  readonly schedule: scheduler.Schedule;

  /**
   * @throws {PropsValidationError} when `regions` is empty or names something that is not a region
   *   code, or a rule threshold is unknown or out of its range
   */
  constructor(scope: Construct, id: string, props: FleetEvaluatorProps) {
    super(scope, id);
    const regions = validateRegions(props.regions);
    const ruleThresholds = validateRuleThresholds(props.ruleThresholds ?? {});
    const metricsTeams = validateMetricsTeams(props.metricsTeams ?? []);

    const logs_ = encryptedLogGroup(this, {
      keyId: 'LogKey',
      groupId: 'LogGroup',
      description: 'gpu-sentinel: encrypts the fleet evaluator log group',
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    });
    this.logKey = logs_.key;
    this.logGroup = logs_.logGroup;
    this.role = lambdaServiceRole(this, this.logGroup, 'fleet evaluator');
    props.store.grantRead(this.role);
    props.topics.grantPublishAlerts(this.role);
    props.state.grantReadWrite(this.role);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ListRunningGpuInstances',
        actions: ['ec2:DescribeInstances'],
        resources: ['*'],
      }),
    );
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'PutFleetMetrics',
        actions: ['cloudwatch:PutMetricData'],
        resources: ['*'],
        conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
      }),
    );

    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry,
      depsLockFilePath: props.depsLockFilePath,
      handler: 'handler',
      runtime: INGEST_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: FLEET_MEMORY_MIB,
      timeout: Duration.seconds(FLEET_TIMEOUT_SECONDS),
      tracing: lambda.Tracing.ACTIVE,
      role: this.role,
      logGroup: this.logGroup,
      description:
        'gpu-sentinel: fleet rules every 5 minutes (agent_silent, straggler per job, waste_rate per team)',
      bundling: {
        ...LAMBDA_BUNDLING,
        mainFields: [...LAMBDA_BUNDLING.mainFields],
        externalModules: [...LAMBDA_BUNDLING.externalModules],
      },
      environment: {
        ...props.store.environment(),
        TOPIC_CRITICAL_ARN: props.topics.critical.topicArn,
        TOPIC_WARNING_ARN: props.topics.warning.topicArn,
        TOPIC_INFO_ARN: props.topics.info.topicArn,
        STATE_TABLE: props.state.table.tableName,
        FLEET_REGIONS: regions.join(','),
        RULE_THRESHOLDS: JSON.stringify(ruleThresholds),
        ...(metricsTeams.length === 0 ? {} : { METRICS_TEAMS: metricsTeams.join(',') }),
        POWERTOOLS_SERVICE_NAME: FLEET_SERVICE_NAME,
        NODE_OPTIONS: '--enable-source-maps',
      } satisfies LambdaEnvironment<'fleetEvaluator'> & StackVariables<typeof COMMON_VARIABLES>,
    });

    const scheduleRole = scheduleInvokeRole(this, 'ScheduleRole', this.function, 'the fleet evaluator');
    this.schedule = new scheduler.Schedule(this, 'Schedule', {
      description: 'gpu-sentinel fleet rules, every 5 minutes',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(FLEET_RATE_MINUTES)),
      target: new targets.LambdaInvoke(this.function, {
        role: scheduleRole,
        // A missed run is replaced by the next one 5 minutes later: no retry, no stale run.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(FLEET_RATE_MINUTES - 1),
      }),
    });

    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: starResourceReason(
        props.store.kind,
        'ec2:DescribeInstances (listing the running GPU instances)',
        'cloudwatch:PutMetricData (conditioned on cloudwatch:namespace = GpuSentinel)',
      ),
    });
  }
}

/** Checks `regions`: at least one, each an AWS region code (or a token, such as the stack's region). */
function validateRegions(regions: readonly string[] | undefined): readonly string[] {
  if (regions === undefined) return [Aws.REGION];
  if (regions.length === 0)
    throw new PropsValidationError('regions', 'at least one AWS region code', regions);
  regions.forEach((r, i) => {
    validatePattern(`regions[${i}]`, r, REGION_PATTERN, 'an AWS region code, e.g. us-east-1');
  });
  return regions;
}
