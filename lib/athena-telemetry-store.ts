import { Aws, Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as athena from 'aws-cdk-lib/aws-athena';
import * as glue from 'aws-cdk-lib/aws-glue';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as firehose from 'aws-cdk-lib/aws-kinesisfirehose';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { StoreEnvironment } from '../lambdas/domain/lambda-environment';
import {
  PARTITION_COLUMN,
  type StoreColumnType,
  TELEMETRY_TABLE_COLUMNS,
  TELEMETRY_TABLES,
  type TelemetryTable,
} from '../lambdas/domain/store-columns';
import {
  ACCESS_LOG_RETENTION_DAYS,
  ATHENA_BYTES_SCANNED_CUTOFF,
  ATHENA_RESULTS_PREFIX,
  ATHENA_RESULTS_RETENTION_DAYS,
  DEFAULT_DATABASE_NAME,
  DEFAULT_FIREHOSE_BUFFER_INTERVAL_S,
  DEFAULT_TELEMETRY_RETENTION_DAYS,
  FIREHOSE_BUFFER_INTERVAL_S_MAX,
  FIREHOSE_BUFFER_INTERVAL_S_MIN,
  FIREHOSE_BUFFER_SIZE_MIB,
  FIREHOSE_ERRORS_PREFIX,
  FIREHOSE_ERRORS_RETENTION_DAYS,
  GLUE_DATABASE_NAME_PATTERN,
  PARTITION_PROJECTION_START,
  STANDARD_IA_MIN_STORAGE_DAYS,
  TELEMETRY_IA_AFTER_DAYS,
  TELEMETRY_IA_MIN_OBJECT_BYTES,
} from './constants';
import { encryptedLogGroup } from './encrypted-log-group';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validateIntegerInRange, validatePattern } from './validate-props';

/** Column type → Glue (Hive) type of the Parquet column. */
const GLUE_TYPES: { readonly [T in StoreColumnType]: string } = {
  TIMESTAMP: 'timestamp',
  VARCHAR: 'string',
  INTEGER: 'int',
  BIGINT: 'bigint',
  DOUBLE: 'double',
  BOOLEAN: 'boolean',
  MAP_VARCHAR_BIGINT: 'map<string,bigint>',
};

/** Construct id part per table (construct IDs are a contract). */
const TABLE_IDS: { readonly [T in TelemetryTable]: string } = {
  gpu_windows: 'GpuWindows',
  efa_windows: 'EfaWindows',
  events: 'Events',
};

