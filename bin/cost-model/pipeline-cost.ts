import {
  FIREHOSE_BILLING_INCREMENT_BYTES,
  FIREHOSE_MAX_RECORD_BYTES,
} from '../../lambdas/adapters/constants';
import { MAX_EFA_PORTS_PER_BATCH } from '../../lambdas/contract/constants';
import { telemetryColdStorage } from '../../lib/athena-store-layout';
import { HOURS_PER_MONTH } from './billing-units';
import { DEFAULT_COST_MODEL_INPUT } from './default-input';
import { DEFAULT_STACK_RESOURCES } from './default-stack-resources';
import { lambdaBilledMs } from './lambda-billing';
import { type PriceName, SERVICE_PRICES } from './service-prices';
import type { StackResources } from './stack-resources';
import { addTimestreamStore } from './timestream-cost';

export { HOURS_PER_MONTH } from './billing-units';

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
  /**
   * Ingest Lambda CPU time per batch on one full core, ms (measured: the throughput bench); billed
   * stretched by the vCPU share of the function's memory ({@link lambdaBilledMs}).
   */
  readonly lambdaCpuMsPerBatch: number;
  /** AWS calls the Lambda waits on per batch (state read, store write), each billed as `awsCallMs`. */
  readonly awsCallsPerBatch: number;
  /** Billed wait per AWS call, ms (an assumption: in-region round trip of DynamoDB and Firehose). */
  readonly awsCallMs: number;
  /** `gpu_windows` row as Firehose JSON, bytes (measured: {@link MEASURED}`.firehoseRowBytes`). */
  readonly firehoseRowBytes: number;
  /** `gpu_windows` row in Parquet (Snappy), bytes (measured: store-cost bench, a 5-minute file of 512 GPUs). */
  readonly parquetRowBytes: number;
  /**
   * EFA devices of an instance (32 on a p5.48xlarge, 16 on a p5en, 4 on a p4d; 0 without EFA), each
   * {@link EFA_ENTRIES_PER_DEVICE} EFA entries per flush window and as many `efa_windows` rows per
   * request ({@link efaRowsPerRequest}: the store sums a request's windows). They also bound how many
   * flush windows the agent merges into one request: at most `MAX_EFA_PORTS_PER_BATCH` EFA entries
   * per request ({@link windowsPerRequest}).
   */
  readonly efaDevicesPerInstance: number;
  /** `efa_windows` row as Firehose JSON, bytes, the mean of a request's rows, each its 6 windows summed (measured: store-cost bench). */
  readonly efaRowBytes: number;
  /** `efa_windows` row in Parquet (Snappy), bytes, a row of 6 windows summed (measured: store-cost bench). */
  readonly efaParquetRowBytes: number;
  /** Timestream record of a GPU window, metered bytes (measured: store-cost bench). */
  readonly timestreamRecordBytes: number;
  /** Timestream record of an EFA entry, its request's windows summed, metered bytes (measured: store-cost bench). */
  readonly timestreamEfaRecordBytes: number;
  /** DynamoDB read request units per batch (one strongly consistent Query of ≤ 4 KB). */
  readonly dynamodbReadUnitsPerBatch: number;
  /**
   * CloudWatch Logs bytes per batch: the handler's stdout, its two EMF lines and its one log line
   * (1,557 B for the agent's 60 s batch of 8 GPUs, measured on 2026-11-28), the Lambda's
   * START/END/REPORT lines (≈ 350 B) and the API access log line (≈ 480 B, its JSON fields with the
   * caller's role ARN twice).
   */
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
  /**
   * Share of the fleet's instances in multi-node jobs, 0..1: when any (> 0), the fleet evaluator runs
   * a third fleet-wide Athena query every run, the cross-node straggler means of all of them at once
   * (per instance and job, grouped in SQL); its cost does not depend on the share.
   */
  readonly multiNodeInstanceShare: number;
  /** Share of a `gpu_windows` row's Parquet bytes a report query reads (the columns it selects), 0..1. */
  readonly athenaColumnShare: number;
  /**
   * Share of a `gpu_windows` row's Parquet bytes each of the fleet evaluator's fleet-wide queries
   * reads, 0..1: last seen per instance (instance id, time), waste by team (team, cost, waste) and the
   * straggler means (instance id, GPU index, time, seq, job, SM active, power, temperature) each read
   * a few of the row's columns.
   */
  readonly fleetQueryColumnShare: number;
  /** Hour partitions a fleet evaluator query reads (a span of up to an hour straddles two). */
  readonly fleetQueryPartitionHours: number;
  /** Wall time of one Athena query the fleet evaluator waits on, s (an assumption: start, scan, results). */
  readonly athenaQueryS: number;
  /** Athena queries of one scheduled report run (each billed ≥ 10 MB). */
  readonly reportQueriesPerRun: number;
  /** Billed duration of one scheduled report run, s (an assumption: queries, four charts, six S3 puts). */
  readonly reportRunS: number;
  /** CloudWatch Logs bytes of one fleet evaluator run (START/END/REPORT and its summary line). */
  readonly fleetLogBytesPerRun: number;
  /** Months the log groups keep their events (the stack's default retention: one month). */
  readonly logRetentionMonths: number;
}

