import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as timestream from 'aws-cdk-lib/aws-timestream';
import { Construct } from 'constructs';
import type { StoreEnvironment } from '../lambdas/domain/lambda-environment';
import type { TelemetryTable } from '../lambdas/domain/store-columns';
import {
  DEFAULT_DATABASE_NAME,
  DEFAULT_MAGNETIC_RETENTION_DAYS,
  DEFAULT_MEMORY_RETENTION_HOURS,
  MAGNETIC_REJECTS_PREFIX,
  MAGNETIC_RETENTION_DAYS_MAX,
  MAGNETIC_RETENTION_DAYS_MIN,
  MEMORY_RETENTION_HOURS_MAX,
  MEMORY_RETENTION_HOURS_MIN,
  TIMESTREAM_NAME_MAX_LENGTH,
  TIMESTREAM_NAME_MIN_LENGTH,
  TIMESTREAM_NAME_PATTERN,
} from './constants';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validateIntegerInRange, validatePattern } from './validate-props';

/** Props of {@link TelemetryDatabase}. */
export interface TelemetryDatabaseProps {
  /**
   * Name of the Timestream database. 3–256 characters of `[a-zA-Z0-9_.-]` (Timestream
   * `CreateDatabase` API).
   * @default 'gpu_sentinel'
   */
  readonly databaseName?: string;
  /**
   * How long records stay in the memory store (fast point queries, in-order writes), hours,
   * integer in 1..8766 (Timestream quotas page).
   * @default 24
   */
  readonly memoryRetentionHours?: number;
  /**
   * How long records stay in the magnetic store (history, finance reports), days, integer in
   * 1..73000 (Timestream quotas page).
   * @default 365
   */
  readonly magneticRetentionDays?: number;
  /**
   * What happens to the database, its tables and its key when the stack is deleted.
   * @default RemovalPolicy.RETAIN (telemetry and ledger history outlive the stack)
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The Amazon Timestream for LiveAnalytics database of gpu-sentinel (docs/design.md §4): one database
 * encrypted with a customer-managed KMS key (rotation on) and three tables, `gpu_windows`,
 * `efa_windows` and `events`, with memory and magnetic retention and magnetic-store writes enabled
 * (late batches replayed from an agent's spool are accepted asynchronously). Magnetic-store writes
 * Timestream rejects later (asynchronously, so never in the API answer) are reported as objects
 * under `timestream-magnetic-rejects/<table>/` of a KMS-encrypted, TLS-only bucket (30-day lifecycle).
 *
 * Note: AWS closed Timestream for LiveAnalytics to new customers on 2025-06-20; accounts that
 * already use it keep it (`store: 'timestream'`). In an account that never used it, creating the
 * database fails at deploy time: those deploy the default store, {@link AthenaTelemetryStore}.
 *
 * @example
 * const db = new TelemetryDatabase(this, 'TelemetryDatabase', { memoryRetentionHours: 48 });
 * db.grantWrite(myFunction);
 */
export class TelemetryDatabase extends Construct implements TelemetryStoreResources {
  /** `timestream`. */
  readonly kind = 'timestream' as const;
  /** The customer-managed key encrypting the database (rotation on). */
  readonly key: kms.Key;
  /** Where Timestream reports the magnetic-store writes it rejected. */
  readonly rejectedDataBucket: s3.Bucket;
  /** The database. */
  readonly database: timestream.CfnDatabase;
  /** The database name (as given; `Ref` of the database). */
  readonly databaseName: string;
  /** Table of 10 s GPU windows plus the ledger: `gpu_windows`. */
  readonly gpuTable: timestream.CfnTable;
  /** Table of EFA counter deltas: `efa_windows`. */
  readonly efaTable: timestream.CfnTable;
  /** Table of hardware events: `events`. */
  readonly eventsTable: timestream.CfnTable;

  /**
   * @throws {PropsValidationError} when `databaseName`, `memoryRetentionHours` or
   *   `magneticRetentionDays` is out of range
   */
  constructor(scope: Construct, id: string, props: TelemetryDatabaseProps = {}) {
    super(scope, id);
    const databaseName = validatePattern(
      'databaseName',
      props.databaseName ?? DEFAULT_DATABASE_NAME,
      TIMESTREAM_NAME_PATTERN,
      `a Timestream name of ${TIMESTREAM_NAME_MIN_LENGTH}..${TIMESTREAM_NAME_MAX_LENGTH} characters [a-zA-Z0-9_.-]`,
    );
    const memoryRetentionHours = validateIntegerInRange(
      'memoryRetentionHours',
      props.memoryRetentionHours ?? DEFAULT_MEMORY_RETENTION_HOURS,
      MEMORY_RETENTION_HOURS_MIN,
      MEMORY_RETENTION_HOURS_MAX,
    );
    const magneticRetentionDays = validateIntegerInRange(
      'magneticRetentionDays',
      props.magneticRetentionDays ?? DEFAULT_MAGNETIC_RETENTION_DAYS,
      MAGNETIC_RETENTION_DAYS_MIN,
      MAGNETIC_RETENTION_DAYS_MAX,
    );
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.key = new kms.Key(this, 'Key', {
      description: `gpu-sentinel: encrypts the Timestream database ${databaseName}`,
      enableKeyRotation: true,
      removalPolicy,
    });
    this.database = new timestream.CfnDatabase(this, 'Database', {
      databaseName,
      kmsKeyId: this.key.keyArn,
    });
    this.database.applyRemovalPolicy(removalPolicy);
    this.databaseName = this.database.ref;
    this.rejectedDataBucket = this.createRejectsBucket(removalPolicy);

    const table = (tableId: string, tableName: TelemetryTable) =>
      this.createTable(tableId, tableName, { memoryRetentionHours, magneticRetentionDays, removalPolicy });
    this.gpuTable = table('GpuWindowsTable', 'gpu_windows');
    this.efaTable = table('EfaWindowsTable', 'efa_windows');
    this.eventsTable = table('EventsTable', 'events');
    Validations.of(this).acknowledge({
      id: 'CloudFormation-Validate::W3697',
      reason:
        'Timestream for LiveAnalytics is in maintenance mode since 2025-06-20 but keeps serving existing ' +
        'accounts; this store is for them (store: timestream); every other account gets the Athena store (docs/design.md §4).',
    });
  }

