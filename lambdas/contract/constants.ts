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
 * Most `efa[]` entries (device/port pairs) one host reports per flush window: 64. The largest EFA
 * hosts, p5.48xlarge and p5e.48xlarge, have 32 EFA devices (reference gpu.md §4.4, from AWS's "32
 * EFA devices and one ENA"), and the agent sends two entries per device and window: its port 1
 * counters and its device counters (port 0). p5en has 16 devices, p4d/p4de 4.
 */
export const MAX_EFA_PORTS_PER_WINDOW = 64;

/**
 * Most flush windows of EFA entries one batch is sized for: 64, the agent's largest merge of spooled
 * batches (10 min 40 s of 10 s windows; a 60 s send merges 6, a replay after an outage as many as
 * fit 1 MiB). Not checked on its own: it sizes {@link MAX_EFA_PORTS_PER_BATCH}.
 */
export const MAX_EFA_WINDOWS_PER_BATCH = 64;

/**
 * Most entries in `efa[]` in one batch: {@link MAX_EFA_PORTS_PER_WINDOW} × {@link MAX_EFA_WINDOWS_PER_BATCH}
 * = 4,096, so a p5's spooled windows merge as an A100 host's do (one request per 60 s send instead of
 * one per 10 s window). The byte limits still bound every batch and bind first: a p5 window (8 GPU
 * windows with processes, 64 EFA entries) is ≈ 40 KB of JSON, so the agent's 1 MiB request holds ≈ 25
 * windows (≈ 1,600 entries); 4,096 entries of the agent's widest shape (every delta 12 digits) are
 * 2.52 MB of JSON, within {@link MAX_BODY_DECOMPRESSED_BYTES} (3.11 MB). More → 400 at path `efa`.
 */
export const MAX_EFA_PORTS_PER_BATCH = MAX_EFA_PORTS_PER_WINDOW * MAX_EFA_WINDOWS_PER_BATCH;

/**
 * The `efa[]` limit of APIs deployed before {@link MAX_EFA_PORTS_PER_BATCH} was sized per window: 64
 * entries per batch, one p5 window. Every batch the agent's batcher builds stays within it (one flush
 * of the largest host), so only merged requests exceed it; an agent that gets `400` at path `efa` for
 * a merged request from such an API sends the same batches again merged within this limit, and keeps
 * to it for an hour of sends (`SpoolingSender`, docs/deploy.md "Upgrading").
 */
export const LEGACY_MAX_EFA_PORTS_PER_BATCH = 64;

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