export {
  DEFAULT_COST_MODEL_INPUT,
  DEFAULT_CUSTOM_METRICS,
  MEASURED,
  WORST_CASE_FIREHOSE_ROW_BYTES,
} from './default-input';

/** One line of the bill. */
export interface CostItem {
  /** AWS service. */
  readonly service: string;
  /** The meter of {@link SERVICE_PRICES}. */
  readonly price: PriceName;
  /** What of the stack it bills, e.g. `8 AWS::KMS::Key` or `ingest requests`. */
  readonly what: string;
  /** `true` for a cost of the deployment (resources, schedules), shared by the fleet's GPUs. */
  readonly fixed: boolean;
  /** Units of that meter per month, for the whole deployment. */
  readonly unitsPerMonth: number;
  /** USD per month, for the whole deployment. */
  readonly usdPerMonth: number;
  /** USD per GPU-month: `usdPerMonth` / `fleetGpus`. */
  readonly usdPerGpuMonth: number;
}

/**
 * `efa_windows` rows of one EFA device per flush window: its device counters (`<dev>/hw_counters`,
 * port 0) and its port's (`<dev>/ports/1/hw_counters`), split apart since EFA driver r1.14; the
 * agent sends one entry for each (`agent/sources/efa.ts`: 64 entries on a p5.48xlarge).
 */
export const EFA_ENTRIES_PER_DEVICE = 2;

/**
 * Flush windows per request as the agent merges them (`agent/send/merge-batches.ts`): the batch
 * interval's windows, but never more EFA entries than the contract takes in one batch
 * (`MAX_EFA_PORTS_PER_BATCH`), at least one window per request.
 *
 * @param input - windows per batch and EFA devices per instance
 * @returns windows per request, 1..`windowsPerBatch`
 */
export function windowsPerRequest(
  input: Pick<CostModelInput, 'windowsPerBatch' | 'efaDevicesPerInstance'>,
): number {
  const efaPerWindow = input.efaDevicesPerInstance * EFA_ENTRIES_PER_DEVICE;
  if (efaPerWindow === 0) return input.windowsPerBatch;
  return Math.min(input.windowsPerBatch, Math.max(1, Math.floor(MAX_EFA_PORTS_PER_BATCH / efaPerWindow)));
}

/**
 * `efa_windows` rows the ingest stores per request: one per EFA entry (device/port) and run of
 * consecutive windows (`lambdas/domain/efa-rows.ts`), the agent's merged windows being consecutive:
 * {@link EFA_ENTRIES_PER_DEVICE} × `efaDevicesPerInstance` (64 on a p5.48xlarge, whatever the
 * windows per request), 0 without EFA.
 *
 * @param input - EFA devices per instance
 * @returns rows per request, ≥ 0
 */
export function efaRowsPerRequest(input: Pick<CostModelInput, 'efaDevicesPerInstance'>): number {
  return input.efaDevicesPerInstance * EFA_ENTRIES_PER_DEVICE;
}

