import { fileURLToPath } from 'node:url';
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { STORE_KINDS, type StoreKind } from '../lambdas/domain/lambda-environment';
import type { PriceRates } from '../lambdas/domain/pricing';
import { AgentPolicy } from './agent-policy';
import { AgentRole } from './agent-role';
import { type AlertEmails, AlertTopics } from './alert-topics';
import { AthenaTelemetryStore } from './athena-telemetry-store';
import { DEFAULT_STORE } from './constants';
import { FinanceReports } from './finance-reports';
import { FleetEvaluator } from './fleet-evaluator';
import { IngestApi } from './ingest-api';
import { IngestFunction } from './ingest-function';
import { type MonitoredFunction, MonitoringAlarms } from './monitoring-alarms';
import { MonitoringDashboard } from './monitoring-dashboard';
import { PropsValidationError } from './props-validation-error';
import type { RemediationMode } from './remediation-mode';
import { RemediationState } from './remediation-state';
import { TelemetryDatabase } from './telemetry-database';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validateOneOf } from './validate-props';

/** Default entry of the ingest Lambda: `lambdas/handlers/ingest.ts` at the repository root. */
export const DEFAULT_INGEST_ENTRY = fileURLToPath(new URL('../lambdas/handlers/ingest.ts', import.meta.url));
/** Default entry of the report Lambda: `lambdas/handlers/report.ts` at the repository root. */
export const DEFAULT_REPORT_ENTRY = fileURLToPath(new URL('../lambdas/handlers/report.ts', import.meta.url));
/** Default entry of the fleet evaluator Lambda: `lambdas/handlers/fleet-evaluator.ts` at the repository root. */
export const DEFAULT_FLEET_ENTRY = fileURLToPath(
  new URL('../lambdas/handlers/fleet-evaluator.ts', import.meta.url),
);
/** The repository's npm lock file: the bundling root of the Lambdas. */
export const DEPS_LOCK_FILE_PATH = fileURLToPath(new URL('../package-lock.json', import.meta.url));

