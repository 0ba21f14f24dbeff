/** Records per `WriteRecords` request, count (Timestream limit, https://docs.aws.amazon.com/timestream/latest/developerguide/ts-limits.html). */
export const TIMESTREAM_MAX_RECORDS_PER_WRITE = 100;

/** Multi-measure record `MeasureName` of table `gpu_windows` (DESIGN §4). */
export const GPU_MEASURE_NAME = 'gpu';

/** Multi-measure record `MeasureName` of table `efa_windows` (DESIGN §4). */
export const EFA_MEASURE_NAME = 'efa';

/** Multi-measure record `MeasureName` of table `events` (DESIGN §4). */
export const EVENT_MEASURE_NAME = 'event';

/** Default Timestream table names (DESIGN §4). */
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

/** EC2 tag key put on an instance outside a group instead of replacing it (DESIGN §8). */
export const QUARANTINE_TAG_KEY = 'gpu-sentinel:quarantine';

/** Lifetime of a group-history item in the DynamoDB state table, s (7 days; TTL attribute `expires_at`). */
export const GROUP_HISTORY_TTL_S = 7 * 24 * 3600;

/** How long an instance lookup (EC2 + Auto Scaling) is reused, ms: 5 min. Tags and group membership change rarely; a batch arrives every 10 s per instance. */
export const INSTANCE_CACHE_TTL_MS = 5 * 60 * 1000;

/** How long "EC2 knows no such instance" is reused, ms: 30 s, short so that a just-launched instance (eventual consistency of DescribeInstances) is found soon. */
export const INSTANCE_NEGATIVE_CACHE_TTL_MS = 30 * 1000;

/** Most instances kept in the lookup cache, entries (the oldest is evicted first); bounds a Lambda's memory whatever the fleet size. */
export const INSTANCE_CACHE_MAX_ENTRIES = 10_000;
