import {
  FIREHOSE_BILLING_INCREMENT_BYTES,
  FIREHOSE_MAX_RECORD_BYTES,
} from '../../lambdas/adapters/constants';
import { METRIC_NAMES } from '../../lambdas/domain/cloudwatch-metrics';
import { TELEMETRY_TABLES } from '../../lambdas/domain/store-columns';
import {
  DEFAULT_FIREHOSE_BUFFER_INTERVAL_S,
  INGEST_MEMORY_MIB,
  STANDARD_IA_MIN_STORAGE_DAYS,
  TELEMETRY_IA_AFTER_DAYS,
} from '../../lib/constants';
import { type PriceName, SERVICE_PRICES } from './service-prices';

/** Hours in a month as AWS bills them (730 h = 8,760 h / 12). */
export const HOURS_PER_MONTH = 730;
const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;
const DAYS_PER_MONTH = HOURS_PER_MONTH / 24;
const GB = 1e9;
const TB = 1e12;
const MIB_PER_GB = 1024;

/**
 * What the cost of one GPU-month depends on. The byte and time figures are measured from the
 * code (BENCHMARKS.md: `test/bench/store-cost.ts` for the rows, `test/bench/ingest-throughput.ts`
 * for a batch and its CPU); the rest is the deployment's configuration.
 */
export interface CostModelInput {
  /** The telemetry store (`STORE`). */
  readonly store: 'athena' | 'timestream';
  /** The API in front of the ingest Lambda: the stack deploys `rest`; `http` shown for comparison. */
  readonly api: 'rest' | 'http';
  /** GPUs per instance (one agent, one batch for all of them), 1..64. */
  readonly gpusPerInstance: number;
  /** Flush window length, s > 0 (the agent's `flushIntervalMs` / 1000). */
  readonly windowS: number;
  /** Flush windows per GPU in one batch (batch interval / window length), ≥ 1. */
  readonly windowsPerBatch: number;
  /** Ingest Lambda memory, MiB (the stack's `INGEST_MEMORY_MIB`). */
  readonly lambdaMemoryMib: number;
  /** Ingest Lambda CPU time per batch, ms (measured: the throughput bench). */
  readonly lambdaCpuMsPerBatch: number;
  /** AWS calls the Lambda waits on per batch (state read, store write), each billed as `awsCallMs`. */
  readonly awsCallsPerBatch: number;
  /** Billed wait per AWS call, ms (an assumption: in-region round trip of DynamoDB and Firehose). */
  readonly awsCallMs: number;
  /** `gpu_windows` row as Firehose JSON, bytes (measured: store-cost bench, every metric present). */
  readonly firehoseRowBytes: number;
  /** `gpu_windows` row in Parquet (Snappy), bytes (measured: store-cost bench, 5-minute file). */
  readonly parquetRowBytes: number;
  /** Timestream record of a GPU window, metered bytes (measured: store-cost bench). */
  readonly timestreamRecordBytes: number;
  /** DynamoDB read request units per batch (one strongly consistent Query of ≤ 4 KB). */
  readonly dynamodbReadUnitsPerBatch: number;
  /** CloudWatch Logs bytes per batch: the Lambda's START/END/REPORT lines, its one log line, the EMF document, the API access log line. */
  readonly logBytesPerBatch: number;
  /** Months of data kept (S3 lifecycle / Timestream magnetic retention): storage billed at steady state. */
  readonly retentionMonths: number;
  /** GPUs of the deployment: fixed monthly costs (custom metrics, Firehose files, reports) are shared by them. */
  readonly fleetGpus: number;
  /** Custom metric series of the deployment (names × dimension values: ingest EMF, fleet evaluator). */
  readonly customMetrics: number;
  /** Firehose delivery streams, each writing one S3 file per buffer interval (S3 PUTs). */
  readonly firehoseStreams: number;
  /** Firehose buffer interval, s (the stack's `firehoseBufferIntervalSeconds`). */
  readonly firehoseBufferS: number;
  /** Athena bytes scanned per GPU per month by reports (daily report over 8 days of partitions, ~1/3 of the columns). */
  readonly athenaScanBytesPerGpuMonth: number;
  /** Alerts and remediation decisions published per GPU-month (SNS). */
  readonly publishesPerGpuMonth: number;
}