/** Props of {@link GpuSentinelStack}. */
export interface GpuSentinelStackProps extends StackProps {
  /**
   * Which telemetry store to deploy (docs/design.md §4): `athena` (Firehose → S3 Parquet → Glue →
   * Athena; open to every account) or `timestream` (Timestream for LiveAnalytics, for accounts
   * that already use it: it is closed to new customers since 2025-06-20).
   * @default 'athena'
   */
  readonly store?: StoreKind;
  /**
   * Name of the store's database: the Glue database (`athena`, 1–255 of `[a-z0-9_]`) or the
   * Timestream database (`timestream`, 3–256 of `[a-zA-Z0-9_.-]`).
   * @default 'gpu_sentinel'
   */
  readonly databaseName?: string;
  /**
   * `athena` only: how long telemetry stays in S3, days, integer in 1..36500.
   * @default 365
   */
  readonly telemetryRetentionDays?: number;
  /**
   * `athena` only: Firehose buffer interval, s, integer in 60..900.
   * @default 300
   */
  readonly firehoseBufferIntervalSeconds?: number;
  /**
   * `timestream` only: memory store retention, hours, integer in 1..8766 (Timestream quotas page).
   * @default 24
   */
  readonly memoryRetentionHours?: number;
  /**
   * `timestream` only: magnetic store retention, days, integer in 1..73000 (Timestream quotas page).
   * @default 365
   */
  readonly magneticRetentionDays?: number;
  /**
   * E-mail subscriptions per topic (`critical`, `warning`, `info`, `reports`).
   * @default - none
   */
  readonly alertEmails?: AlertEmails;
  /**
   * What the ingest Lambda does about broken instances: `off`, `notify` or `replace` (docs/design.md §8).
   * @default 'replace'
   */
  readonly remediationMode?: RemediationMode;
  /**
   * On-demand price overrides, USD per instance-hour, by EC2 instance type, finite ≥ 0
   * (`{ "p5.48xlarge": 55.04 }`).
   * @default - none (the built-in price table)
   */
  readonly priceOverridesUsdPerHour?: Readonly<Record<string, number>>;
  /**
   * Spot, Savings Plans and Capacity Block rates and the spot discount, see
   * `IngestFunctionProps.priceRates` (`{ "savings_plans": { "p5.48xlarge": 34.68 }, "spot_discount": 0.6 }`).
   * @default - none (list prices; spot hosts unpriced)
   */
  readonly priceRates?: PriceRates;
  /**
   * Rule-threshold overrides by name (`{ "fakeLoadGpuUtilAtLeast": 0.8 }`), see `IngestFunctionProps.ruleThresholds`.
   * @default - none (the thresholds table's defaults)
   */
  readonly ruleThresholds?: Readonly<Record<string, number>>;
  /**
   * Retention of the Lambda and API access log groups; one of `logs.RetentionDays`.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * AWS Organizations id (`o-[a-z0-9]{10,32}`) whose principals may call the API.
   * @default - only principals of this account
   */
  readonly organizationId?: string;
  /**
   * Keep the ingest API's `DenyWithoutInstanceCredentials` resource-policy statement (only
   * credentials an EC2 instance got from its instance profile, `ec2:SourceInstanceARN`). `false`
   * (`-c requireInstanceCredentials=false`) drops it where API Gateway does not evaluate that key
   * and every agent gets 403; the handler's own checks still apply. See `IngestApiProps`.
   * @default true
   */
  readonly requireInstanceCredentials?: boolean;
  /**
   * Further IAM roles (besides the stack's own `AgentRole`) whose EC2 instance-profile sessions may
   * send batches, e.g. an existing training cluster's node role: ARNs, `*`/`?` wildcards allowed
   * (`arn:aws:iam::*:role/GpuNodeRole` for every account of the organization). Give each role the
   * `AgentPolicyArn` managed policy (or `grantIngest`) as well.
   * @default - only the stack's `AgentRole`
   */
  readonly agentRoleArns?: readonly string[];
  /**
   * API stage steady-state rate, requests per second, > 0.
   * @default 1000
   */
  readonly throttlingRateLimit?: number;
  /**
   * API stage burst, requests, > 0.
   * @default 2000
   */
  readonly throttlingBurstLimit?: number;
  /**
   * Create the account's API Gateway CloudWatch Logs role (one per account and region); set
   * `false` when the account already has one.
   * @default true
   */
  readonly apiGatewayCloudWatchRole?: boolean;
  /**
   * ARN of a regional WAFv2 web ACL to associate with the API stage.
   * @default - no WAF
   */
  readonly webAclArn?: string;
  /**
   * Reserved concurrency of the ingest Lambda, executions, 1..900.
   * @default 100
   */
  readonly ingestReservedConcurrency?: number;
  /**
   * Teams with their own `Team` value on the ingest CloudWatch metrics (others are `other`), see
   * `IngestFunctionProps.metricsTeams`; at most 50.
   * @default - none
   */
  readonly metricsTeams?: readonly string[];
  /**
   * Share of API requests answered 5xx above which the `Ingest5xx` alarm fires, fraction in (0, 1].
   * @default 0.05
   */
  readonly ingest5xxRateThreshold?: number;
  /**
   * Fleet waste rate, percent of GPU spend, above which the `FleetWasteRate` alarm fires, in (0, 100].
   * @default 50
   */
  readonly wasteRatePercentThreshold?: number;
  /**
   * Absolute path of the ingest handler's entry file. Tests point it at a stub.
   * @default `<repo>/lambdas/handlers/ingest.ts`
   */
  readonly ingestEntry?: string;
  /**
   * Absolute path of the report handler's entry file. Tests point it at a stub.
   * @default `<repo>/lambdas/handlers/report.ts`
   */
  readonly reportEntry?: string;
  /**
   * Regions whose running GPU instances the fleet evaluator lists for `agent_silent` and the
   * cross-node straggler, AWS region codes, at least one.
   * @default - the stack's region
   */
  readonly fleetRegions?: readonly string[];
  /**
   * Absolute path of the fleet evaluator's entry file.
   * @default `<repo>/lambdas/handlers/fleet-evaluator.ts`
   */
  readonly fleetEntry?: string;
}