/** The cost of one GPU-month. */
export interface CostModel {
  readonly input: CostModelInput;
  /** The stack's billed resources the model priced. */
  readonly stack: StackResources;
  /** Batches (API requests, Lambda invocations) per GPU-month. */
  readonly requestsPerGpuMonth: number;
  /** Flush windows per GPU-month. */
  readonly windowsPerGpuMonth: number;
  readonly items: readonly CostItem[];
  /** USD per month of the items that do not grow with the fleet (`fixed`). */
  readonly fixedUsdPerMonth: number;
  /** USD per GPU-month, all items. */
  readonly totalUsdPerGpuMonth: number;
}

/** Thrown for an input the model cannot price (names the field). */
export class CostModelInputError extends Error {
  override readonly name = 'CostModelInputError';
}

/** Athena bills every query as at least 10 MB scanned (Amazon Athena pricing page). */
export const ATHENA_MIN_BYTES_PER_QUERY = 10e6;

/**
 * Prices one GPU-month of the synthesized stack at `input.fleetGpus` GPUs, everything it bills:
 * - per batch: API Gateway requests, Lambda requests and GB-seconds, the DynamoDB state read, the
 *   store (Firehose ingestion + conversion in 5 KB steps, S3 at steady state — 30 days Standard,
 *   the rest Glacier Instant Retrieval (Standard-IA for 60–119 days kept) —, S3 PUTs per Firehose file and transitions, report scans; or Timestream
 *   writes, 24 h memory store, magnetic store), CloudWatch Logs ingested and stored, X-Ray traces
 *   when the stage or ingest is traced;
 * - per fleet evaluator run (the `rate` schedule): its Athena queries (two, three with multi-node
 *   jobs, each ≥ 10 MB, whatever the fleet's size), Lambda, PutMetricData, DynamoDB, logs, the schedule;
 * - per report run (the `cron` schedules): its queries and Lambda;
 * - per resource-month, counted from the template: KMS keys and their rotations, alarm metrics,
 *   dashboards, API detailed metrics; custom metric series; KMS and Glue requests.
 * Left out: free tiers (the prices are those beyond them), in-region data transfer.
 *
 * @param input - the deployment and the measured sizes
 * @param stack - the billed resources of the synthesized stack (`readStackResources`)
 * @default stack - {@link DEFAULT_STACK_RESOURCES} of the store (the default stack's, held to its template by a test)
 * @returns the items, the fixed monthly cost and the total per GPU-month
 * @throws {CostModelInputError} naming a field that is not a finite number in its range
 */
