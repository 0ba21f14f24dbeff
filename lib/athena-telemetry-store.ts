import { Aws, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import * as glue from 'aws-cdk-lib/aws-glue';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as firehose from 'aws-cdk-lib/aws-kinesisfirehose';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { firehoseJsonKeyMappings } from '../lambdas/domain/firehose-json-keys';
import type { StoreEnvironment } from '../lambdas/domain/lambda-environment';
import { TELEMETRY_TABLES, type TelemetryTable } from '../lambdas/domain/store-columns';
import { glueTableInput, telemetryLifecycleRules } from './athena-store-layout';
import {
  ACCESS_LOG_RETENTION_DAYS,
  ATHENA_BYTES_SCANNED_CUTOFF,
  ATHENA_RESULTS_PREFIX,
  DEFAULT_FIREHOSE_BUFFER_INTERVAL_S,
  DEFAULT_TELEMETRY_RETENTION_DAYS,
  FIREHOSE_BUFFER_INTERVAL_S_MAX,
  FIREHOSE_BUFFER_INTERVAL_S_MIN,
  FIREHOSE_BUFFER_SIZE_MIB,
  FIREHOSE_ERRORS_PREFIX,
  GLUE_DATABASE_NAME_PATTERN,
} from './constants';
import { encryptedLogGroup } from './encrypted-log-group';
import { glueDatabaseNameFor } from './physical-names';
import { stackKey } from './stack-key';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validateIntegerInRange, validatePattern } from './validate-props';

/** Construct id part per table (construct IDs are a contract). */
const TABLE_IDS: { readonly [T in TelemetryTable]: string } = {
  gpu_windows: 'GpuWindows',
  efa_windows: 'EfaWindows',
  events: 'Events',
};

/** Props of {@link AthenaTelemetryStore}. */
export interface AthenaTelemetryStoreProps {
  /**
   * Glue database of the three tables: 1–255 of `[a-z0-9_]` (Glue and Athena names), unique in
   * the account and region.
   * @default - the stack's name in snake case (`GpuSentinel` → `gpu_sentinel`, {@link glueDatabaseNameFor})
   */
  readonly databaseName?: string;
  /**
   * How long telemetry stays in S3, days, integer in 1..36500 (S3 lifecycle expiration).
   * @default 365
   */
  readonly retentionDays?: number;
  /**
   * How long Firehose buffers before it writes a Parquet file, s, integer in 60..900 (Firehose
   * `BufferingHints.IntervalInSeconds`). Shorter: fresher reports, more and smaller files.
   * @default 300
   */
  readonly bufferIntervalSeconds?: number;
  /**
   * How long Firehose's delivery error logs are kept; one of `logs.RetentionDays`.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the buckets and the delivery log group when the stack is deleted (the stack's
   * key is always retained).
   * The Glue database and tables are always deleted with the stack: they only describe the
   * bucket's files, hold no data, and a retained one would make the next deploy of the same stack
   * fail on AlreadyExists.
   * @default RemovalPolicy.RETAIN (telemetry and ledger history outlive the stack)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The default telemetry store (docs/design.md §4): Amazon Data Firehose → S3 (Parquet) → Glue Data
 * Catalog → Amazon Athena, serverless and open to every account and region.
 *
 * - the stack's customer-managed KMS key (`stackKey`, rotation on) for the bucket, the streams and
 *   the query results;
 * - the telemetry bucket: SSE-KMS with a bucket key, TLS only, public access blocked, versioned,
 *   server access logs to a second bucket, lifecycle: telemetry expires after `retentionDays`,
 *   query results after 7 days, delivery errors after 30, incomplete uploads after 1;
 * - a Glue database named after the stack and one table per telemetry table (`gpu_windows`,
 *   `efa_windows`, `events`), deleted with the stack (the bucket keeps the data),
 *   Parquet SerDe, columns from the same list the adapters write, partitioned by the string
 *   column `datehour` projected as a date over Firehose's `yyyy/MM/dd/HH/` prefixes (no crawler,
 *   no `MSCK REPAIR`: Athena computes the partitions);
 * - three Firehose delivery streams (Direct PUT, SSE with the key) converting JSON to Parquet
 *   (OpenX JSON SerDe in, each column read under its short JSON key, `firehose-json-keys.ts`;
 *   Snappy Parquet out, schema from the Glue table) into
 *   `s3://bucket/<table>/yyyy/MM/dd/HH/`, buffering 128 MiB or `bufferIntervalSeconds`, errors to
 *   `firehose-errors/<table>/`, delivery logged to CloudWatch Logs;
 * - an Athena workgroup (engine v3) whose enforced configuration writes results SSE-KMS to
 *   `athena-results/` and cancels queries that scan more than 50 GiB.
 *
 * @example
 * const store = new AthenaTelemetryStore(this, 'AthenaStore', { retentionDays: 730 });
 * store.grantWrite(ingestFunction);
 * store.grantRead(reportFunction);
 */
export class AthenaTelemetryStore extends Construct implements TelemetryStoreResources {
  /** `athena`. */
  readonly kind = 'athena' as const;
  /** The key of the bucket, the streams and the query results. */
  readonly key: kms.Key;
  /** The telemetry bucket (Parquet, query results, delivery errors). */
  readonly bucket: s3.Bucket;
  /** The bucket receiving the telemetry bucket's access logs. */
  readonly accessLogsBucket: s3.Bucket;
  /** The Glue database. */
  readonly database: glue.CfnDatabase;
  /** The Glue database name. */
  readonly databaseName: string;
  /** The Glue table per telemetry table. */
  readonly tables: { readonly [T in TelemetryTable]: glue.CfnTable };
  /** The delivery stream per telemetry table. */
  readonly streams: { readonly [T in TelemetryTable]: firehose.CfnDeliveryStream };
  /** The Athena workgroup the reads run in. */
  readonly workGroup: athena.CfnWorkGroup;
  /** The role Firehose assumes to read the Glue schema and write the bucket. */
  readonly deliveryRole: iam.Role;