/**
 * The gpu-sentinel AWS pipeline (docs/design.md §1): ingest REST API → ingest Lambda → the telemetry
 * store (by default Firehose → S3 Parquet → Glue → Athena, or Timestream for LiveAnalytics), SNS
 * alert topics, the DynamoDB state table for remediation and cooldowns, and the managed policy for
 * GPU instance roles.
 *
 * Construct IDs are a contract (renaming one replaces the resource): `AthenaStore` or
 * `TelemetryDatabase`, `AlertTopics`, `RemediationState`, `AgentRole`, `IngestFunction`,
 * `IngestApi`, `AgentPolicy`, `FinanceReports`, `FleetEvaluator`, `MonitoringAlarms`,
 * `MonitoringDashboard`; outputs
 * `BatchesUrl`, `CriticalTopicArn`, `WarningTopicArn`, `InfoTopicArn`, `ReportsTopicArn`,
 * `AgentPolicyArn`, `AgentRoleArn`, `AgentInstanceProfileArn`, `StateTableName`, `ReportsBucketName`,
 * and `TelemetryBucketName`, `GlueDatabaseName`, `AthenaWorkGroup` (athena) or
 * `TimestreamDatabaseName` (timestream).
 *
 * @example
 * new GpuSentinelStack(app, 'GpuSentinel', { remediationMode: 'notify', organizationId: 'o-a1b2c3d4e5' });
 */
export class GpuSentinelStack extends Stack {
  /** The store deployed: `athena` or `timestream`. */
  readonly storeKind: StoreKind;
  /** The telemetry store the ingest Lambda writes. */
  readonly store: TelemetryStoreResources;
  /** The Athena store, when `store` is `athena`. */
  readonly athenaStore?: AthenaTelemetryStore;
  /** The Timestream database and tables, when `store` is `timestream`. */
  readonly database?: TelemetryDatabase;
  /** The SNS topics. */
  readonly topics: AlertTopics;
  /** The DynamoDB state table. */
  readonly state: RemediationState;
  /** The ingest Lambda. */
  readonly ingest: IngestFunction;
  /** The ingest REST API. */
  readonly api: IngestApi;
  /** The managed policy for GPU instance roles. */
  readonly agentPolicy: AgentPolicy;
  /** The agent role and instance profile for GPU instances. */
  readonly agentRole: AgentRole;
  /** The scheduled finance reports: bucket, Lambda, schedules. */
  readonly reports: FinanceReports;
  /** The fleet evaluator: Lambda and its 5-minute schedule. */
  readonly fleet: FleetEvaluator;
  /** The CloudWatch alarms; `alarms.addFunction()` adds a Lambda's errors and throttles alarms. */
  readonly alarms: MonitoringAlarms;
  /** The CloudWatch dashboard, by failure mode. */
  readonly dashboard: MonitoringDashboard;

  /** @throws {PropsValidationError} when a prop is out of range (the message names it and the value) */
  constructor(scope: Construct, id: string, props: GpuSentinelStackProps = {}) {
    super(scope, id, props);
    const logRetention = validateLogRetention(props.logRetention ?? logs.RetentionDays.ONE_MONTH);
    this.storeKind = validateOneOf('store', props.store ?? DEFAULT_STORE, STORE_KINDS);
    const stores = this.createStore(props, logRetention);
    this.store = stores.store;
    this.athenaStore = stores.athena;
    this.database = stores.timestream;
    this.topics = new AlertTopics(this, 'AlertTopics', { alertEmails: props.alertEmails });
    this.state = new RemediationState(this, 'RemediationState');
    this.agentRole = new AgentRole(this, 'AgentRole');
    this.ingest = this.createIngest(props, logRetention);
    this.api = this.createApi(props, logRetention);
    this.agentPolicy = new AgentPolicy(this, 'AgentPolicy', { api: this.api });
    this.agentPolicy.policy.attachToRole(this.agentRole.role);
    this.reports = new FinanceReports(this, 'FinanceReports', {
      entry: props.reportEntry ?? DEFAULT_REPORT_ENTRY,
      depsLockFilePath: DEPS_LOCK_FILE_PATH,
      store: this.store,
      topics: this.topics,
      logRetention,
    });
    this.fleet = this.createFleetEvaluator(props, logRetention);
    const monitored = this.monitoredFunctions();
    this.alarms = new MonitoringAlarms(this, 'MonitoringAlarms', {
      topics: this.topics,
      api: this.api.api,
      functions: monitored,
      ingest5xxRateThreshold: props.ingest5xxRateThreshold,
      wasteRatePercentThreshold: props.wasteRatePercentThreshold,
    });
    this.dashboard = this.createDashboard(monitored);
    this.addOutputs();
  }

