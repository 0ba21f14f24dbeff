/**
 * Limits and defaults the CDK app validates props against. One line each: unit and source.
 */

import type { StoreKind } from '../lambdas/domain/lambda-environment';

/** Timestream database/table name length, characters, minimum. Source: Timestream `CreateDatabase` API, `DatabaseName` (3–256). */
export const TIMESTREAM_NAME_MIN_LENGTH = 3;
/** Timestream database/table name length, characters, maximum. Source: Timestream `CreateDatabase` API, `DatabaseName` (3–256). */
export const TIMESTREAM_NAME_MAX_LENGTH = 256;
/** A whole Timestream name: 3–256 of `[a-zA-Z0-9_.-]`. Source: Timestream `CreateDatabase` API, `DatabaseName`. */
export const TIMESTREAM_NAME_PATTERN = /^[a-zA-Z0-9_.-]{3,256}$/;
/**
 * The regions where Amazon Timestream for LiveAnalytics exists (its write API has an endpoint),
 * AWS region codes. Elsewhere `AWS::Timestream::Database` cannot be created: `store: 'timestream'`
 * is refused at synth for a known region outside this list, and by a CloudFormation `Rules`
 * assertion on `AWS::Region` for an environment-agnostic stack. Source: AWS General Reference,
 * "Amazon Timestream endpoints and quotas", Timestream for Live Analytics endpoints
 * (https://docs.aws.amazon.com/general/latest/gr/timestream.html), read 2026-11-27; the same list
 * as botocore 1.43 `endpoints.json` (`ingest.timestream`, partitions `aws` and `aws-us-gov`).
 */
export const TIMESTREAM_LIVEANALYTICS_REGIONS: readonly string[] = [
  'us-east-1',
  'us-east-2',
  'us-west-2',
  'ap-south-1',
  'ap-southeast-2',
  'ap-northeast-1',
  'eu-central-1',
  'eu-west-1',
  'us-gov-west-1',
];
/** Memory store retention, hours, minimum. Source: Timestream quotas page (ts-limits), memory store 1 h..8766 h. */
export const MEMORY_RETENTION_HOURS_MIN = 1;
/** Memory store retention, hours, maximum (≈ 1 year). Source: Timestream quotas page (ts-limits). */
export const MEMORY_RETENTION_HOURS_MAX = 8766;
/** Magnetic store retention, days, minimum. Source: Timestream quotas page (ts-limits), magnetic store 1 d..73000 d. */
export const MAGNETIC_RETENTION_DAYS_MIN = 1;
/** Magnetic store retention, days, maximum (200 years). Source: Timestream quotas page (ts-limits). */
export const MAGNETIC_RETENTION_DAYS_MAX = 73_000;
/** Memory store retention, hours, our default: one day of hot, fast-query windows. */
export const DEFAULT_MEMORY_RETENTION_HOURS = 24;
/** Magnetic store retention, days, our default: one year of history for finance reports. */
export const DEFAULT_MAGNETIC_RETENTION_DAYS = 365;

/** AWS Organizations id pattern. Source: Organizations API `Organization.Id`, `o-[a-z0-9]{10,32}`. */
export const ORGANIZATION_ID_PATTERN = /^o-[a-z0-9]{10,32}$/;
/** Loose e-mail shape for SNS email subscriptions (SNS itself confirms the address). */
export const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** API Gateway stage throttling default, requests per second (account default is 10,000; docs/aws.md §4). */
export const DEFAULT_THROTTLING_RATE_LIMIT = 1000;
/** API Gateway stage burst default, requests (account default is 5,000; docs/aws.md §4). */
export const DEFAULT_THROTTLING_BURST_LIMIT = 2000;
/** Stage name of the ingest API; part of the agent's URL and of the agent policy's ARN. */
export const INGEST_STAGE_NAME = 'prod';
/**
 * Smallest response body API Gateway compresses, bytes. Setting any value turns on payload
 * compression, which also makes API Gateway decompress `Content-Encoding: gzip` request bodies.
 * Source: API Gateway developer guide, "Content encoding for REST APIs" (range 0–10,485,760).
 */