  /**
   * Where Timestream reports the magnetic-store writes it rejects (`MagneticRejects`): encrypted with
   * {@link key}, TLS only, private, objects expire after 30 days.
   */
  private createRejectsBucket(removalPolicy: RemovalPolicy): s3.Bucket {
    const bucket = new s3.Bucket(this, 'MagneticRejects', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ id: 'expire-rejects', expiration: Duration.days(30) }],
      removalPolicy,
    });
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Only Timestream writes here (reports of rejected magnetic-store records, read by operators); ' +
        'its writes are in CloudTrail, so server access logs would add a second bucket for no new audit.',
    });
    return bucket;
  }

  /**
   * One table with the database's retention and magnetic-store writes on, its rejects reported under
   * `timestream-magnetic-rejects/<table>/` of {@link rejectedDataBucket}.
   */
  private createTable(
    tableId: string,
    tableName: TelemetryTable,
    retention: {
      readonly memoryRetentionHours: number;
      readonly magneticRetentionDays: number;
      readonly removalPolicy: RemovalPolicy;
    },
  ): timestream.CfnTable {
    const t = new timestream.CfnTable(this, tableId, {
      databaseName: this.databaseName,
      tableName,
      retentionProperties: {
        MemoryStoreRetentionPeriodInHours: String(retention.memoryRetentionHours),
        MagneticStoreRetentionPeriodInDays: String(retention.magneticRetentionDays),
      },
      magneticStoreWriteProperties: {
        EnableMagneticStoreWrites: true,
        MagneticStoreRejectedDataLocation: {
          S3Configuration: {
            BucketName: this.rejectedDataBucket.bucketName,
            ObjectKeyPrefix: `${MAGNETIC_REJECTS_PREFIX}${tableName}/`,
            EncryptionOption: 'SSE_KMS',
            KmsKeyId: this.key.keyArn,
          },
        },
      },
    });
    t.applyRemovalPolicy(retention.removalPolicy);
    return t;
  }

  /**
   * What a function needs to reach this store: `STORE=timestream`, `TIMESTREAM_DATABASE`,
   * `TIMESTREAM_GPU_TABLE`, `TIMESTREAM_EFA_TABLE`, `TIMESTREAM_EVENTS_TABLE`.
   *
   * @returns environment variables
   */
  environment(): StoreEnvironment {
    return {
      STORE: this.kind,
      TIMESTREAM_DATABASE: this.databaseName,
      TIMESTREAM_GPU_TABLE: this.gpuTable.attrName,
      TIMESTREAM_EFA_TABLE: this.efaTable.attrName,
      TIMESTREAM_EVENTS_TABLE: this.eventsTable.attrName,
    };
  }

  /** ARNs of the three tables, in the order gpu, efa, events. */
  get tableArns(): string[] {
    return [this.gpuTable.attrArn, this.efaTable.attrArn, this.eventsTable.attrArn];
  }

  /**
   * Lets `grantee` write records: `timestream:WriteRecords` on the three tables, and
   * `timestream:DescribeEndpoints` on `*` (endpoint discovery; the action has no resource-level
   * permissions, so `*` is the only possible resource). No KMS permission is needed: Timestream
   * uses the grant it created on the key when the database was created.
   *
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantWrite(grantee: iam.IGrantable): iam.Grant {
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: ['timestream:WriteRecords'],
      resourceArns: this.tableArns,
    });
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['timestream:DescribeEndpoints'],
      resourceArns: ['*'],
    });
    return grant;
  }

  /**
   * Lets `grantee` read the GPU windows: `timestream:Select` on the GPU windows table and
   * `timestream:DescribeEndpoints` on `*` (endpoint discovery has no resource-level permission: the
   * grantee's construct acknowledges cdk-nag's `AwsSolutions-IAM5[Resource::*]` with its other `*` actions).
   *
   * @param grantee - the principal to grant to
   * @returns the grant of `timestream:Select`
   */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    const grant = iam.Grant.addToPrincipal({
      grantee,
      actions: ['timestream:Select'],
      resourceArns: [this.gpuTable.attrArn],
    });
    iam.Grant.addToPrincipal({ grantee, actions: ['timestream:DescribeEndpoints'], resourceArns: ['*'] });
    return grant;
  }
}