  /**
   * Lets `grantee` (a GPU instance role) send batches: `execute-api:Invoke` on
   * `POST /v1/batches` of this stack's API only. Same permission as the `AgentPolicy` managed policy.
   *
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantIngest(grantee: iam.IGrantable): iam.Grant {
    return this.api.grantIngest(grantee);
  }

  /** The telemetry store `props.store` names: `AthenaStore` or `TelemetryDatabase`. */
  private createStore(
    props: GpuSentinelStackProps,
    logRetention: logs.RetentionDays,
  ): { store: TelemetryStoreResources; athena?: AthenaTelemetryStore; timestream?: TelemetryDatabase } {
    if (this.storeKind === 'athena') {
      const athena = new AthenaTelemetryStore(this, 'AthenaStore', {
        databaseName: props.databaseName,
        retentionDays: props.telemetryRetentionDays,
        bufferIntervalSeconds: props.firehoseBufferIntervalSeconds,
        logRetention,
      });
      return { store: athena, athena };
    }
    const timestream = new TelemetryDatabase(this, 'TelemetryDatabase', {
      databaseName: props.databaseName,
      memoryRetentionHours: props.memoryRetentionHours,
      magneticRetentionDays: props.magneticRetentionDays,
    });
    return { store: timestream, timestream };
  }

  /** The ingest Lambda (`IngestFunction`), admitting the stack's agent role and the given ones. */
  private createIngest(props: GpuSentinelStackProps, logRetention: logs.RetentionDays): IngestFunction {
    return new IngestFunction(this, 'IngestFunction', {
      entry: props.ingestEntry ?? DEFAULT_INGEST_ENTRY,
      depsLockFilePath: DEPS_LOCK_FILE_PATH,
      store: this.store,
      topics: this.topics,
      state: this.state,
      remediationMode: props.remediationMode,
      priceOverridesUsdPerHour: props.priceOverridesUsdPerHour,
      priceRates: props.priceRates,
      ruleThresholds: props.ruleThresholds,
      logRetention,
      agentRoleNames: agentRoleNames(this.agentRole.role.roleName, props.agentRoleArns),
      reservedConcurrentExecutions: props.ingestReservedConcurrency,
      metricsTeams: props.metricsTeams,
    });
  }

  /** The ingest REST API (`IngestApi`) in front of the ingest Lambda, open to the agent roles only. */
  private createApi(props: GpuSentinelStackProps, logRetention: logs.RetentionDays): IngestApi {
    return new IngestApi(this, 'IngestApi', {
      handler: this.ingest.function,
      organizationId: props.organizationId,
      requireInstanceCredentials: props.requireInstanceCredentials,
      agentRoleArns: [this.agentRole.role.roleArn, ...(props.agentRoleArns ?? [])],
      throttlingRateLimit: props.throttlingRateLimit,
      throttlingBurstLimit: props.throttlingBurstLimit,
      logRetention,
      apiGatewayCloudWatchRole: props.apiGatewayCloudWatchRole,
      webAclArn: props.webAclArn,
    });
  }

  /** The fleet evaluator (`FleetEvaluator`), with the same thresholds and teams as ingest. */
  private createFleetEvaluator(
    props: GpuSentinelStackProps,
    logRetention: logs.RetentionDays,
  ): FleetEvaluator {
    return new FleetEvaluator(this, 'FleetEvaluator', {
      entry: props.fleetEntry ?? DEFAULT_FLEET_ENTRY,
      depsLockFilePath: DEPS_LOCK_FILE_PATH,
      store: this.store,
      topics: this.topics,
      state: this.state,
      regions: props.fleetRegions,
      ruleThresholds: props.ruleThresholds,
      metricsTeams: props.metricsTeams,
      logRetention,
    });
  }

