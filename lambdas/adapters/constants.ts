/** Records per `WriteRecords` request, count (Timestream limit, https://docs.aws.amazon.com/timestream/latest/developerguide/ts-limits.html). */
export const TIMESTREAM_MAX_RECORDS_PER_WRITE = 100;

/** Multi-measure record `MeasureName` of table `gpu_windows` (docs/design.md §4). */
export const GPU_MEASURE_NAME = 'gpu';

/** Multi-measure record `MeasureName` of table `efa_windows` (docs/design.md §4). */
export const EFA_MEASURE_NAME = 'efa';

/** Multi-measure record `MeasureName` of table `events` (docs/design.md §4). */
export const EVENT_MEASURE_NAME = 'event';

/** Default Timestream table names (docs/design.md §4). */
export const DEFAULT_TIMESTREAM_TABLES = {
  gpu: 'gpu_windows',
  efa: 'efa_windows',
  events: 'events',
} as const;

/** SNS email subject, characters (printable ASCII, ≤ 100; https://docs.aws.amazon.com/sns/latest/api/API_Publish.html). */
export const SNS_MAX_SUBJECT_CHARS = 100;

/** SetInstanceHealth attempts on `ResourceContention`, count (retry with backoff, aws.md §5.1). */
export const SET_INSTANCE_HEALTH_MAX_ATTEMPTS = 4;

/** First backoff delay after `ResourceContention`, ms; doubles each retry. */
export const SET_INSTANCE_HEALTH_BASE_DELAY_MS = 200;

/** EC2 tag key put on an instance outside a group instead of replacing it (docs/design.md §8). */
export const QUARANTINE_TAG_KEY = 'gpu-sentinel:quarantine';

/** Lifetime of a group-history item in the DynamoDB state table, s (7 days; TTL attribute `expires_at`). */
export const GROUP_HISTORY_TTL_S = 7 * 24 * 3600;

/** How long an instance lookup (EC2 + Auto Scaling) is reused, ms: 5 min. Tags and group membership change rarely; a batch arrives every 10 s per instance. */
export const INSTANCE_CACHE_TTL_MS = 5 * 60 * 1000;

/** How long "EC2 knows no such instance" is reused, ms: 30 s, short so that a just-launched instance (eventual consistency of DescribeInstances) is found soon. */
export const INSTANCE_NEGATIVE_CACHE_TTL_MS = 30 * 1000;

/** Most instances kept in the lookup cache, entries (the oldest is evicted first); bounds a Lambda's memory whatever the fleet size. */
export const INSTANCE_CACHE_MAX_ENTRIES = 10_000;

/** Records per Firehose `PutRecordBatch` call, count (hard limit; Firehose API reference, PutRecordBatch). */
export const FIREHOSE_MAX_RECORDS_PER_CALL = 500;

/** Bytes per Firehose `PutRecordBatch` call, all records together (4 MiB hard limit; Firehose API reference, PutRecordBatch). */
export const FIREHOSE_MAX_BYTES_PER_CALL = 4 * 1024 * 1024;

/** Bytes per Firehose record, before base64 (1,000 KiB hard limit; Firehose API reference, PutRecordBatch). */
export const FIREHOSE_MAX_RECORD_BYTES = 1000 * 1024;

/**
 * Firehose ingestion billing increment, bytes: each record is billed rounded up to the next 5 KB
 * (Amazon Data Firehose pricing page, "Direct PUT"; read as 5 KiB, the larger reading). Rows are
 * packed several to a record so a 1.5 KB row is not billed as 5 KB.
 */
export const FIREHOSE_BILLING_INCREMENT_BYTES = 5 * 1024;

/** Attempts of `PutRecordBatch` for the records a call answered as failed (`FailedPutCount` > 0), count. */
export const FIREHOSE_PUT_MAX_ATTEMPTS = 4;

/** First backoff before re-sending failed Firehose records, ms; doubles each attempt (full jitter). */
export const FIREHOSE_RETRY_BASE_DELAY_MS = 100;

/**
 * Longest a record waits in a Firehose buffer before delivery, s (`BufferingHints.IntervalInSeconds`
 * maximum 900; Firehose API reference, BufferingHints). Bounds how far a row's S3 hour partition
 * (arrival time) can lie after its window time, on top of the agent's spool age.
 */
export const FIREHOSE_MAX_BUFFER_INTERVAL_S = 900;

/** Rows per `GetQueryResults` page, count (the API's `MaxResults` maximum; Athena API reference). */
export const ATHENA_MAX_RESULTS_PER_PAGE = 1000;

/** First wait before asking `GetQueryExecution` again, ms; doubles up to {@link ATHENA_POLL_MAX_DELAY_MS}. */
export const ATHENA_POLL_FIRST_DELAY_MS = 200;

/** Longest wait between two `GetQueryExecution` calls, ms. */
export const ATHENA_POLL_MAX_DELAY_MS = 2000;

/**
 * How long a read waits for an Athena query before giving up (and `StopQueryExecution`), ms. A
 * report over a day of a 1,000-GPU fleet scans well under 1 GB; DML queries time out at 30 min
 * (Athena service quotas) — we do not wait that long inside a Lambda.
 */
export const ATHENA_DEFAULT_QUERY_TIMEOUT_MS = 120_000;

/** Glue Data Catalog the Athena tables live in (Athena's default `AwsDataCatalog`). */
export const ATHENA_CATALOG = 'AwsDataCatalog';

/** Default Glue database of the Athena store (Glue names: lower case, digits, underscore). */
export const DEFAULT_ATHENA_DATABASE = 'gpu_sentinel';

/** Bytes of a dimension's name and value together, UTF-8 (Timestream quotas: "dimension name + value pair size per series", 2 KB). */
export const TIMESTREAM_MAX_DIMENSION_PAIR_BYTES = 2048;

/** Bytes of one measure value, UTF-8 (Timestream `MeasureValue.Value` ≤ 2048; quotas, "measure value size per multi-measure record"). */
export const TIMESTREAM_MAX_MEASURE_VALUE_BYTES = 2048;

/**
 * Bytes of one record as Timestream meters it (8 B time + UTF-8 of dimension names and values and
 * measure names, + 8 B per DOUBLE/BIGINT, 1 B per BOOLEAN, UTF-8 of VARCHAR values; Timestream
 * "metering writes" page), at most 2 KB (quotas, "maximum record size").
 */
export const TIMESTREAM_MAX_RECORD_BYTES = 2048;

/** Instances per `DescribeInstances` page, count (EC2 `MaxResults` 5..1000, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html). */
export const DESCRIBE_INSTANCES_PAGE_SIZE = 1000;

/** EC2 tag Auto Scaling puts on each member instance: its group's name. */
export const AUTO_SCALING_GROUP_TAG = 'aws:autoscaling:groupName';

/** Metric data per `PutMetricData` request, count (CloudWatch limit 1,000, https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html). */
export const PUT_METRIC_DATA_MAX_DATA = 1000;