export function pipelineCost(
  input: CostModelInput = DEFAULT_COST_MODEL_INPUT,
  stack: StackResources = DEFAULT_STACK_RESOURCES[input.store],
): CostModel {
  validateInput(input);
  const gpus = input.fleetGpus;
  const windowsPerGpuMonth = SECONDS_PER_MONTH / input.windowS;
  const perRequest = windowsPerRequest(input);
  const requestsPerGpuMonth = windowsPerGpuMonth / perRequest / input.gpusPerInstance;
  const requests = requestsPerGpuMonth * gpus;
  const items: CostItem[] = [];
  const add = (
    service: string,
    price: PriceName,
    what: string,
    unitsPerMonth: number,
    fixed: boolean,
  ): void => {
    if (unitsPerMonth <= 0) return;
    const usdPerMonth = unitsPerMonth * SERVICE_PRICES[price].usd;
    items.push({
      service,
      price,
      what,
      fixed,
      unitsPerMonth,
      usdPerMonth,
      usdPerGpuMonth: usdPerMonth / gpus,
    });
  };
  const fn = (role: 'ingest' | 'fleet' | 'report') => stack.functions.find((f) => f.role === role);

  // Per batch: API, ingest Lambda, state read, logs, traces.
  add(
    'API Gateway',
    input.api === 'rest' ? 'apiGatewayRestRequest' : 'apiGatewayHttpRequest',
    'ingest requests',
    requests,
    false,
  );
  add('Lambda', 'lambdaRequest', 'ingest invocations', requests, false);
  const ingestMib = fn('ingest')?.memoryMib ?? input.lambdaMemoryMib;
  const billedS =
    lambdaBilledMs(input.lambdaCpuMsPerBatch, ingestMib, input.awsCallsPerBatch * input.awsCallMs) / 1000;
  add(
    'Lambda',
    'lambdaArmGbSecond',
    'ingest GB-seconds',
    requests * billedS * (ingestMib / MIB_PER_GB),
    false,
  );
  add(
    'DynamoDB',
    'dynamodbReadRequestUnit',
    'ingest state reads',
    requests * input.dynamodbReadUnitsPerBatch,
    false,
  );
  if (stack.stageTraced || fn('ingest')?.traced === true)
    add(
      'X-Ray',
      'xrayTraceRecorded',
      'ingest requests traced (stage and Lambda: one trace)',
      requests,
      false,
    );

  const queries = { fleet: 0, report: 0 };
  if (input.store === 'athena') addAthenaStore(input, stack, gpus, windowsPerGpuMonth, requests, add);
  else addTimestreamStore(input, gpus, windowsPerGpuMonth, requests * efaRowsPerRequest(input), add);
  add('SNS', 'snsPublish', 'alerts and decisions', input.publishesPerGpuMonth * gpus, false);

  // The fleet evaluator, every run of the rate schedule.
  const fleetRuns = stack.rateRunsPerMonth;
  const straggler = input.multiNodeInstanceShare > 0;
  const fleetQueriesPerRun = input.store === 'athena' ? (straggler ? 3 : 2) : 0;
  if (input.store === 'athena' && fleetRuns > 0) {
    queries.fleet = fleetRuns * fleetQueriesPerRun;
    // Firehose files hold every instance's rows: each query reads the columns it selects of the
    // whole fleet's hour partitions, once per run.
    const partitionBytes =
      gpus * (3600 / input.windowS) * input.fleetQueryPartitionHours * input.parquetRowBytes;
    const fleetWide = Math.max(ATHENA_MIN_BYTES_PER_QUERY, partitionBytes * input.fleetQueryColumnShare);
    add(
      'Athena',
      'athenaTbScanned',
      `fleet evaluator: ${fleetQueriesPerRun} queries per run (last seen, waste by team${straggler ? ', straggler means' : ''})`,
      (fleetRuns * fleetQueriesPerRun * fleetWide) / TB,
      false,
    );
  }
  const fleet = fn('fleet');
  if (fleet !== undefined && fleetRuns > 0) {
    add('Lambda', 'lambdaRequest', 'fleet evaluator runs', fleetRuns, true);
    // The evaluator waits on its queries one after the other.
    const runS = 1 + fleetQueriesPerRun * input.athenaQueryS;
    add(
      'Lambda',
      'lambdaArmGbSecond',
      'fleet evaluator GB-seconds',
      fleetRuns * runS * (fleet.memoryMib / MIB_PER_GB),
      false,
    );
    add(
      'CloudWatch',
      'cloudwatchPutMetricDataRequest',
      'fleet metrics, one request per run',
      fleetRuns,
      true,
    );
    add('DynamoDB', 'dynamodbReadRequestUnit', 'fleet firing alerts, one query per run', fleetRuns, true);
    if (fleet.traced) add('X-Ray', 'xrayTraceRecorded', 'fleet evaluator runs traced', fleetRuns, true);
  }
  // The reports, every run of the cron schedules.
  const report = fn('report');
  if (report !== undefined && stack.cronRunsPerMonth > 0) {
    const runs = stack.cronRunsPerMonth;
    queries.report = input.store === 'athena' ? runs * input.reportQueriesPerRun : 0;
    add(
      'Athena',
      'athenaTbScanned',
      'report queries, 10 MB minimum each',
      (queries.report * ATHENA_MIN_BYTES_PER_QUERY) / TB,
      true,
    );
    add('Lambda', 'lambdaRequest', 'report runs', runs, true);
    add(
      'Lambda',
      'lambdaArmGbSecond',
      'report GB-seconds',
      runs * input.reportRunS * (report.memoryMib / MIB_PER_GB),
      true,
    );
    if (report.traced) add('X-Ray', 'xrayTraceRecorded', 'report runs traced', runs, true);
  }
  add('EventBridge', 'schedulerInvocation', 'schedule runs', fleetRuns + stack.cronRunsPerMonth, true);
  add('Glue', 'glueRequest', 'catalog reads, one per Athena query', queries.fleet + queries.report, false);

  // CloudWatch: logs, custom metrics, alarms, dashboards, API detailed metrics.
  const logGb = (requests * input.logBytesPerBatch + fleetRuns * input.fleetLogBytesPerRun) / GB;
  add('CloudWatch', 'cloudwatchLogsIngestGb', 'ingest, API access and fleet evaluator logs', logGb, false);
  add(
    'CloudWatch',
    'cloudwatchLogsStorageGbMonth',
    `the same, kept ${input.logRetentionMonths} month(s)`,
    logGb * input.logRetentionMonths,
    false,
  );
  add(
    'CloudWatch',
    'cloudwatchCustomMetricMonth',
    `${input.customMetrics} custom metric series`,
    input.customMetrics,
    true,
  );
  add(
    'CloudWatch',
    'cloudwatchAlarmMetric',
    `${stack.countsByType['AWS::CloudWatch::Alarm'] ?? 0} AWS::CloudWatch::Alarm`,
    stack.alarmMetrics,
    true,
  );
  add(
    'CloudWatch',
    'cloudwatchDashboardMonth',
    `${stack.dashboards} AWS::CloudWatch::Dashboard`,
    stack.dashboards,
    true,
  );
  add(
    'CloudWatch',
    'cloudwatchCustomMetricMonth',
    `API detailed metrics: ${stack.detailedMetricMethods} method(s) × ${API_DETAILED_METRICS} metrics`,
    stack.detailedMetricMethods * API_DETAILED_METRICS,
    true,
  );

  // KMS: keys, their rotations, requests (data keys cached by S3 bucket keys, SNS, Logs, Firehose).
  add('KMS', 'kmsKeyMonth', `${stack.kmsKeys} AWS::KMS::Key`, stack.kmsKeys, true);
  add(
    'KMS',
    'kmsRotationMonth',
    `${stack.kmsRotatedKeys} rotated keys × 2 rotations (steady state)`,
    stack.kmsRotatedKeys * 2,
    true,
  );
  const filesPerMonth =
    input.store === 'athena' ? (SECONDS_PER_MONTH / input.firehoseBufferS) * stack.deliveryStreams : 0;
  add(
    'KMS',
    'kmsRequest',
    'data keys: one per Firehose file, two per Athena query',
    filesPerMonth + 2 * (queries.fleet + queries.report),
    false,
  );

  const fixedUsdPerMonth = items.filter((i) => i.fixed).reduce((n, i) => n + i.usdPerMonth, 0);
  return {
    input,
    stack,
    requestsPerGpuMonth,
    windowsPerGpuMonth,
    items,
    fixedUsdPerMonth,
    totalUsdPerGpuMonth: items.reduce((n, i) => n + i.usdPerGpuMonth, 0),
  };
}

