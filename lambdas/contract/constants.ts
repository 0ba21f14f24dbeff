/**
 * Published limits of the wire contract v1 (`POST /v1/batches`). The API enforces every one of them
 * and the agent sizes its batches by them. Source: docs/design.md §3.
 */

/** The only schema identifier this API accepts in `batch.schema`. */
export const SCHEMA_V1 = 'gpu-sentinel/v1' as const;

/** Largest request body on the wire (gzip or plain), bytes: 1 MiB. Larger → 413. */
export const MAX_BODY_COMPRESSED_BYTES = 1024 * 1024;

/** Largest request body after gzip decompression, bytes: 8 MiB. Larger (a gzip bomb) → 413. */
export const MAX_BODY_DECOMPRESSED_BYTES = 8 * 1024 * 1024;

/** Most distinct GPUs (by `gpu.index`) in one batch. NVIDIA's largest nodes have 8–72; 64 leaves room. */
export const MAX_GPUS_PER_BATCH = 64;

/** Most entries in `windows[]` (flush + horizon, all GPUs) in one batch. */
export const MAX_WINDOWS_PER_BATCH = 512;

/** Most entries in `efa[]` (device/port pairs) in one batch. A p5.48xlarge has 32 EFA devices. */
export const MAX_EFA_PORTS_PER_BATCH = 64;

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
