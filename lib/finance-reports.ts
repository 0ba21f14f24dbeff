import { Duration, RemovalPolicy, Stack, TimeZone, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import { Construct } from 'constructs';
import type { LambdaEnvironment } from '../lambdas/domain/lambda-environment';
import type { AlertTopics } from './alert-topics';
import {
  REPORT_KEY_PREFIX,
  REPORT_MEMORY_MIB,
  REPORT_SCHEDULES,
  REPORT_SERVICE_NAME,
  REPORT_TIMEOUT_SECONDS,
} from './constants';
import { type CurExport, grantCurRead, validateCurExport } from './cur-read-grant';
import { LAMBDA_BUNDLING_TARGET, LAMBDA_EXTERNAL_MODULES } from './lambda-bundling';
import { scheduleInvokeRole } from './schedule-invoke-role';
import { SentinelFunction } from './sentinel-function';
import { stackKey } from './stack-key';
import { starResourceReason } from './star-resource-reason';
import type { TelemetryStoreResources } from './telemetry-store-resources';

/**
 * How the report Lambda is bundled: ESM, because Vega (through vega-canvas) uses top-level await,
 * which esbuild cannot emit as CommonJS; a `require` shim for the CommonJS packages in the bundle;
 * and `canvas` left out (Vega renders SVG without it and only tries to load it).
 */
export const REPORT_BUNDLING = {
  format: nodejs.OutputFormat.ESM,
  target: LAMBDA_BUNDLING_TARGET,
  mainFields: ['module', 'main'],
  banner: "import { createRequire } from 'module';const require = createRequire(import.meta.url);",
  externalModules: [...LAMBDA_EXTERNAL_MODULES, 'canvas'],
  minify: true,
  sourceMap: true,
} as const;

/**
 * A Cost and Usage Report 2.0 export (AWS Data Exports) whose Glue table the reports price
 * instance-hours from, through Athena (docs/finance.md, "Reconciling with the bill"); the same
 * export the fleet evaluator prices team waste from (`CurExport`).
 */
export type FinanceReportsCur = CurExport;

/** Props of {@link FinanceReports}. */
export interface FinanceReportsProps {
  /** Absolute path of the report handler's entry file (TypeScript), bundled by esbuild. */
  readonly entry: string;
  /** Absolute path of the lock file next to the project's package.json (bundling root). */
  readonly depsLockFilePath: string;
  /** Where the ledger is read: the Athena or Timestream store (its `grantRead` and environment). */
  readonly store: TelemetryStoreResources;
  /** The topics; the report message goes to `reports`. */
  readonly topics: AlertTopics;
  /**
   * How long the function's logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * A CUR 2.0 export to price instance-hours from (Athena store only): sets `CUR_DATABASE` and
   * `CUR_TABLE`, and lets the Lambda read that table (`glue:GetDatabase`, `GetTable`,
   * `GetPartitions`) and the export's bucket (`s3:GetObject`, `ListBucket`, `GetBucketLocation`).
   * @default undefined (the prices stored with the ledger)
   */
  readonly cur?: FinanceReportsCur;
  /**
   * X-Ray active tracing of the report function: a trace per invocation ($5 per million recorded, AWS X-Ray pricing
   * page).
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * What happens to the reports bucket, its access-log bucket and the log group (the key is always
   * retained) when the
   * stack is deleted.
   * @default RemovalPolicy.RETAIN (finance's history outlives the stack)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * Scheduled finance reports (docs/design.md §9): the report Lambda, run by EventBridge Scheduler daily,
 * weekly and monthly (UTC), writes one CSV per grouping and the HTML page to a private reports
 * bucket encrypted with the stack's customer-managed KMS key (`stackKey`: rotation on, S3 Bucket Keys), TLS only,
 * versioned, with server access logs; then publishes the message on the `reports` topic.
 *
 * The function is a {@link SentinelFunction} of 1 GiB and 300 s, bundled as ESM
 * ({@link REPORT_BUNDLING}), made under the id `Default`. Its role, written by hand: `logs:CreateLogStream`/`PutLogEvents` on
 * its log group;
 * the store's read grant (`grantRead`: Athena on the workgroup, Glue and S3 reads of the tables, or
 * `timestream:Select` on the GPU windows table and `timestream:DescribeEndpoints` on `*`);
 * `s3:PutObject` under `reports/` of the bucket; `kms:GenerateDataKey` on the bucket key;
 * `sns:Publish` on `reports` with `kms:GenerateDataKey`/`kms:Decrypt` on the topics' key; X-Ray when `tracing` is on.
 * The schedules' role (trusting `scheduler.amazonaws.com` from this account only) may only
 * `lambda:InvokeFunction` this function.
 *
 * Construct IDs are a contract: `AccessLogs`, `Bucket`, `LogGroup`, `ServiceRole`,
 * `Function`, `ScheduleRole`, `DaySchedule`, `WeekSchedule`, `MonthSchedule`.
 *
 * @example
 * new FinanceReports(this, 'FinanceReports', { entry, depsLockFilePath, store, topics });
 */
export class FinanceReports extends Construct {
  /** The key encrypting the reports bucket. */
  readonly key: kms.Key;
  /** The reports bucket. */
  readonly bucket: s3.Bucket;
  /**
   * The report Lambda with its role and log group, under the id `Default` (left out of logical
   * IDs: its resources keep the IDs they had directly under `FinanceReports`).
   */
  readonly reportFunction: SentinelFunction;
  /** The report Lambda ({@link reportFunction}'s function). */
  readonly function: nodejs.NodejsFunction;
  /** Its execution role. */
  readonly role: iam.Role;
  /** The three schedules, by period. */
  readonly schedules: Readonly<Record<keyof typeof REPORT_SCHEDULES, scheduler.Schedule>>;

  constructor(scope: Construct, id: string, props: FinanceReportsProps) {
    super(scope, id);
    validateCurExport(props.cur, props.store.kind);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.key = stackKey(this);
    this.bucket = this.createBucket(this.key, removalPolicy);
    this.reportFunction = new SentinelFunction(this, 'Default', {
      entry: props.entry,
      depsLockFilePath: props.depsLockFilePath,
      label: 'report Lambda',
      description: 'gpu-sentinel: scheduled finance reports (CSV + HTML to S3, message to the reports topic)',
      serviceName: REPORT_SERVICE_NAME,
      memoryMiB: REPORT_MEMORY_MIB,
      timeoutSeconds: REPORT_TIMEOUT_SECONDS,
      bundling: REPORT_BUNDLING,
      environment: {
        ...props.store.environment(),
        REPORTS_BUCKET: this.bucket.bucketName,
        REPORTS_KEY_ARN: this.key.keyArn,
        TOPIC_REPORTS_ARN: props.topics.reports.topicArn,
        ...(props.cur !== undefined ? { CUR_DATABASE: props.cur.database, CUR_TABLE: props.cur.table } : {}),
      } satisfies LambdaEnvironment<'report'>,
      initialGrants: [(fn) => this.grantReportWrites(fn, props)],
      logRetention: props.logRetention,
      logRemovalPolicy: removalPolicy,
      tracing: props.tracing,
    });
    this.function = this.reportFunction.function;
    this.role = this.reportFunction.role;
    this.acknowledgeWildcards(props.store);
    this.schedules = this.createSchedules();
  }

  /** The private, versioned, KMS-encrypted reports bucket (`Bucket`) and its access-log bucket (`AccessLogs`). */
  private createBucket(key: kms.Key, removalPolicy: RemovalPolicy): s3.Bucket {
    const accessLogs = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      removalPolicy,
    });
    return new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: key,
      bucketKeyEnabled: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      versioned: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: accessLogs,
      serverAccessLogsPrefix: 'reports-bucket/',
      removalPolicy,
    });
  }

  /**
   * Lets `grantee` (the report Lambda) do its work: the store's read grant, `s3:PutObject` under
   * `reports/` of the bucket, `kms:GenerateDataKey` on the bucket's key, publishing on `reports`.
   */
  private grantReportWrites(grantee: iam.IGrantable, props: FinanceReportsProps): void {
    props.store.grantRead(grantee);
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:PutObject'],
        resources: [this.bucket.arnForObjects(`${REPORT_KEY_PREFIX}*`)],
      }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['kms:GenerateDataKey'], resources: [this.key.keyArn] }),
    );
    props.topics.grantPublishReports(grantee);
    if (props.cur !== undefined) grantCurRead(this, grantee, props.cur);
  }

  /** Tells cdk-nag why the role has `*` and `reports/*` resources. */
  private acknowledgeWildcards(store: TelemetryStoreResources): void {
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: starResourceReason(store.kind),
    });
    const bucketLogicalId = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
    Validations.of(this.role).acknowledge({
      id: `AwsSolutions-IAM5[Resource::<${bucketLogicalId}.Arn>/${REPORT_KEY_PREFIX}*]`,
      reason:
        'The report Lambda writes files it names at run time (period and date), all under the reports/ prefix of its own bucket only.',
    });
  }

  /** The day, week and month schedules (UTC) and their role, each run retried up to 3 times within 6 h. */
  private createSchedules(): Readonly<Record<keyof typeof REPORT_SCHEDULES, scheduler.Schedule>> {
    const scheduleRole = scheduleInvokeRole(this, 'ScheduleRole', this.function, 'the report Lambda');
    const schedule = (period: keyof typeof REPORT_SCHEDULES, scheduleId: string) =>
      new scheduler.Schedule(this, scheduleId, {
        description: `gpu-sentinel ${period} finance report`,
        schedule: scheduler.ScheduleExpression.expression(REPORT_SCHEDULES[period], TimeZone.ETC_UTC),
        target: new targets.LambdaInvoke(this.function, {
          role: scheduleRole,
          input: scheduler.ScheduleTargetInput.fromObject({ period }),
          retryAttempts: 3,
          maxEventAge: Duration.hours(6),
        }),
      });
    return {
      day: schedule('day', 'DaySchedule'),
      week: schedule('week', 'WeekSchedule'),
      month: schedule('month', 'MonthSchedule'),
    };
  }
}
