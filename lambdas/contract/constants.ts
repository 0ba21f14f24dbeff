/**
 * Published limits of the wire contract v1 (`POST /v1/batches`). The API enforces every one of them
 * and the agent sizes its batches by them. Source: docs/design.md §3.
 */

/** The only schema identifier this API accepts in `batch.schema`. */
export const SCHEMA_V1 = 'gpu-sentinel/v1' as const;

/** Largest request body on the wire (gzip or plain), bytes: 1 MiB. Larger → 413. */
export const MAX_BODY_COMPRESSED_BYTES = 1024 * 1024;

/**
 * Largest request payload API Gateway (REST) accepts, bytes: 10 MB, a hard quota; a compressed
 * body also counts at its decompressed size. Larger → API Gateway itself answers
 * `413 {"message":"Request Too Long"}` and the Lambda never runs. Source: API Gateway developer
 * guide, "Quotas for configuring and running a REST API" (payload size 10 MB, not adjustable);
 * re:Post "API GW with POST request payload more than 10MB" for the decompressed-size behaviour.
 */
export const API_GATEWAY_MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;

/**
 * Largest synchronous Lambda invocation payload, bytes: 6 MB (Lambda answers
 * `RequestEntityTooLargeException: Request must be smaller than 6291456 bytes`). Behind API
 * Gateway the payload is the whole proxy event serialized as JSON: the body string escaped, plus
 * headers and request context. Source: Lambda developer guide, "Lambda quotas" (invocation
 * payload 6 MB synchronous); the exact byte count from Lambda's own error message.
 */
export const LAMBDA_SYNC_MAX_PAYLOAD_BYTES = 6_291_456;

/**
 * How long API Gateway (REST) waits for the Lambda integration, seconds: 29 (the default quota;
 * raisable only for regional/private APIs at the cost of account throttling). Past it API Gateway
 * answers `504 {"message":"Endpoint request timed out"}` while the Lambda may still finish.
 * Source: API Gateway developer guide, "Quotas for configuring and running a REST API"
 * (integration timeout 50 ms – 29 s).
 */
export const API_GATEWAY_INTEGRATION_TIMEOUT_S = 29;

/**
 * Bytes of a proxy event that are not the body (headers ≤ 10 KB by API Gateway's header quota,
 * request context, multi-value copies of the headers, JSON punctuation), kept free below
 * {@link LAMBDA_SYNC_MAX_PAYLOAD_BYTES}: 64 KiB.
 */
export const PROXY_EVENT_ENVELOPE_RESERVE_BYTES = 64 * 1024;

/**
 * Worst-case growth of a JSON text when it becomes the proxy event's `body` string: every `"`
 * and `\` gains an escaping backslash, so at most 2× for a valid ASCII JSON document (JSON
 * texts carry no raw control characters; the agent sends ASCII except tag values and `detail`).
 */
export const PROXY_EVENT_BODY_ESCAPE_FACTOR = 2;

/**
 * Largest request body after gzip decompression, bytes: (6 MB Lambda payload − 64 KiB envelope)
 * ÷ 2 for escaping = 3,112,960 bytes (≈ 2.97 MiB), so any contract-valid body fits one Lambda
 * invocation behind API Gateway (`application/json` is not a binary media type, so no base64
 * growth applies). Larger (or a gzip bomb) → 413. The agent's batches stay far below it (1 MiB).
 */
export const MAX_BODY_DECOMPRESSED_BYTES = Math.floor(
  (LAMBDA_SYNC_MAX_PAYLOAD_BYTES - PROXY_EVENT_ENVELOPE_RESERVE_BYTES) / PROXY_EVENT_BODY_ESCAPE_FACTOR,
);

/** The only request media type the ingest API accepts (`Content-Type`, parameters ignored). Else → 415. */
export const BATCH_MEDIA_TYPE = 'application/json';

/**
 * Media types the ingest REST API declares binary (`binaryMediaTypes`): API Gateway passes such a
 * body to Lambda base64-encoded (`isBase64Encoded: true`), every other body as UTF-8 text. Declared
 * so that a raw gzip upload reaches the handler byte-exact (and is refused with 415), never
 * mangled by a text conversion. One list for the CDK API and the local API Gateway model.
 * Source: API Gateway developer guide, "Binary media types for REST APIs".
 */