/** Props of {@link AthenaTelemetryStore}. */
export interface AthenaTelemetryStoreProps {
  /**
   * Glue database of the three tables: 1–255 of `[a-z0-9_]` (Glue and Athena names). One per
   * account and region: give a second stack in the same region another name.
   * @default 'gpu_sentinel'
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
   * What happens to the bucket, its key and the Glue database when the stack is deleted.
   * @default RemovalPolicy.RETAIN (telemetry and ledger history outlive the stack)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The default telemetry store (docs/design.md §4): Amazon Data Firehose → S3 (Parquet) → Glue Data
 * Catalog → Amazon Athena, serverless and open to every account and region.
 *
 * - a customer-managed KMS key (rotation on) for the bucket, the streams and the query results;
 * - the telemetry bucket: SSE-KMS with a bucket key, TLS only, public access blocked, versioned,
 *   server access logs to a second bucket, lifecycle: telemetry expires after `retentionDays`,
 *   query results after 7 days, delivery errors after 30, incomplete uploads after 1;
 * - a Glue database and one table per telemetry table (`gpu_windows`, `efa_windows`, `events`),
 *   Parquet SerDe, columns from the same list the adapters write, partitioned by the string
 *   column `datehour` projected as a date over Firehose's `yyyy/MM/dd/HH/` prefixes (no crawler,
 *   no `MSCK REPAIR`: Athena computes the partitions);
 * - three Firehose delivery streams (Direct PUT, SSE with the key) converting JSON to Parquet
 *   (OpenX JSON SerDe in, Snappy Parquet out, schema from the Glue table) into
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
      props.databaseName ?? DEFAULT_DATABASE_NAME,
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
    const stack = Stack.of(this);

    this.key = new kms.Key(this, 'Key', {
      description: `gpu-sentinel: encrypts the telemetry bucket, Firehose streams and Athena results of ${databaseName}`,
      enableKeyRotation: true,
      removalPolicy,
    });
    this.accessLogsBucket = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: Duration.days(ACCESS_LOG_RETENTION_DAYS) }],
      removalPolicy,
    });
    this.bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      versioned: true,
      serverAccessLogsBucket: this.accessLogsBucket,
      serverAccessLogsPrefix: 'telemetry-bucket/',
      lifecycleRules: [
        ...TELEMETRY_TABLES.map((t) => ({
          id: `expire-${t}`,
          prefix: `${t}/`,
          expiration: Duration.days(retentionDays),
          noncurrentVersionExpiration: Duration.days(1),
        })),
        // Old hours are read rarely: Standard-IA costs about half (the cost model's largest storage item).
        ...(retentionDays >= TELEMETRY_IA_AFTER_DAYS + STANDARD_IA_MIN_STORAGE_DAYS
          ? TELEMETRY_TABLES.map((t) => ({
              id: `infrequent-access-${t}`,
              prefix: `${t}/`,
              objectSizeGreaterThan: TELEMETRY_IA_MIN_OBJECT_BYTES,
              transitions: [
                {
                  storageClass: s3.StorageClass.INFREQUENT_ACCESS,
                  transitionAfter: Duration.days(TELEMETRY_IA_AFTER_DAYS),
                },
              ],
            }))
          : []),
        {
          id: 'expire-athena-results',
          prefix: ATHENA_RESULTS_PREFIX,
          expiration: Duration.days(ATHENA_RESULTS_RETENTION_DAYS),
          noncurrentVersionExpiration: Duration.days(1),
        },
        {
          id: 'expire-firehose-errors',
          prefix: FIREHOSE_ERRORS_PREFIX,
          expiration: Duration.days(FIREHOSE_ERRORS_RETENTION_DAYS),
          noncurrentVersionExpiration: Duration.days(1),
        },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
      removalPolicy,
    });

    Validations.of(this.bucket).acknowledge({
      id: 'CloudFormation-Validate::W9003',
      reason:
        "aws-cdk-lib writes a lifecycle rule's ObjectSizeGreaterThan (the Standard-IA size floor) as a number " +
        'where the resource schema says string; CloudFormation converts it, so the rule is the same.',
    });

    this.database = new glue.CfnDatabase(this, 'Database', {
      catalogId: Aws.ACCOUNT_ID,
      databaseInput: {
        name: databaseName,
        description: 'gpu-sentinel telemetry: GPU windows with the waste ledger, EFA windows, events',
      },
    });
    this.database.applyRemovalPolicy(removalPolicy);
    this.databaseName = databaseName;

    const tables: Partial<Record<TelemetryTable, glue.CfnTable>> = {};
    for (const table of TELEMETRY_TABLES) {
      const location = `s3://${this.bucket.bucketName}/${table}/`;
      const t = new glue.CfnTable(this, `${TABLE_IDS[table]}Table`, {
        catalogId: Aws.ACCOUNT_ID,
        databaseName,
        tableInput: {
          name: table,
          description: `gpu-sentinel ${table}: Parquet written by Firehose, partitioned by arrival hour`,
          tableType: 'EXTERNAL_TABLE',
          parameters: {
            classification: 'parquet',
            'projection.enabled': 'true',
            [`projection.${PARTITION_COLUMN}.type`]: 'date',
            [`projection.${PARTITION_COLUMN}.format`]: 'yyyy/MM/dd/HH',
            [`projection.${PARTITION_COLUMN}.range`]: `${PARTITION_PROJECTION_START},NOW`,
            [`projection.${PARTITION_COLUMN}.interval`]: '1',
            [`projection.${PARTITION_COLUMN}.interval.unit`]: 'HOURS',
            'storage.location.template': `${location}\${${PARTITION_COLUMN}}/`,
          },
          partitionKeys: [{ name: PARTITION_COLUMN, type: 'string' }],
          storageDescriptor: {
            location,
            columns: TELEMETRY_TABLE_COLUMNS[table].map(([name, type]) => ({ name, type: GLUE_TYPES[type] })),
            inputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat',
            outputFormat: 'org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat',
            serdeInfo: {
              serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe',
            },
          },
        },
      });
      t.node.addDependency(this.database);
      t.applyRemovalPolicy(removalPolicy);
      tables[table] = t;
    }
    this.tables = tables as { readonly [T in TelemetryTable]: glue.CfnTable };

    const { logGroup } = encryptedLogGroup(this, {
      keyId: 'DeliveryLogsKey',
      groupId: 'DeliveryLogs',
      description: 'gpu-sentinel: encrypts the Firehose delivery error log group',
      retention: props.logRetention,
      removalPolicy,
    });
    this.deliveryRole = new iam.Role(this, 'DeliveryRole', {
      assumedBy: new iam.ServicePrincipal('firehose.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
      }),
      description: 'gpu-sentinel Firehose: reads the Glue schema, writes Parquet to the telemetry bucket',
    });
    this.deliveryRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetBucketLocation', 's3:ListBucket', 's3:ListBucketMultipartUploads'],
        resources: [this.bucket.bucketArn],
      }),
    );
    this.deliveryRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:AbortMultipartUpload', 's3:GetObject', 's3:PutObject'],
        resources: [...TELEMETRY_TABLES, FIREHOSE_ERRORS_PREFIX.slice(0, -1)].map((p) =>
          this.bucket.arnForObjects(`${p}/*`),
        ),
      }),
    );
    this.deliveryRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['glue:GetTable', 'glue:GetTableVersion', 'glue:GetTableVersions'],
        resources: [
          stack.formatArn({ service: 'glue', resource: 'catalog' }),
          stack.formatArn({ service: 'glue', resource: 'database', resourceName: databaseName }),
          ...TELEMETRY_TABLES.map((t) =>
            stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${databaseName}/${t}` }),
          ),
        ],
      }),
    );
    this.deliveryRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: [this.key.keyArn],
      }),
    );
    logGroup.grantWrite(this.deliveryRole);

    const streams: Partial<Record<TelemetryTable, firehose.CfnDeliveryStream>> = {};
    for (const table of TELEMETRY_TABLES) {
      const stream = new logs.LogStream(this, `${TABLE_IDS[table]}DeliveryLogStream`, {
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
            logStreamName: stream.logStreamName,
          },
          dataFormatConversionConfiguration: {
            enabled: true,
            inputFormatConfiguration: { deserializer: { openXJsonSerDe: {} } },
            outputFormatConfiguration: { serializer: { parquetSerDe: { compression: 'SNAPPY' } } },
            schemaConfiguration: {
              catalogId: Aws.ACCOUNT_ID,
              databaseName,
              tableName: table,
              region: Aws.REGION,
              roleArn: this.deliveryRole.roleArn,
              versionId: 'LATEST',
            },
          },
        },
      });
      s.node.addDependency(this.deliveryRole);
      s.node.addDependency(tables[table] as glue.CfnTable);
      streams[table] = s;
    }
    this.streams = streams as { readonly [T in TelemetryTable]: firehose.CfnDeliveryStream };
    const bucketId = stack.getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
    Validations.of(this.deliveryRole).acknowledge(
      ...[...TELEMETRY_TABLES, FIREHOSE_ERRORS_PREFIX.slice(0, -1)].map((p) => ({
        id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${p}/*]`,
        reason: PREFIX_REASON,
      })),
    );

    this.workGroup = new athena.CfnWorkGroup(this, 'WorkGroup', {
      name: `${databaseName}-${Aws.STACK_NAME}`,
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
   * The ingest Lambda's settings: `STORE=athena`, `FIREHOSE_GPU_STREAM`, `FIREHOSE_EFA_STREAM`,
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