/** Measured on 2026-11-23 (BENCHMARKS.md), this repository's code. */
export const MEASURED = {
  /** `gpu_windows` Firehose JSON row, every metric present (store-cost bench). */
  firehoseRowBytes: 2233,
  /** Parquet per GPU row, 5-minute file of one instance (store-cost bench). */
  parquetRowBytes: 356,
  /** Timestream metered record size, GPU window (store-cost bench). */
  timestreamRecordBytes: 1430,
  /** Ingest CPU per batch of 6 windows × 8 GPUs + 8 horizons, ms (ingest-throughput bench, 2 vCPU). */
  lambdaCpuMsPerBatch: 6,
} as const;

/**
 * The default deployment: 60 s batches of 6 windows of 10 s, 8 GPUs per instance, the Athena
 * store (S3 kept 365 days, the stack's default), REST API, 512 GPUs (64 p5.48xlarge) sharing the
 * fixed costs. Custom metrics: the 18 names of `METRIC_NAMES` without dimensions, the 4 with a
 * `Team` dimension for 4 teams (16), and ≈ 10 `Rule`×`Severity` pairs of alerts that fire: 44.
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
  timestreamRecordBytes: MEASURED.timestreamRecordBytes,
  dynamodbReadUnitsPerBatch: 1,
  logBytesPerBatch: 1500,
  retentionMonths: 12,
  fleetGpus: 512,
  customMetrics: Object.keys(METRIC_NAMES).length + 4 * 4 + 10,
  firehoseStreams: TELEMETRY_TABLES.length,
  firehoseBufferS: DEFAULT_FIREHOSE_BUFFER_INTERVAL_S,
  athenaScanBytesPerGpuMonth: 30 * 8e6,
  publishesPerGpuMonth: 10,
};

/** One line of the bill. */
export interface CostItem {
  /** AWS service. */
  readonly service: string;
  /** The meter of {@link SERVICE_PRICES}. */
  readonly price: PriceName;
  /** Units of that meter per GPU-month. */
  readonly unitsPerGpuMonth: number;
  /** USD per GPU-month. */
  readonly usdPerGpuMonth: number;
}

/** The cost of one GPU-month. */
export interface CostModel {
  readonly input: CostModelInput;
  /** Batches (API requests, Lambda invocations) per GPU-month. */
  readonly requestsPerGpuMonth: number;
  /** Flush windows per GPU-month. */
  readonly windowsPerGpuMonth: number;
  readonly items: readonly CostItem[];
  /** USD per GPU-month, all items. */
  readonly totalUsdPerGpuMonth: number;
}

/** Thrown for an input the model cannot price (names the field). */
export class CostModelInputError extends Error {
  override readonly name = 'CostModelInputError';
}

/**
 * Prices one GPU-month of the deployed pipeline: API Gateway requests, Lambda requests and
 * GB-seconds, the DynamoDB state read, the store (Firehose ingestion + conversion in 5 KB steps,
 * S3 at steady state — the first 30 days in Standard, the rest in Standard-IA —, S3 PUTs per
 * Firehose file and lifecycle transitions, Athena scans; or Timestream writes, 24 h memory
 * store, magnetic store), SNS publishes, CloudWatch Logs and the custom metrics. Left out: free
 * tiers, KMS requests, data transfer (in-region), X-Ray, the report Lambda's own runs.
 *
 * @param input - the deployment and the measured sizes
 * @returns the items and their total
 * @throws {CostModelInputError} naming a field that is not a finite number in its range
 */