/**
 * Metrics API Gateway publishes per method with detailed metrics on: Count, 4XXError, 5XXError,
 * Latency, IntegrationLatency, CacheHitCount, CacheMissCount (API Gateway developer guide,
 * "Amazon API Gateway dimensions and metrics").
 */
const API_DETAILED_METRICS = 7;

/** Adds one line item to the model: its service, price, what it counts and units per month. */
export type AddItem = (
  service: string,
  price: PriceName,
  what: string,
  unitsPerMonth: number,
  fixed: boolean,
) => void;

/** The Athena store: Firehose, S3 storage, PUTs and transitions, report scans. */
function addAthenaStore(
  input: CostModelInput,
  stack: StackResources,
  gpus: number,
  windowsPerGpuMonth: number,
  requests: number,
  add: AddItem,
): void {
  const perRequest = windowsPerRequest(input);
  const efaRows = efaRowsPerRequest(input);
  const billedGb =
    (requests *
      (firehoseBilledBytesPerBatch({ ...input, windowsPerBatch: perRequest }) +
        packedBilledBytes(efaRows, input.efaRowBytes))) /
    GB;
  add(
    'Firehose',
    'firehoseIngestGb',
    `${stack.deliveryStreams} AWS::KinesisFirehose::DeliveryStream`,
    billedGb,
    false,
  );
  add('Firehose', 'firehoseConversionGb', 'JSON → Parquet', billedGb, false);
  // Steady state: every month kept is billed each month; the stack moves files older than 30 days
  // to its cold storage class (gpu_windows files are over 128 KiB at fleet scale).
  // EFA rows as stored: per request, not per window (`efaRowsOf`).
  const efaRowsPerGpuMonth = (requests / gpus) * efaRows;
  const parquetGbPerMonth =
    (gpus * (windowsPerGpuMonth * input.parquetRowBytes + efaRowsPerGpuMonth * input.efaParquetRowBytes)) /
    GB;
  const cold = telemetryColdStorage(Math.floor(input.retentionMonths * DAYS_PER_MONTH));
  const standardMonths = cold === undefined ? input.retentionMonths : cold.afterDays / DAYS_PER_MONTH;
  add('S3', 's3StandardGbMonth', 'telemetry, first 30 days', parquetGbPerMonth * standardMonths, false);
  if (cold !== undefined) {
    const [storage, transition] =
      cold.storageClass === 'GLACIER_IR'
        ? (['s3GlacierIrGbMonth', 's3GlacierIrTransitionRequest'] as const)
        : (['s3StandardIaGbMonth', 's3TransitionRequest'] as const);
    add(
      'S3',
      storage,
      'telemetry, the rest of the retention',
      parquetGbPerMonth * (input.retentionMonths - standardMonths),
      false,
    );
    add(
      'S3',
      transition,
      'gpu_windows files to cold storage',
      SECONDS_PER_MONTH / input.firehoseBufferS,
      true,
    );
    // The month report, run on the 1st, reads the month before: its first day or two are past 30 days.
    if (cold.storageClass === 'GLACIER_IR')
      add(
        'S3',
        's3GlacierIrRetrievalGb',
        'the month report reading its oldest days',
        parquetGbPerMonth * input.athenaColumnShare * (2 / DAYS_PER_MONTH),
        false,
      );
  }
  const filesPerMonth = SECONDS_PER_MONTH / input.firehoseBufferS;
  add(
    'S3',
    's3PutRequest',
    'one file per stream per buffer interval',
    filesPerMonth * stack.deliveryStreams,
    true,
  );
  add('Athena', 'athenaTbScanned', 'report scans', (input.athenaScanBytesPerGpuMonth * gpus) / TB, false);
}