export const API_BINARY_MEDIA_TYPES: readonly string[] = [
  'application/gzip',
  'application/x-gzip',
  'application/octet-stream',
];

/** Most distinct GPUs (by `gpu.index`) in one batch. NVIDIA's largest nodes have 8–72; 64 leaves room. */
export const MAX_GPUS_PER_BATCH = 64;

/** Most entries in `windows[]` (flush + horizon, all GPUs) in one batch. */
export const MAX_WINDOWS_PER_BATCH = 512;

/**
 * Most entries in `efa[]` (device/port pairs) in one batch. A p5.48xlarge has 32 EFA devices, 64
 * entries per flush window (each device's counters and its port's): 384 lets the agent merge a
 * minute of six 10 s windows into one request, as it does on hosts with fewer devices (64 allowed
 * one window per request on a p5: six times the API Gateway and Lambda requests). A merged p5
 * request is ≈ 300 kB of JSON, far below `MAX_BODY_DECOMPRESSED_BYTES`.
 */
export const MAX_EFA_PORTS_PER_BATCH = 384;

/** Most entries in `events[]` in one batch. */
export const MAX_EVENTS_PER_BATCH = 256;

/** Oldest accepted timestamp, seconds before the server's clock: 7 days. */
export const MAX_PAST_S = 7 * 24 * 3600;

/** Newest accepted timestamp, seconds after the server's clock: 5 minutes of clock skew. */
export const MAX_FUTURE_S = 5 * 60;

/** Longest flush window, seconds (the agent flushes every 10 s by default). */
export const MAX_FLUSH_WINDOW_S = 3600;

/** Longest horizon window, seconds (default horizon 15 min; up to 1 h allowed). */
export const MAX_HORIZON_WINDOW_S = 3600;

/** Longest free-text field (`events[].detail`), characters. */
export const MAX_DETAIL_CHARS = 1024;

/** Most instance tags carried in `host.tags` (EC2 allows 50 per resource). */
export const MAX_TAGS = 50;

/** Most GPU compute processes a GPU may report in one window. */
export const MAX_COMPUTE_PROCESSES = 4096;

/** The event kinds of contract v1, as docs/design.md §3 names them. */
export const EVENT_KINDS = [
  'xid',
  'gpu_lost',
  'ecc_dbe',
  'remap_failure',
  'spot_interruption',
  'rebalance_recommendation',
  'agent_start',
  'agent_stop',
  'data_dropped',
  'profiling_source_changed',
] as const;

/** Where an event was read: NVML event set, the kernel log, IMDS, or the agent itself. */
export const EVENT_SOURCES = ['nvml', 'kmsg', 'imds', 'agent'] as const;

/**
 * The profiling metrics of a GPU window: NVML GPM (Hopper+) or DCGM `DCGM_FI_PROF_*` ratios, 0..1.
 * Absent together when `agent.profiling_source` is `none`; never derived from `gpu_util`.
 */
export const PROFILING_METRIC_NAMES = [
  'sm_active',
  'sm_occupancy',
  'tensor_active',
  'dram_active',
  'fp16_active',
  'fp32_active',
  'fp64_active',
] as const;

/** Where profiling counters (`sm_active`, …) came from; `none` = they are absent. */
export const PROFILING_SOURCES = ['gpm', 'dcgm', 'none'] as const;

/**
 * Request header that turns `POST /v1/batches` into a signed probe: the API runs every check it
 * runs on a batch (API Gateway's SigV4/IAM authorization and resource policy, the handler's
 * instance-session and EC2 checks, contract validation) and stores, judges and sends nothing,
 * answering `200 {"probe": true, "verified": [...]}` or the 4xx a real batch would get. Value `1`.
 * Sent by `gpu-sentinel doctor`; API Gateway passes request headers to the proxy integration.
 */
export const PROBE_HEADER = 'x-gpu-sentinel-probe';