  /**
   * @throws {PropsValidationError} when `databaseName`, `retentionDays` or `bufferIntervalSeconds` is out of range
   */
  constructor(scope: Construct, id: string, props: AthenaTelemetryStoreProps = {}) {
    super(scope, id);
    const databaseName = validatePattern(
      'databaseName',
      props.databaseName ?? glueDatabaseNameFor(Stack.of(scope).stackName),
      GLUE_DATABASE_NAME_PATTERN,
      'a Glue database name of 1..255 characters [a-z0-9_]',
    );
    const retentionDays = validateIntegerInRange(
      'retentionDays',
      props.retentionDays ?? DEFAULT_TELEMETRY_RETENTION_DAYS,
      1,
      36_500,
    );
    const bufferIntervalSeconds = validateIntegerInRange(
      'bufferIntervalSeconds',
      props.bufferIntervalSeconds ?? DEFAULT_FIREHOSE_BUFFER_INTERVAL_S,
      FIREHOSE_BUFFER_INTERVAL_S_MIN,
      FIREHOSE_BUFFER_INTERVAL_S_MAX,
    );
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.key = stackKey(this, { scope: this, id: 'Key' });
    this.accessLogsBucket = this.createAccessLogsBucket(removalPolicy);
    this.bucket = this.createTelemetryBucket(retentionDays, removalPolicy);
    this.databaseName = databaseName;
    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: Aws.ACCOUNT_ID,
      databaseInput: {
        name: databaseName,
        description: 'gpu-sentinel telemetry: GPU windows with the waste ledger, EFA windows, events',
      },
    });
    this.database.applyRemovalPolicy(RemovalPolicy.DESTROY);
    this.tables = this.createTables();
    const { logGroup } = encryptedLogGroup(this, {
      groupId: 'DeliveryLogs',
      retention: props.logRetention,
      removalPolicy,
    });
    this.deliveryRole = this.createDeliveryRole(logGroup);
    this.streams = this.createStreams(logGroup, bufferIntervalSeconds, removalPolicy);
    this.workGroup = this.createWorkGroup();
  }

  /** The bucket receiving the telemetry bucket's server access logs (`AccessLogs`), kept 90 days. */
  private createAccessLogsBucket(removalPolicy: RemovalPolicy): s3.Bucket {
    return new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(ACCESS_LOG_RETENTION_DAYS) }],
      removalPolicy,
    });
  }

  /**
   * The telemetry bucket (`Bucket`): SSE-KMS with {@link key}, versioned, access-logged; lifecycle:
   * each table's files expire after `retentionDays` (and move to Standard-IA after 30 days when they
   * stay long enough), query results after 7 days, delivery errors after 30.
   */
  private createTelemetryBucket(retentionDays: number, removalPolicy: RemovalPolicy): s3.Bucket {
    const lifecycleRules = telemetryLifecycleRules(retentionDays);
    const bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'telemetry-bucket/',
      lifecycleRules,
      removalPolicy,
    });
    // aws-cdk-lib writes ObjectSizeGreaterThan as a number; the resource schema says string (a
    // CloudFormation validation warning at every synth): write it as the schema wants.
    const cfnBucket = bucket.node.defaultChild as s3.CfnBucket;
    lifecycleRules.forEach((rule, index) => {
      if (rule.objectSizeGreaterThan === undefined) return;
      cfnBucket.addPropertyOverride(
        `LifecycleConfiguration.Rules.${index}.ObjectSizeGreaterThan`,
        String(rule.objectSizeGreaterThan),
      );
    });
    return bucket;
  }

  /**
   * One Glue table per telemetry table (`GpuWindowsTable`, …): Parquet SerDe, the columns the
   * adapters write, partitioned by `datehour` projected over Firehose's `yyyy/MM/dd/HH/` prefixes.
   */
  private createTables(): { readonly [T in TelemetryTable]: glue.CfnTable } {
    const tables: Partial<Record<TelemetryTable, glue.CfnTable>> = {};
    for (const table of TELEMETRY_TABLES) {
      const t = new glue.CfnTable(this, `${TABLE_IDS[table]}Table`, {
        catalogId: Aws.ACCOUNT_ID,
        databaseName: this.databaseName,
        tableInput: glueTableInput(table, `s3://${this.bucket.bucketName}/${table}/`),
      });
      t.node.addDependency(this.database);
      t.applyRemovalPolicy(RemovalPolicy.DESTROY);
      tables[table] = t;
    }
    return tables as { readonly [T in TelemetryTable]: glue.CfnTable };
  }

  /**
   * The role Firehose assumes (`DeliveryRole`, trusting `firehose.amazonaws.com` from this account):
   * list and write the bucket under the table and error prefixes, read the Glue schema, use the
   * key, write the delivery log group.
   */
  private createDeliveryRole(logGroup: logs.LogGroup): iam.Role {
    const stack = Stack.of(this);
    const role = new iam.Role(this, 'DeliveryRole', {
      assumedBy: new iam.ServicePrincipal('firehose.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
      description: 'gpu-sentinel Firehose: reads the Glue schema, writes Parquet to the telemetry bucket',
    });
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetBucketLocation', 's3:ListBucket', 's3:ListBucketMultipartUploads'],
        resources: [this.bucket.bucketArn],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:AbortMultipartUpload', 's3:GetObject', 's3:PutObject'],
        resources: [...TELEMETRY_TABLES, FIREHOSE_ERRORS_PREFIX.slice(0, -1)].map((p) =>
          this.bucket.arnForObjects(`${p}/*`),
        ),
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['glue:GetTable', 'glue:GetTableVersion', 'glue:GetTableVersions'],
        resources: [
          stack.formatArn({ service: 'glue', resource: 'catalog' }),
          stack.formatArn({ service: 'glue', resource: 'database', resourceName: this.databaseName }),
          ...TELEMETRY_TABLES.map((t) =>
            stack.formatArn({
              service: 'glue',
              resource: 'table',
              resourceName: `${this.databaseName}/${t}`,
            }),
          ),
        ],
      }),
    );
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: [this.key.keyArn],
      }),
    );
    logGroup.grantWrite(role);
    return role;
  }

  /**
   * One Direct PUT delivery stream per table (`GpuWindowsStream`, …) converting JSON to Snappy
   * Parquet with the Glue schema into `<table>/yyyy/MM/dd/HH/`, errors to `firehose-errors/<table>/`,
   * delivery logged to its own stream of `logGroup`.
   */
  private createStreams(
    logGroup: logs.LogGroup,
    bufferIntervalSeconds: number,
    removalPolicy: RemovalPolicy,
  ): { readonly [T in TelemetryTable]: firehose.CfnDeliveryStream } {
    const streams: Partial<Record<TelemetryTable, firehose.CfnDeliveryStream>> = {};
    for (const table of TELEMETRY_TABLES) {
      const logStream = new logs.LogStream(this, `${TABLE_IDS[table]}DeliveryLogStream`, {
        logGroup,
        logStreamName: `${table}-s3-delivery`,
        removalPolicy,
      });
      const s = new firehose.CfnDeliveryStream(this, `${TABLE_IDS[table]}Stream`, {
        deliveryStreamType: 'DirectPut',
        deliveryStreamEncryptionConfigurationInput: {
          keyType: 'CUSTOMER_MANAGED_CMK',
          keyArn: this.key.keyArn,
        },
        extendedS3DestinationConfiguration: {
          bucketArn: this.bucket.bucketArn,
          roleArn: this.deliveryRole.roleArn,
          prefix: `${table}/`,
          errorOutputPrefix: `${FIREHOSE_ERRORS_PREFIX}${table}/!{firehose:error-output-type}/!{timestamp:yyyy/MM/dd/HH}/`,
          bufferingHints: { sizeInMBs: FIREHOSE_BUFFER_SIZE_MIB, intervalInSeconds: bufferIntervalSeconds },
          compressionFormat: 'UNCOMPRESSED',
          encryptionConfiguration: { kmsEncryptionConfig: { awskmsKeyArn: this.key.keyArn } },
          cloudWatchLoggingOptions: {
            enabled: true,
            logGroupName: logGroup.logGroupName,
            logStreamName: logStream.logStreamName,
          },
          dataFormatConversionConfiguration: {
            enabled: true,
            // The rows carry short JSON keys (fewer bytes billed); the SerDe reads each column under its key.
            inputFormatConfiguration: {
              deserializer: {
                openXJsonSerDe: { columnToJsonKeyMappings: firehoseJsonKeyMappings(table) },
              },
            },
            outputFormatConfiguration: { serializer: { parquetSerDe: { compression: 'SNAPPY' } } },
            schemaConfiguration: {
              catalogId: Aws.ACCOUNT_ID,
              databaseName: this.databaseName,
              tableName: table,
              region: Aws.REGION,
              roleArn: this.deliveryRole.roleArn,
              versionId: 'LATEST',
            },
          },
        },
      });
      s.node.addDependency(this.deliveryRole);
      s.node.addDependency(this.tables[table]);
      streams[table] = s;
    }
    const bucketId = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
    Validations.of(this.deliveryRole).acknowledge(
      ...[...TELEMETRY_TABLES, FIREHOSE_ERRORS_PREFIX.slice(0, -1)].map((p) => ({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${p}/*]`,
        reason: PREFIX_REASON,
      })),
    );
    return streams as { readonly [T in TelemetryTable]: firehose.CfnDeliveryStream };
  }

  /**
   * The Athena workgroup (`WorkGroup`, engine v3) whose enforced configuration writes results SSE-KMS
   * to `athena-results/` and cancels queries that scan more than 50 GiB.
   */
  private createWorkGroup(): athena.CfnWorkGroup {
    return new athena.CfnWorkGroup(this, 'WorkGroup', {
      name: `${this.databaseName}-${Aws.STACK_NAME}`,
      description: 'gpu-sentinel reports and fleet rules over the telemetry tables',
      state: 'ENABLED',
      recursiveDeleteOption: true,
      workGroupConfiguration: {
        enforceWorkGroupConfiguration: true,
        publishCloudWatchMetricsEnabled: true,
        bytesScannedCutoffPerQuery: ATHENA_BYTES_SCANNED_CUTOFF,
        engineVersion: { selectedEngineVersion: 'Athena engine version 3' },
        resultConfiguration: {
          outputLocation: `s3://${this.bucket.bucketName}/${ATHENA_RESULTS_PREFIX}`,
          expectedBucketOwner: Aws.ACCOUNT_ID,
          encryptionConfiguration: { encryptionOption: 'SSE_KMS', kmsKey: this.key.keyArn },
        },
      },
    });
  }

  /** ARNs of the three delivery streams, in the order gpu, efa, events. */
  get streamArns(): string[] {
    return TELEMETRY_TABLES.map((t) => this.streams[t].attrArn);
  }

  /** The ARN of the workgroup. */
  get workGroupArn(): string {
    return Stack.of(this).formatArn({
      service: 'athena',
      resource: 'workgroup',
      resourceName: this.workGroup.name,
    });
  }

  /**
   * What a function needs to reach this store: `STORE=athena`, `FIREHOSE_GPU_STREAM`, `FIREHOSE_EFA_STREAM`,
   * `FIREHOSE_EVENTS_STREAM`, `ATHENA_DATABASE`, `ATHENA_WORKGROUP`.
   *
   * @returns environment variables
   */
  environment(): StoreEnvironment {
    return {
      STORE: this.kind,
      FIREHOSE_GPU_STREAM: this.streams.gpu_windows.ref,
      FIREHOSE_EFA_STREAM: this.streams.efa_windows.ref,
      FIREHOSE_EVENTS_STREAM: this.streams.events.ref,
      ATHENA_DATABASE: this.databaseName,
      ATHENA_WORKGROUP: this.workGroup.ref,
    };
  }

  /**
   * Lets `grantee` write rows: `firehose:PutRecordBatch` on the three delivery streams only (no
   * KMS permission: Firehose encrypts with its own grant on the key).
   *
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantWrite(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['firehose:PutRecordBatch'],
      resourceArns: this.streamArns,
    });
  }

  /**
   * Lets `grantee` query the tables (reports, fleet rules): `athena:StartQueryExecution`,
   * `GetQueryExecution`, `GetQueryResults`, `StopQueryExecution` on the workgroup; `glue:GetDatabase`,
   * `glue:GetTable` on the catalog, database and tables; `s3:GetObject` on the table prefixes and
   * `s3:ListBucket`/`s3:GetBucketLocation` on the bucket; `s3:PutObject`, `s3:GetObject`,
   * `s3:AbortMultipartUpload` on the results prefix (Athena reads and writes with the caller's
   * permissions); `kms:Decrypt`, `kms:GenerateDataKey` on the key.
   *
   * @param grantee - the principal to grant to
   * @returns the grant of the Athena actions
   */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    const stack = Stack.of(this);
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: [
        'athena:StartQueryExecution',
        'athena:GetQueryExecution',
        'athena:GetQueryResults',
        'athena:StopQueryExecution',
      ],
      resourceArns: [this.workGroupArn],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['glue:GetDatabase', 'glue:GetTable'],
      resourceArns: [
        stack.formatArn({ service: 'glue', resource: 'catalog' }),
        stack.formatArn({ service: 'glue', resource: 'database', resourceName: this.databaseName }),
        ...TELEMETRY_TABLES.map((t) =>
          stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${this.databaseName}/${t}` }),
        ),
      ],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetBucketLocation', 's3:ListBucket'],
      resourceArns: [this.bucket.bucketArn],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetObject'],
      resourceArns: TELEMETRY_TABLES.map((t) => this.bucket.arnForObjects(`${t}/*`)),
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['s3:GetObject', 's3:PutObject', 's3:AbortMultipartUpload'],
      resourceArns: [this.bucket.arnForObjects(`${ATHENA_RESULTS_PREFIX}*`)],
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      resourceArns: [this.key.keyArn],
    });
    if (grantee.grantPrincipal instanceof Construct) {
      const bucketId = Stack.of(this).getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
      Validations.of(grantee.grantPrincipal).acknowledge(
        ...[...TELEMETRY_TABLES, ATHENA_RESULTS_PREFIX.slice(0, -1)].map((p) => ({
          id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${p}/*]`,
          reason: READ_PREFIX_REASON,
        })),
      );
    }
    return grant;
  }
}

const READ_PREFIX_REASON =
  'Athena reads every Parquet file under a table prefix (Firehose names each file itself) and writes its ' +
  "query results under athena-results/ with the caller's permissions: no fixed object key exists to grant on.";

const PREFIX_REASON =
  'Objects under one prefix of the telemetry bucket (a table, or the delivery errors): Firehose names each ' +
  'file itself (yyyy/MM/dd/HH/<stream>-<n>-<time>-<uuid>.parquet), so no fixed object key exists to grant on.';