export const MIN_COMPRESSION_SIZE_BYTES = 1024;

/** Ingest Lambda memory, MiB: JSON parse + gunzip of a 1 MiB body with headroom. */
export const INGEST_MEMORY_MIB = 512;
/** Ingest Lambda timeout, seconds: below API Gateway's 29 s integration timeout (`API_GATEWAY_INTEGRATION_TIMEOUT_S`). */
export const INGEST_TIMEOUT_SECONDS = 25;
/**
 * Concurrent executions Lambda always keeps unreserved in an account and region: reserving more
 * than the account's concurrency quota minus this fails the deploy ("decreases account's
 * UnreservedConcurrentExecution below its minimum value"). New accounts may start with a quota of
 * 10, so the stack reserves nothing unless asked. Source: Lambda API reference,
 * `PutFunctionConcurrency` ("leave at least 100 simultaneous executions unreserved") and the
 * developer guide, "Configuring reserved concurrency"; `aws lambda get-account-settings` shows the quota
 * (`AccountLimit.ConcurrentExecutions`) and the pool left (`UnreservedConcurrentExecutions`).
 */
export const LAMBDA_UNRESERVED_CONCURRENCY_MIN = 100;
/**
 * What a reserved concurrency must be, in words, for validation messages: an integer, and the
 * account's quota at least that plus {@link LAMBDA_UNRESERVED_CONCURRENCY_MIN}.
 */
export const RESERVED_CONCURRENCY_RULE = `an integer N >= 0 (0: reserve nothing, the default); Lambda keeps ${LAMBDA_UNRESERVED_CONCURRENCY_MIN} of the account's concurrency unreserved, so the account's Lambda concurrency quota must be >= N + ${LAMBDA_UNRESERVED_CONCURRENCY_MIN} (\`aws lambda get-account-settings\` shows it as AccountLimit.ConcurrentExecutions)`;
/** Smallest Lambda memory, MiB (Lambda quotas page: 128 MB to 10,240 MB). */
export const LAMBDA_MEMORY_MIB_MIN = 128;
/** Largest Lambda memory, MiB (Lambda quotas page). */
export const LAMBDA_MEMORY_MIB_MAX = 10_240;
/** Longest Lambda timeout, s (Lambda quotas page: 900 seconds, 15 minutes). */
export const LAMBDA_TIMEOUT_S_MAX = 900;
/** Powertools service name of the ingest Lambda. */
export const INGEST_SERVICE_NAME = 'gpu-sentinel-ingest';

/**
 * Opt-out tag value (docs/design.md §8): `gpu-sentinel:remediation=off` (the domain's
 * `REMEDIATION_OPT_OUT_TAG`) on an Auto Scaling group denies SetInstanceHealth at IAM level.
 */
export const REMEDIATION_OPT_OUT_VALUE = 'off';
/** DynamoDB state table partition key attribute. */
export const STATE_PARTITION_KEY = 'pk';
/** DynamoDB state table sort key attribute. */
export const STATE_SORT_KEY = 'sk';
/** DynamoDB state table TTL attribute, epoch seconds. */
export const STATE_TTL_ATTRIBUTE = 'expires_at';

/**
 * An IAM role ARN a deployment may name as an agent role: `arn:<partition>:iam::<account or *>:role/<path/>name`,
 * `*` and `?` allowed (matched with `ArnLike`). Source: IAM identifiers page (role ARN format).
 */
export const AGENT_ROLE_ARN_PATTERN = /^arn:aws[a-z-]*:iam::(\d{12}|\*):role\/[\w+=,.@*?/-]{1,512}$/;