/** @throws {CostModelInputError} naming a field out of range */
function validateInput(input: CostModelInput): void {
  for (const [field, value] of Object.entries(input)) {
    if (typeof value === 'number' && !(Number.isFinite(value) && value >= 0)) {
      throw new CostModelInputError(`Expected \`${field}\` to be a finite number ≥ 0, got \`${value}\``);
    }
  }
  for (const field of ['gpusPerInstance', 'windowS', 'windowsPerBatch', 'fleetGpus'] as const) {
    if (!(input[field] > 0))
      throw new CostModelInputError(`Expected \`${field}\` to be > 0, got \`${input[field]}\``);
  }
  for (const field of ['multiNodeInstanceShare', 'athenaColumnShare', 'fleetQueryColumnShare'] as const) {
    if (input[field] > 1)
      throw new CostModelInputError(`Expected \`${field}\` to be in 0..1, got \`${input[field]}\``);
  }
}

/**
 * Firehose bytes billed for one batch's `gpu_windows` rows as `AthenaStore` packs them: the JSON
 * rows, newline-separated, several to a record of ≤ 1,000 KiB, each record rounded up to 5 KB.
 */
export function firehoseBilledBytesPerBatch(
  input: Pick<CostModelInput, 'gpusPerInstance' | 'windowsPerBatch' | 'firehoseRowBytes'>,
): number {
  return packedBilledBytes(input.gpusPerInstance * input.windowsPerBatch, input.firehoseRowBytes);
}

/**
 * Firehose bytes billed for `rows` JSON rows of `rowBytes` each as `AthenaStore` packs them:
 * newline-separated, several to a record of ≤ 1,000 KiB, each record rounded up to 5 KB.
 */
function packedBilledBytes(rows: number, rowBytes: number): number {
  const lineBytes = rowBytes + 1;
  const rowsPerRecord = Math.max(1, Math.floor(FIREHOSE_MAX_RECORD_BYTES / lineBytes));
  let billed = 0;
  for (let left = rows; left > 0; left -= rowsPerRecord) {
    const bytes = Math.min(left, rowsPerRecord) * lineBytes;
    billed += Math.ceil(bytes / FIREHOSE_BILLING_INCREMENT_BYTES) * FIREHOSE_BILLING_INCREMENT_BYTES;
  }
  return billed;
}