  /** The functions the alarms and the dashboard watch, with the topic their errors go to. */
  private monitoredFunctions(): MonitoredFunction[] {
    return [
      { name: 'Ingest', function: this.ingest.function, errorsTopic: 'critical' },
      { name: 'Report', function: this.reports.function, errorsTopic: 'warning' },
      // A failing evaluator means silent agents go unnoticed: critical, like ingest.
      { name: 'FleetEvaluator', function: this.fleet.function, errorsTopic: 'critical' },
    ];
  }

  /** The dashboard (`MonitoringDashboard`): the API, the functions, Firehose when the store has it, the alarms. */
  private createDashboard(functions: readonly MonitoredFunction[]): MonitoringDashboard {
    return new MonitoringDashboard(this, 'MonitoringDashboard', {
      api: this.api.api,
      functions,
      ...(this.athenaStore === undefined
        ? {}
        : { deliveryStreamNames: Object.values(this.athenaStore.streams).map((s) => s.ref) }),
      alarms: this.alarms.alarms,
    });
  }

  /** The stack's outputs: where agents send, the topics, the agent policy, role and profile, the stores. */
  private addOutputs(): void {
    new CfnOutput(this, 'BatchesUrl', {
      value: this.api.batchesUrl,
      description: 'Where agents POST batches (GPU_SENTINEL_ENDPOINT)',
    });
    new CfnOutput(this, 'CriticalTopicArn', { value: this.topics.critical.topicArn });
    new CfnOutput(this, 'WarningTopicArn', { value: this.topics.warning.topicArn });
    new CfnOutput(this, 'InfoTopicArn', { value: this.topics.info.topicArn });
    new CfnOutput(this, 'ReportsTopicArn', { value: this.topics.reports.topicArn });
    new CfnOutput(this, 'AgentPolicyArn', {
      value: this.agentPolicy.managedPolicyArn,
      description: 'Attach to the IAM role of every GPU instance running the agent',
    });
    new CfnOutput(this, 'AgentRoleArn', {
      value: this.agentRole.role.roleArn,
      description: 'The role GPU instances run the agent with (the API admits only agent roles)',
    });
    new CfnOutput(this, 'AgentInstanceProfileArn', {
      value: this.agentRole.instanceProfile.instanceProfileArn,
      description: 'Launch GPU instances (or their launch template) with this instance profile',
    });
    new CfnOutput(this, 'StateTableName', { value: this.state.table.tableName });
    new CfnOutput(this, 'DashboardName', {
      value: this.dashboard.dashboard.dashboardName,
      description: 'The CloudWatch dashboard of the fleet and the pipeline, by failure mode',
    });
    if (this.database !== undefined) {
      new CfnOutput(this, 'TimestreamDatabaseName', { value: this.database.databaseName });
    }
    if (this.athenaStore !== undefined) {
      new CfnOutput(this, 'TelemetryBucketName', { value: this.athenaStore.bucket.bucketName });
      new CfnOutput(this, 'GlueDatabaseName', { value: this.athenaStore.databaseName });
      new CfnOutput(this, 'AthenaWorkGroup', {
        value: this.athenaStore.workGroup.ref,
        description: 'Run report queries in this workgroup (results encrypted, scan capped)',
      });
    }
    new CfnOutput(this, 'ReportsBucketName', {
      value: this.reports.bucket.bucketName,
      description: 'Where the scheduled finance reports (CSV, HTML) are written, under reports/',
    });
  }
}

/**
 * The role names the ingest handler admits (`AGENT_ROLE_NAMES`): the stack's own role and the given
 * roles' names (an assumed-role ARN carries the name, not the path); undefined when a given name
 * has a wildcard (then the resource policy alone restricts roles).
 */
function agentRoleNames(own: string, extra: readonly string[] | undefined): readonly string[] | undefined {
  const names = (extra ?? []).map((arn) => arn.slice(arn.lastIndexOf('/') + 1));
  if (names.some((n) => n.includes('*') || n.includes('?'))) return undefined;
  return [own, ...names];
}

function validateLogRetention(value: logs.RetentionDays): logs.RetentionDays {
  const allowed = Object.values(logs.RetentionDays).filter(
    (v): v is logs.RetentionDays => typeof v === 'number',
  );
  if (!allowed.includes(value)) {
    throw new PropsValidationError('logRetention', 'one of logs.RetentionDays (a number of days)', value);
  }
  return value;
}