/**
 * The IAM condition key set on requests signed with credentials an EC2 instance obtained from its
 * instance profile: the ARN of that instance; absent for any other credentials (an `AssumeRole`
 * from elsewhere, even of the same role). Keys are case-insensitive. Source: IAM User Guide,
 * "AWS global condition context keys" (`ec2:SourceInstanceArn`, properties of the role session);
 * EC2 User Guide, "IAM roles for Amazon EC2".
 */
export const INSTANCE_CREDENTIALS_CONDITION_KEY = 'ec2:SourceInstanceARN';

/** Report Lambda memory, MiB: Vega renders four charts to SVG in-process; 1 GiB with headroom. */
export const REPORT_MEMORY_MIB = 1024;
/** Report Lambda timeout, seconds: a month of slices from the store plus six S3 puts; Lambda allows 900. */
export const REPORT_TIMEOUT_SECONDS = 300;
/** Powertools service name of the report Lambda. */
export const REPORT_SERVICE_NAME = 'gpu-sentinel-report';
/** S3 key prefix of the report files (the report Lambda may write under it only). */
export const REPORT_KEY_PREFIX = 'reports/';
/**
 * When the scheduled reports run, EventBridge Scheduler cron in UTC: the day report shortly after
 * midnight, the week report on Mondays, the month report on the 1st (each covers the period that
 * ended at that midnight).
 */
export const REPORT_SCHEDULES = {
  day: 'cron(5 0 * * ? *)',
  week: 'cron(20 0 ? * MON *)',
  month: 'cron(35 0 1 * ? *)',
} as const;
/** Default store (one of the domain's `STORE_KINDS`): Timestream for LiveAnalytics is closed to new customers since 2025-06-20 (Timestream developer guide banner). */
export const DEFAULT_STORE: StoreKind = 'athena';

/** Glue database names: lower-case letters, digits and `_`, 1–255 characters (Athena: "Name tables, databases and columns"). */
export const GLUE_DATABASE_NAME_PATTERN = /^[a-z0-9_]{1,255}$/;
/**
 * Firehose buffer size with record format conversion, MiB: the most Firehose buffers (128) and
 * above the 64 MiB minimum that format conversion imposes (Firehose developer guide, "Convert input
 * data format"; `BufferingHints.SizeInMBs` 1..128). Bigger Parquet files, fewer S3 requests.
 */
export const FIREHOSE_BUFFER_SIZE_MIB = 128;
/** Firehose buffer interval, s, smallest allowed with format conversion (CloudFormation `AWS::KinesisFirehose::DeliveryStream` `BufferingHints.IntervalInSeconds` 60..900). */
export const FIREHOSE_BUFFER_INTERVAL_S_MIN = 60;
/** Firehose buffer interval, s, largest (`BufferingHints.IntervalInSeconds` ≤ 900, Firehose API reference). */
export const FIREHOSE_BUFFER_INTERVAL_S_MAX = 900;
/** Firehose buffer interval, s, our default: one Parquet file per stream per 5 min at fleet scale. */
export const DEFAULT_FIREHOSE_BUFFER_INTERVAL_S = 300;
/** Telemetry kept in S3, days (lifecycle expiration), our default: one year of history for finance reports. */
export const DEFAULT_TELEMETRY_RETENTION_DAYS = 365;
/** Athena query results kept in S3, days (lifecycle expiration): reports read them once. */
export const ATHENA_RESULTS_RETENTION_DAYS = 7;
/**
 * Telemetry files move to S3 Standard-IA after this many days, d: the daily and weekly reports
 * read the last 8 days (Standard); older hours are read rarely. Standard-IA bills ≥ 30 days and
 * ≥ 128 KiB per object (S3 pricing page), so the transition needs at least
 * {@link STANDARD_IA_MIN_STORAGE_DAYS} more days of retention and only files above
 * {@link TELEMETRY_IA_MIN_OBJECT_BYTES} move.
 */
