import { METRIC_NAMES } from '../../lambdas/domain/cloudwatch-metrics';
import { TELEMETRY_TABLES } from '../../lambdas/domain/store-columns';
import { DEFAULT_FIREHOSE_BUFFER_INTERVAL_S, INGEST_MEMORY_MIB } from '../../lib/constants';
import type { CostModelInput } from './pipeline-cost';

/**
 * The cost model's default input: the measured sizes and the default deployment
 * (`gpu-sentinel cost-model` with no option).
 */

/** Measured on 2026-11-28 (BENCHMARKS.md), this repository's code. */
export const MEASURED = {
  /**
   * `gpu_windows` Firehose JSON row (short keys, epoch-ms times): the rows the ingest handler sends
   * for the agent's own 60 s batch over the fake NVML's p5 preset, every NVML metric, GPM and
   * process lists (`test/bench/ingest-throughput.ts`, "Firehose rows of the last batch"). The
   * store-cost bench's worst case, every metric a 17-digit double and every counter 11 digits, is
   * 1,491 B ({@link WORST_CASE_FIREHOSE_ROW_BYTES}).
   */
  firehoseRowBytes: 1055,
  /** Parquet per GPU row, a 5-minute Firehose file of the default fleet (512 GPUs; store-cost bench: 382 B for one instance's). */
  parquetRowBytes: 226,
  /**
   * `efa_windows` Firehose JSON row as stored, the mean of a p5 request's 64 rows (12 device counters
   * or 22 port counters, each the sum of the request's 6 windows: `efaRowsOf`; store-cost bench,
   * `efa_minute_row_json_bytes`; a single window's row is 495 B).
   */
  efaRowBytes: 502,
  /** Parquet per EFA row of 6 windows summed (store-cost bench, a day file of one device's two entries: `parquet_bytes_per_efa_minute_row_day_file`). */
  efaParquetRowBytes: 73,
  /** Timestream metered record size, GPU window (store-cost bench, `timestream_gpu_record_bytes`). */
  timestreamRecordBytes: 1565,
  /**
   * Timestream metered record size, an EFA entry's record of a request (6 windows summed; the mean of
   * a device's and a port's: store-cost bench, `timestream_efa_minute_record_bytes`).
   */
  timestreamEfaRecordBytes: 453,
  /**
   * Ingest CPU per batch of 6 windows × 8 GPUs + 8 horizons on one core, ms: the median of five
   * ingest-throughput bench runs on a 2 vCPU Xeon (2.56 ms; 2.2–3.2 across runs, BENCHMARKS.md
   * 2026-11-28). Measured on x86-64, billed on arm64 Lambda (Graviton): not measured there.
   */
  lambdaCpuMsPerBatch: 2.6,
} as const;

/** `gpu_windows` Firehose JSON row of the store-cost bench: every metric present, each a 17-digit double or an 11-digit counter (the largest a row gets). */
export const WORST_CASE_FIREHOSE_ROW_BYTES = 1491;

/**
 * Custom metric series of the default deployment (no team listed): the names of `METRIC_NAMES`
 * but `Alerts` and `RejectedBatches` without dimensions (16), `RejectedBatches` by `StatusClass`
 * (2), ingest's `WastedUsd` by `Team` for `other` and `untagged` (2), `Alerts` by `Severity` (3).
 * Each listed team adds 3 (`WastedUsd`, `FleetWasteRate`, `FleetWastedUsdPerHour`).
 */
export const DEFAULT_CUSTOM_METRICS = Object.keys(METRIC_NAMES).length - 2 + 2 + 2 + 3;

/**
 * The default deployment: 60 s batches of 6 windows of 10 s, 8 GPUs per instance, the Athena
 * store (S3 kept 365 days, the stack's default), REST API, 512 GPUs (64 p5.48xlarge) sharing the
 * fixed costs, no team listed in `metricsTeams` (the stack's default): 23 custom metric series
 * ({@link DEFAULT_CUSTOM_METRICS}). Every instance runs its own jobs
 * (`multiNodeInstanceShare` 0): a fleet of multi-node jobs adds the straggler query.
 */
export const DEFAULT_COST_MODEL_INPUT: CostModelInput = {
  store: 'athena',
  api: 'rest',
  gpusPerInstance: 8,
  windowS: 10,
  windowsPerBatch: 6,
  lambdaMemoryMib: INGEST_MEMORY_MIB,
  lambdaCpuMsPerBatch: MEASURED.lambdaCpuMsPerBatch,
  awsCallsPerBatch: 2,
  awsCallMs: 15,
  firehoseRowBytes: MEASURED.firehoseRowBytes,
  parquetRowBytes: MEASURED.parquetRowBytes,
  efaDevicesPerInstance: 32,
  efaRowBytes: MEASURED.efaRowBytes,
  efaParquetRowBytes: MEASURED.efaParquetRowBytes,
  timestreamRecordBytes: MEASURED.timestreamRecordBytes,
  timestreamEfaRecordBytes: MEASURED.timestreamEfaRecordBytes,
  dynamodbReadUnitsPerBatch: 1,
  logBytesPerBatch: 2400,
  retentionMonths: 12,
  fleetGpus: 512,
  customMetrics: DEFAULT_CUSTOM_METRICS,
  firehoseStreams: TELEMETRY_TABLES.length,
  firehoseBufferS: DEFAULT_FIREHOSE_BUFFER_INTERVAL_S,
  athenaScanBytesPerGpuMonth: 30 * 8e6,
  publishesPerGpuMonth: 10,
  multiNodeInstanceShare: 0,
  athenaColumnShare: 1 / 3,
  fleetQueryColumnShare: 0.1,
  fleetQueryPartitionHours: 2,
  athenaQueryS: 1.5,
  reportQueriesPerRun: 4,
  reportRunS: 60,
  fleetLogBytesPerRun: 2000,
  logRetentionMonths: 1,
};