export function pipelineCost(input: CostModelInput = DEFAULT_COST_MODEL_INPUT): CostModel {
  for (const [field, value] of Object.entries(input)) {
    if (typeof value === 'number' && !(Number.isFinite(value) && value >= 0)) {
      throw new CostModelInputError(`Expected \`${field}\` to be a finite number ≥ 0, got \`${value}\``);
    }
  }
  for (const field of ['gpusPerInstance', 'windowS', 'windowsPerBatch', 'fleetGpus'] as const) {
    if (!(input[field] > 0))
      throw new CostModelInputError(`Expected \`${field}\` to be > 0, got \`${input[field]}\``);
  }
  const windowsPerGpuMonth = SECONDS_PER_MONTH / input.windowS;
  const requestsPerGpuMonth = windowsPerGpuMonth / input.windowsPerBatch / input.gpusPerInstance;
  const items: CostItem[] = [];
  const add = (service: string, price: PriceName, unitsPerGpuMonth: number): void => {
    items.push({
      service,
      price,
      unitsPerGpuMonth,
      usdPerGpuMonth: unitsPerGpuMonth * SERVICE_PRICES[price].usd,
    });
  };

  add(
    'API Gateway',
    input.api === 'rest' ? 'apiGatewayRestRequest' : 'apiGatewayHttpRequest',
    requestsPerGpuMonth,
  );
  add('Lambda', 'lambdaRequest', requestsPerGpuMonth);
  const billedS = (input.lambdaCpuMsPerBatch + input.awsCallsPerBatch * input.awsCallMs) / 1000;
  add('Lambda', 'lambdaArmGbSecond', requestsPerGpuMonth * billedS * (input.lambdaMemoryMib / MIB_PER_GB));
  add('DynamoDB', 'dynamodbReadRequestUnit', requestsPerGpuMonth * input.dynamodbReadUnitsPerBatch);

  if (input.store === 'athena') {
    const billedGb = (requestsPerGpuMonth * firehoseBilledBytesPerBatch(input)) / GB;
    add('Firehose', 'firehoseIngestGb', billedGb);
    add('Firehose', 'firehoseConversionGb', billedGb);
    // Steady state: every month kept is billed each month; the stack moves files older than
    // TELEMETRY_IA_AFTER_DAYS to Standard-IA (gpu_windows files are over 128 KiB at fleet scale).
    const parquetGbPerMonth = (windowsPerGpuMonth * input.parquetRowBytes) / GB;
    const retentionDays = input.retentionMonths * DAYS_PER_MONTH;
    const movesToIa = retentionDays >= TELEMETRY_IA_AFTER_DAYS + STANDARD_IA_MIN_STORAGE_DAYS;
    const standardMonths = movesToIa ? TELEMETRY_IA_AFTER_DAYS / DAYS_PER_MONTH : input.retentionMonths;
    add('S3', 's3StandardGbMonth', parquetGbPerMonth * standardMonths);
    if (movesToIa)
      add('S3', 's3StandardIaGbMonth', parquetGbPerMonth * (input.retentionMonths - standardMonths));
    const filesPerMonth = SECONDS_PER_MONTH / input.firehoseBufferS;
    add('S3', 's3PutRequest', (filesPerMonth * input.firehoseStreams) / input.fleetGpus);
    if (input.retentionMonths > standardMonths)
      add('S3', 's3TransitionRequest', filesPerMonth / input.fleetGpus);
    add('Athena', 'athenaTbScanned', input.athenaScanBytesPerGpuMonth / TB);
  } else {
    const unitsPerRecord = Math.ceil(input.timestreamRecordBytes / 1024);
    add('Timestream', 'timestreamWrite', windowsPerGpuMonth * unitsPerRecord);
    const memoryGb = ((86_400 / input.windowS) * input.timestreamRecordBytes) / GB;
    add('Timestream', 'timestreamMemoryGbHour', memoryGb * HOURS_PER_MONTH);
    const monthGb = (windowsPerGpuMonth * input.timestreamRecordBytes) / GB;
    add('Timestream', 'timestreamMagneticGbMonth', monthGb * Math.max(1, input.retentionMonths));
  }
  add('SNS', 'snsPublish', input.publishesPerGpuMonth);
  add('CloudWatch', 'cloudwatchLogsIngestGb', (requestsPerGpuMonth * input.logBytesPerBatch) / GB);
  add('CloudWatch', 'cloudwatchCustomMetricMonth', input.customMetrics / input.fleetGpus);
  return {
    input,
    requestsPerGpuMonth,
    windowsPerGpuMonth,
    items,
    totalUsdPerGpuMonth: items.reduce((sum, i) => sum + i.usdPerGpuMonth, 0),
  };
}

/**
 * Firehose bytes billed for one batch's `gpu_windows` rows as `AthenaStore` packs them: the JSON
 * rows, newline-separated, several to a record of ≤ 1,000 KiB, each record rounded up to 5 KB.
 */
export function firehoseBilledBytesPerBatch(
  input: Pick<CostModelInput, 'gpusPerInstance' | 'windowsPerBatch' | 'firehoseRowBytes'>,
): number {
  const rowBytes = input.firehoseRowBytes + 1;
  const rowsPerRecord = Math.max(1, Math.floor(FIREHOSE_MAX_RECORD_BYTES / rowBytes));
  const rows = input.gpusPerInstance * input.windowsPerBatch;
  let billed = 0;
  for (let left = rows; left > 0; left -= rowsPerRecord) {
    const bytes = Math.min(left, rowsPerRecord) * rowBytes;
    billed += Math.ceil(bytes / FIREHOSE_BILLING_INCREMENT_BYTES) * FIREHOSE_BILLING_INCREMENT_BYTES;
  }
  return billed;
}
