import { Duration } from 'aws-cdk-lib';
import type * as glue from 'aws-cdk-lib/aws-glue';
import * as s3 from 'aws-cdk-lib/aws-s3';
import {
  PARTITION_COLUMN,
  type StoreColumnType,
  TELEMETRY_TABLE_COLUMNS,
  TELEMETRY_TABLES,
  type TelemetryTable,
} from '../lambdas/domain/store-columns';
import {
  ATHENA_RESULTS_PREFIX,
  ATHENA_RESULTS_RETENTION_DAYS,
  FIREHOSE_ERRORS_PREFIX,
  FIREHOSE_ERRORS_RETENTION_DAYS,
  GLACIER_IR_MIN_STORAGE_DAYS,
  PARTITION_PROJECTION_START,
  STANDARD_IA_MIN_STORAGE_DAYS,
  TELEMETRY_IA_AFTER_DAYS,
  TELEMETRY_IA_MIN_OBJECT_BYTES,
} from './constants';

/**
 * How the Athena store lays telemetry out: the Glue table of each telemetry table (what Firehose
 * converts to and Athena reads) and the telemetry bucket's lifecycle.
 */

/** Column type → Glue (Hive) type of the Parquet column. */
export const GLUE_TYPES: { readonly [T in StoreColumnType]: string } = {
  TIMESTAMP: 'timestamp',
  VARCHAR: 'string',
  INTEGER: 'int',
  BIGINT: 'bigint',
  DOUBLE: 'double',
  BOOLEAN: 'boolean',
  MAP_VARCHAR_BIGINT: 'map<string,bigint>',
};

/**
 * Where telemetry files older than {@link TELEMETRY_IA_AFTER_DAYS} (30 days: the daily and weekly
 * reports read the last 8) go, by how long they are kept: S3 Glacier Instant Retrieval (≈ 1/6 of
 * Standard, reads immediate at $0.03 per GB) when they stay there its 90-day minimum, else
 * Standard-IA (≈ 1/2) when they stay its 30-day minimum, else nowhere.
 *
 * @param retentionDays - days telemetry is kept
 * @returns the storage class and the age of the move, d; `undefined` when files never move
 */
export function telemetryColdStorage(
  retentionDays: number,
): { readonly storageClass: 'GLACIER_IR' | 'STANDARD_IA'; readonly afterDays: number } | undefined {
  const after = TELEMETRY_IA_AFTER_DAYS;
  if (retentionDays >= after + GLACIER_IR_MIN_STORAGE_DAYS)
    return { storageClass: 'GLACIER_IR', afterDays: after };
  if (retentionDays >= after + STANDARD_IA_MIN_STORAGE_DAYS)
    return { storageClass: 'STANDARD_IA', afterDays: after };
  return undefined;
}

/**
 * The telemetry bucket's lifecycle: each table's files expire after `retentionDays` (old versions
 * a day later) and move to {@link telemetryColdStorage} after 30 days (files above 128 KiB only);
 * query results expire after 7 days, delivery errors after 30, incomplete uploads after 1.
 */
export function telemetryLifecycleRules(retentionDays: number): s3.LifecycleRule[] {
  const cold = telemetryColdStorage(retentionDays);
  return [
    ...TELEMETRY_TABLES.map((t) => ({
      id: `expire-${t}`,
      prefix: `${t}/`,
      expiration: Duration.days(retentionDays),
      noncurrentVersionExpiration: Duration.days(1),
    })),
    // Old hours are read rarely (the cost model's largest storage item).
    ...(cold === undefined
      ? []
      : TELEMETRY_TABLES.map((t) => ({
          id: `cold-storage-${t}`,
          prefix: `${t}/`,
          objectSizeGreaterThan: TELEMETRY_IA_MIN_OBJECT_BYTES,
          transitions: [
            {
              storageClass:
                cold.storageClass === 'GLACIER_IR'
                  ? s3.StorageClass.GLACIER_INSTANT_RETRIEVAL
                  : s3.StorageClass.INFREQUENT_ACCESS,
              transitionAfter: Duration.days(cold.afterDays),
            },
          ],
        }))),
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
  ];
}

/**
 * The Glue table input of one telemetry table: external, Parquet, its columns from the list the
 * adapters write, partitioned by the string column `datehour` that Athena projects as a date over
 * the hours since {@link PARTITION_PROJECTION_START} (no crawler, no `MSCK REPAIR`).
 */
export function glueTableInput(table: TelemetryTable, location: string): glue.CfnTable.TableInputProperty {
  return {
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
  };
}