export const TELEMETRY_IA_AFTER_DAYS = 30;
/** Standard-IA bills every object for at least this many days, d (S3 pricing page): no transition for shorter stays. */
export const STANDARD_IA_MIN_STORAGE_DAYS = 30;
/**
 * S3 Glacier Instant Retrieval bills every object for at least this many days, d, and at least
 * 128 KiB (S3 pricing page): telemetry moves there instead of Standard-IA when it stays that long
 * after {@link TELEMETRY_IA_AFTER_DAYS}; reads stay immediate ($0.03 per GB retrieved).
 */
export const GLACIER_IR_MIN_STORAGE_DAYS = 90;
/** Smallest telemetry file moved to Standard-IA, bytes: S3 bills smaller IA objects as 128 KiB (S3 pricing page). */
export const TELEMETRY_IA_MIN_OBJECT_BYTES = 128 * 1024;
/** Firehose delivery errors kept in S3, days: long enough for an operator to read and replay them. */
export const FIREHOSE_ERRORS_RETENTION_DAYS = 30;
/** S3 server access logs kept, days. */
export const ACCESS_LOG_RETENTION_DAYS = 90;
/**
 * Bytes one Athena query may scan before Athena cancels it (workgroup `BytesScannedCutoffPerQuery`,
 * minimum 10 MB): a cost guard, 50 GiB ≈ $0.25 at $5/TB.
 */
export const ATHENA_BYTES_SCANNED_CUTOFF = 50 * 1024 ** 3;
/** First hour of the partition projection range, `yyyy/MM/dd/HH` (no telemetry is older). */
export const PARTITION_PROJECTION_START = '2025/01/01/00';
/** S3 prefix of Athena query results in the telemetry bucket. */
export const ATHENA_RESULTS_PREFIX = 'athena-results/';
/** S3 prefix of records Firehose could not convert or deliver. */
export const FIREHOSE_ERRORS_PREFIX = 'firehose-errors/';
/** S3 prefix of Timestream magnetic-store writes it rejected (reported asynchronously, never in the WriteRecords answer; Timestream API `MagneticStoreRejectedDataLocation`). */
export const MAGNETIC_REJECTS_PREFIX = 'timestream-magnetic-rejects/';

/** Period of the monitoring alarms and dashboard graphs, s: the fleet evaluator's schedule (every 5 min). */
export const MONITORING_PERIOD_S = 300;
/**
 * Share of API requests answered 5xx above which the ingest alarm fires, fraction 0..1, our
 * default: agents retry 5xx from their spool, so a few are noise; 5 % over two of three periods
 * means batches are piling up on hosts.
 */
export const DEFAULT_INGEST_5XX_RATE_THRESHOLD = 0.05;
/** Periods the fleet waste-rate alarm needs above its threshold, our default: 6 × 5 min, a sustained half hour (waste is money, not an outage). */
export const WASTE_RATE_ALARM_PERIODS = 6;
/**
 * Periods of 5 min in a row without an invocation before a scheduled function's `NotRunning`
 * alarm fires: three missed runs of the 5-minute schedule, so one late or skipped run never fires it.
 */
export const SCHEDULE_MISSED_PERIODS = 3;
/** Fleet evaluator memory, MiB: a few thousand windows per run in memory; 512 MiB with headroom. */
export const FLEET_MEMORY_MIB = 512;
/**
 * Fleet evaluator timeout, seconds: below the 5-minute schedule so two runs never overlap (Athena
 * queries take seconds each; one per recently seen instance plus two).
 */
export const FLEET_TIMEOUT_SECONDS = 240;
/** Powertools service name of the fleet evaluator. */
export const FLEET_SERVICE_NAME = 'gpu-sentinel-fleet';
/** How often the fleet evaluator runs, minutes (docs/design.md §6: fleet rules every 5 minutes, the `agent_silent` threshold). */
export const FLEET_RATE_MINUTES = 5;
