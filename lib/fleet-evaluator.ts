import type { RemovalPolicy } from 'aws-cdk-lib';
import { Aws, Duration, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import type { Construct } from 'constructs';
import { REGION_RULE } from '../lambdas/contract/field-rules';
import { METRICS_NAMESPACE } from '../lambdas/domain/cloudwatch-metrics';
import type { LambdaEnvironment } from '../lambdas/domain/lambda-environment';
import type { AlertTopics } from './alert-topics';
import { FLEET_MEMORY_MIB, FLEET_RATE_MINUTES, FLEET_SERVICE_NAME, FLEET_TIMEOUT_SECONDS } from './constants';
import { type CurExport, grantCurRead, validateCurExport } from './cur-read-grant';
import { PropsValidationError } from './props-validation-error';
import type { RemediationState } from './remediation-state';
import { scheduleInvokeRole } from './schedule-invoke-role';
import { SentinelFunction } from './sentinel-function';
import { starResourceReason } from './star-resource-reason';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validateMetricsTeams, validateRuleThresholds } from './validate-lambda-settings';
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
   * the same list as ingest's (`IngestFunctionProps.metricsTeams`); other teams get no series of
   * their own (the fleet-wide series count them).
   * @default - none
   */
  readonly metricsTeams?: readonly string[];
  /**
   * A CUR 2.0 export to price the team waste from (Athena store only, checked at synth): each
   * instance at the effective rate of its newest billed hour in the export. Sets `CUR_DATABASE` and
   * `CUR_TABLE`, and lets the function read that table (`glue:GetDatabase`, `GetTable`,
   * `GetPartitions`) and the export's bucket (`s3:GetObject`, `ListBucket`, `GetBucketLocation`).
   * @default - none (the prices stored with the ledger)
   */
  readonly cur?: CurExport;
  /**
   * How long the function's logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * X-Ray active tracing of the function: a trace per invocation ($5 per million recorded, AWS X-Ray pricing
   * page).
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * What happens to the log group when the stack is deleted (the stack's key is always retained).
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
 * A {@link SentinelFunction} of 512 MiB and 240 s (under the 5-minute schedule). Its role, written
 * by hand: `logs:CreateLogStream`/`PutLogEvents` on its log group; the store's read grant; `sns:Publish` on the alert topics with their key; DynamoDB read/write on the
 * state table; `ec2:DescribeInstances` on `*` (no resource-level permission);
 * `cloudwatch:PutMetricData` on `*` only when `cloudwatch:namespace` is `GpuSentinel`; with `cur`, Glue
 * and S3 reads of the CUR export's table and bucket (`grantCurRead`); X-Ray when `tracing` is on. The
 * schedule's role (trusting `scheduler.amazonaws.com` from this account only) may only invoke it.
 *
 * Construct IDs are a contract: `LogGroup`, `ServiceRole`, `Function`, `ScheduleRole`, `Schedule`.
 *
 * @example
 * new FleetEvaluator(this, 'FleetEvaluator', { entry, depsLockFilePath, store, topics, state });
 */
export class FleetEvaluator extends SentinelFunction {
  /** The 5-minute schedule. */
  readonly schedule: scheduler.Schedule;

  /**
   * @throws {PropsValidationError} when `regions` is empty or names something that is not a region
   *   code, a rule threshold is unknown or out of its range, or `metricsTeams` is too long or has a
   *   bad name, or `cur` is given without the Athena store or with a bad name
   */
  constructor(scope: Construct, id: string, props: FleetEvaluatorProps) {
    validateCurExport(props.cur, props.store.kind);
    super(scope, id, {
      entry: props.entry,
      depsLockFilePath: props.depsLockFilePath,
      label: 'fleet evaluator',
      description:
        'gpu-sentinel: fleet rules every 5 minutes (agent_silent, straggler per job, waste_rate per team)',
      serviceName: FLEET_SERVICE_NAME,
      memoryMiB: FLEET_MEMORY_MIB,
      timeoutSeconds: FLEET_TIMEOUT_SECONDS,
      environment: fleetEnvironment(props),
      initialGrants: [
        (fn) => props.store.grantRead(fn),
        (fn) => props.topics.grantPublishAlerts(fn),
        (fn) => props.state.grantReadWrite(fn),
        grantFleetCalls,
      ],
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
      tracing: props.tracing,
    });
    if (props.cur !== undefined) grantCurRead(this, this, props.cur);
    this.schedule = this.createSchedule();
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: starResourceReason(
        props.store.kind,
        'ec2:DescribeInstances (listing the running GPU instances)',
        'cloudwatch:PutMetricData (conditioned on cloudwatch:namespace = GpuSentinel)',
      ),
    });
  }

  /** The 5-minute schedule and its role (`ScheduleRole`, `Schedule`); a missed run is not retried. */
  private createSchedule(): scheduler.Schedule {
    const scheduleRole = scheduleInvokeRole(this, 'ScheduleRole', this.function, 'the fleet evaluator');
    return new scheduler.Schedule(this, 'Schedule', {
      description: 'gpu-sentinel fleet rules, every 5 minutes',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(FLEET_RATE_MINUTES)),
      target: new targets.LambdaInvoke(this.function, {
        role: scheduleRole,
        // A missed run is replaced by the next one 5 minutes later: no retry, no stale run.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(FLEET_RATE_MINUTES - 1),
      }),
    });
  }
}

/**
 * Lets `grantee` make the evaluator's own calls: `ec2:DescribeInstances` on `*` (no resource-level
 * permission exists) and `cloudwatch:PutMetricData` on `*` only when `cloudwatch:namespace` is
 * `GpuSentinel`.
 */
function grantFleetCalls(grantee: iam.IGrantable): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'ListRunningGpuInstances',
      actions: ['ec2:DescribeInstances'],
      resources: ['*'],
    }),
  );
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      sid: 'PutFleetMetrics',
      actions: ['cloudwatch:PutMetricData'],
      resources: ['*'],
      conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
    }),
  );
}

/**
 * The evaluator's variables (`LAMBDA_VARIABLES.fleetEvaluator` of lambdas/domain/lambda-environment.ts),
 * each setting checked at synth by the parser the Lambda runs at cold start.
 */
function fleetEnvironment(props: FleetEvaluatorProps): LambdaEnvironment<'fleetEvaluator'> {
  const metricsTeams = validateMetricsTeams(props.metricsTeams ?? []);
  return {
    ...props.store.environment(),
    ...props.topics.alertEnvironment(),
    ...props.state.environment(),
    FLEET_REGIONS: validateRegions(props.regions).join(','),
    RULE_THRESHOLDS: JSON.stringify(validateRuleThresholds(props.ruleThresholds ?? {})),
    ...(metricsTeams.length === 0 ? {} : { METRICS_TEAMS: metricsTeams.join(',') }),
    ...(props.cur === undefined ? {} : { CUR_DATABASE: props.cur.database, CUR_TABLE: props.cur.table }),
  };
}

/** Checks `regions`: at least one, each an AWS region code (or a token, such as the stack's region). */
function validateRegions(regions: readonly string[] | undefined): readonly string[] {
  if (regions === undefined) return [Aws.REGION];
  if (regions.length === 0)
    throw new PropsValidationError('regions', 'at least one AWS region code', regions);
  regions.forEach((r, i) => {
    validatePattern(`regions[${i}]`, r, REGION_RULE.pattern, 'an AWS region code, e.g. us-east-1');
  });
  return regions;
}
