/**
 * Measures what one GPU costs to store per month at 10 s windows, on each AWS store, from the
 * bytes this code really writes (README "Storage and what it costs", BENCHMARKS.md):
 *
 * - Firehose (athena store): the JSON rows as `AthenaStore` packs them into records, billed in 5 KiB
 *   steps, for ingestion and for format conversion; the Parquet bytes DuckDB writes for the same
 *   rows (Snappy, the layout Firehose delivers) for S3;
 * - Timestream: the metered size of the records `TimestreamStore` writes (1 KiB write units,
 *   memory store for 24 h, magnetic store for the rest).
 *
 * A p5.48xlarge: 8 H100 (every metric present, values varying as a busy GPU's do) and 32 EFA
 * devices, 64 EFA entries per window (each device's counters and its port's), one batch per 10 s.
 * Prices are constants below with their sources.
 *
 * Run: `npx tsx test/bench/store-cost.ts`
 */
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { SERVICE_PRICES } from '../../bin/cost-model/service-prices';
import { FIREHOSE_BILLING_INCREMENT_BYTES } from '../../lambdas/adapters/constants';
import { efaWindowJson, gpuWindowJson, packRecords } from '../../lambdas/adapters/firehose-records';
import {
  efaWindowRecord,
  gpuWindowRecord,
  timestreamRecordBytes,
} from '../../lambdas/adapters/timestream-records';
import type { Batch, GpuMetrics } from '../../lambdas/contract';
import { efaRowsOf } from '../../lambdas/domain/efa-rows';
import { GPU_METRIC_NAMES, GPU_METRIC_TYPES } from '../../lambdas/domain/measure-types';
import type { TelemetryTable } from '../../lambdas/domain/store-columns';
import type { EfaWindowRow, GpuWindowRow } from '../../lambdas/domain/types';
import {
  DEVICE_COUNTERS,
  P5_EFA_DEVICES,
  PORT_COUNTERS_BASE,
  PORT_COUNTERS_R2_17,
} from '../fixtures/efa/make-sysfs';
import { firehoseReadJsonSql } from '../lambdas/adapters/athena-fake';
import { efaRow, gpuRow, ledger } from '../lambdas/rows';

/** Windows per GPU per month (30 days of 10 s windows). */
const WINDOWS_PER_MONTH = 30 * 24 * 360;
const GPUS = 8;
/** EFA entries of one p5.48xlarge window: 32 devices × (device counters, port 1 counters). */
const EFA_PORTS = 64;
const GB = 1e9;
const GIB = 1024 ** 3;

/** Prices, us-east-1, USD: the cost model's one table (`bin/cost-model/service-prices.ts`). */
const PRICE = {
  firehoseIngestPerGb: SERVICE_PRICES.firehoseIngestGb.usd,
  firehoseConversionPerGb: SERVICE_PRICES.firehoseConversionGb.usd,
  s3PerGbMonth: SERVICE_PRICES.s3StandardGbMonth.usd,
  timestreamPerMillionWrites: SERVICE_PRICES.timestreamWrite.usd * 1e6,
  timestreamMemoryPerGbHour: SERVICE_PRICES.timestreamMemoryGbHour.usd,
  timestreamMagneticPerGbMonth: SERVICE_PRICES.timestreamMagneticGbMonth.usd,
};

/** A deterministic pseudo-random number in [0, 1). */
let seed = 42;
function rand(): number {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed / 2 ** 31;
}

/** One busy GPU window with every metric present and realistic, varying values. */
function busyGpu(windowIndex: number, gpu: number, instance = 0): GpuWindowRow {
  const metrics: Record<string, number | boolean> = {};
  for (const n of GPU_METRIC_NAMES) {
    const type = GPU_METRIC_TYPES[n];
    metrics[n] = type === 'BOOLEAN' ? false : type === 'BIGINT' ? Math.floor(rand() * 80e9) : rand() * 700;
  }
  const time = new Date(Date.parse('2026-03-10T00:00:10.000Z') + windowIndex * 10_000).toISOString();
  return gpuRow({
    time,
    gpu_index: gpu,
    instance_id: `i-0123456789ab${instance.toString(16).padStart(5, '0')}`,
    gpu_uuid: `GPU-7f3c2a1e-0000-4000-8000-${instance.toString(16).padStart(11, '0')}${gpu}`,
    seq: 1000 + windowIndex,
    batch_id: `0b7e6f7a-1f2b-4c3d-8e9f-${String(windowIndex).padStart(12, '0')}`,
    metrics: metrics as unknown as GpuMetrics,
    ledger: ledger({ efficiency: rand(), diagnosis: 'compute_bound' }),
  });
}

/**
 * EFA entry `entry` of a p5.48xlarge window, as the agent's EFA source sends it: 32 devices (the
 * real p5's names) × the device counters (port 0, 12 counters) and the port counters (port 1, the
 * 22 of driver r2.17), every counter with its delta, 0 included. Traffic as a busy 100 Gb/s port
 * moves in 10 s (bytes up to 12.5 GB, packets and work requests up to 1.5 M); error counters 0.
 */
function busyEfa(windowIndex: number, entry: number): EfaWindowRow {
  const time = new Date(Date.parse('2026-03-10T00:00:10.000Z') + windowIndex * 10_000).toISOString();
  const port = entry % 2;
  const deltas: Record<string, number> = {};
  const names: readonly string[] =
    port === 0 ? DEVICE_COUNTERS : [...PORT_COUNTERS_BASE, ...PORT_COUNTERS_R2_17];
  for (const name of names) {
    deltas[name] = name.endsWith('_bytes')
      ? Math.floor(rand() * 12.5e9)
      : /_(pkts|wrs)$/.test(name)
        ? Math.floor(rand() * 1.5e6)
        : /^(submitted|completed)_cmds$|^keep_alive_rcvd$/.test(name)
          ? Math.floor(rand() * 20)
          : 0;
  }
  return efaRow({
    time,
    start: new Date(Date.parse(time) - 10_000).toISOString(),
    device: P5_EFA_DEVICES[Math.floor(entry / 2) % P5_EFA_DEVICES.length] as string,
    port,
    seq: 1000 + windowIndex,
    deltas,
  });
}

/** Windows the agent merges into one request (its 60 s send interval): the rows `efaRowsOf` sums. */
const WINDOWS_PER_REQUEST = 6;

/**
 * The `efa_windows` rows the ingest stores for one 60 s request that begins at window `first`: each
 * entry's {@link WINDOWS_PER_REQUEST} consecutive windows summed into one row (`efaRowsOf`), 64 rows.
 */
function minuteEfaRows(first: number, entries = EFA_PORTS): EfaWindowRow[] {
  const windows = Array.from({ length: WINDOWS_PER_REQUEST }, (_, w) =>
    Array.from({ length: entries }, (_, e) => busyEfa(first + w, e)),
  ).flat();
  const batch = {
    schema: 'gpu-sentinel/v1',
    batch_id: '0b7e6f7a-1f2b-4c3d-8e9f-000000000000',
    seq: 1000 + first,
    sent_at: windows[windows.length - 1]?.time ?? '',
    host: { instance_id: 'i-0123456789abcdef0', instance_type: 'p5.48xlarge', region: 'us-east-1' },
    agent: { version: '0.1.0', profiling_source: 'gpm' },
    windows: [],
    efa: windows.map((r) => ({
      start: r.start,
      end: r.time,
      device: r.device,
      port: r.port,
      deltas: r.deltas,
    })),
  } satisfies Batch;
  return efaRowsOf(batch);
}

const billed = (bytes: number): number =>
  Math.ceil(bytes / FIREHOSE_BILLING_INCREMENT_BYTES) * FIREHOSE_BILLING_INCREMENT_BYTES;

async function parquetBytesPerRow(
  table: TelemetryTable,
  jsonRows: readonly string[],
  dir: string,
): Promise<number> {
  const duck = await DuckDBInstance.create(':memory:');
  const db = await duck.connect();
  const json = join(dir, `${table}.json`);
  const parquet = join(dir, `${table}.parquet`);
  // The rows as the Athena store sends them, read as the delivery stream's SerDe reads them.
  await writeFile(json, jsonRows.join('\n'));
  await db.run(
    `COPY (${firehoseReadJsonSql(table, json)}) TO '${parquet}' (FORMAT PARQUET, COMPRESSION SNAPPY)`,
  );
  db.closeSync();
  duck.closeSync();
  return (await stat(parquet)).size / jsonRows.length;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'gs-cost-'));
  try {
    // One batch: 8 GPU rows, 64 EFA rows.
    const gpuRows = Array.from({ length: GPUS }, (_, g) => busyGpu(0, g));
    const efaRows = Array.from({ length: EFA_PORTS }, (_, p) => busyEfa(0, p));
    const gpuJson = gpuRows.map(gpuWindowJson);
    const efaJson = efaRows.map(efaWindowJson);
    // UTF-8 bytes of each row as sent (the row is already JSON text), without its newline.
    const gpuRowBytes = gpuJson.reduce((n, r) => n + Buffer.byteLength(r), 0) / GPUS;
    const efaRowBytes = efaJson.reduce((n, r) => n + Buffer.byteLength(r), 0) / EFA_PORTS;
    const packed = [...packRecords(gpuJson).records, ...packRecords(efaJson).records];
    const packedBilledPerBatch = packed.reduce((n, r) => n + billed(r.data.length), 0);
    const unpackedBilledPerBatch =
      gpuJson.reduce((n, r) => n + billed(Buffer.byteLength(r) + 1), 0) +
      efaJson.reduce((n, r) => n + billed(Buffer.byteLength(r) + 1), 0);

    // Parquet: one GPU-day of windows per file (8,640 rows), and a 5-minute file of one instance (240 rows).
    const dayGpu = Array.from({ length: 8640 }, (_, w) => gpuWindowJson(busyGpu(w, 0)));
    const dayEfa = Array.from({ length: 2 * 8640 }, (_, i) =>
      efaWindowJson(busyEfa(Math.floor(i / 2), i % 2)),
    );
    const fiveMinGpu = Array.from({ length: 30 }, (_, w) =>
      Array.from({ length: GPUS }, (_, g) => gpuWindowJson(busyGpu(w, g))),
    ).flat();
    // A 5-minute Firehose file at 512 GPUs holds every instance's rows: 64 instances × 8 GPUs × 30.
    const fiveMinFleetGpu = Array.from({ length: 30 }, (_, w) =>
      Array.from({ length: 64 * GPUS }, (_, i) => gpuWindowJson(busyGpu(w, i % GPUS, Math.floor(i / GPUS)))),
    ).flat();
    const parquetGpu5minFleet = await parquetBytesPerRow('gpu_windows', fiveMinFleetGpu, dir);
    const parquetGpuDay = await parquetBytesPerRow('gpu_windows', dayGpu, dir);
    const parquetEfaDay = await parquetBytesPerRow('efa_windows', dayEfa, dir);
    const parquetGpu5min = await parquetBytesPerRow('gpu_windows', fiveMinGpu, dir);

    // As stored: one row per entry and 60 s request (`efaRowsOf`), each delta the sum of 6 windows.
    const minuteRows = minuteEfaRows(0);
    const minuteJson = minuteRows.map(efaWindowJson);
    const minuteRowBytes = minuteJson.reduce((n, r) => n + Buffer.byteLength(r), 0) / minuteRows.length;
    const minutePackedBilled = packRecords(minuteJson).records.reduce((n, r) => n + billed(r.data.length), 0);
    const dayEfaMinutes = Array.from({ length: 1440 }, (_, m) => minuteEfaRows(m * WINDOWS_PER_REQUEST, 2))
      .flat()
      .map(efaWindowJson);
    const parquetEfaMinuteDay = await parquetBytesPerRow('efa_windows', dayEfaMinutes, dir);
    const tsEfaMinute =
      (timestreamRecordBytes(efaWindowRecord(minuteRows[0] as EfaWindowRow)) +
        timestreamRecordBytes(efaWindowRecord(minuteRows[1] as EfaWindowRow))) /
      2;

    // Per GPU-month.
    const batchesPerGpuMonth = WINDOWS_PER_MONTH / GPUS;
    const firehoseGbPacked = (packedBilledPerBatch * batchesPerGpuMonth) / GB;
    const firehoseGbUnpacked = (unpackedBilledPerBatch * batchesPerGpuMonth) / GB;
    const firehoseRate = PRICE.firehoseIngestPerGb + PRICE.firehoseConversionPerGb;
    const s3GbPerMonth5min = (WINDOWS_PER_MONTH * (parquetGpu5min + (EFA_PORTS / GPUS) * parquetEfaDay)) / GB;
    const s3GbPerMonthDay = (WINDOWS_PER_MONTH * (parquetGpuDay + (EFA_PORTS / GPUS) * parquetEfaDay)) / GB;

    const tsGpu = timestreamRecordBytes(gpuWindowRecord(gpuRows[0] as GpuWindowRow));
    // The mean of a device entry and a port entry.
    const tsEfa =
      (timestreamRecordBytes(efaWindowRecord(efaRows[0] as EfaWindowRow)) +
        timestreamRecordBytes(efaWindowRecord(efaRows[1] as EfaWindowRow))) /
      2;
    const tsUnitsPerWindow = Math.ceil(tsGpu / 1024) + (EFA_PORTS / GPUS) * Math.ceil(tsEfa / 1024);
    const tsBytesPerWindow = tsGpu + (EFA_PORTS / GPUS) * tsEfa;
    const tsWrites = ((WINDOWS_PER_MONTH * tsUnitsPerWindow) / 1e6) * PRICE.timestreamPerMillionWrites;
    const tsMemory = ((tsBytesPerWindow * 8640) / GIB) * PRICE.timestreamMemoryPerGbHour * 730;
    const tsMagneticMonth =
      ((tsBytesPerWindow * WINDOWS_PER_MONTH) / GIB) * PRICE.timestreamMagneticPerGbMonth;

    const out = {
      gpu_row_json_bytes: Math.round(gpuRowBytes),
      efa_row_json_bytes: Math.round(efaRowBytes),
      efa_minute_rows_per_request: minuteRows.length,
      efa_minute_row_json_bytes: Math.round(minuteRowBytes),
      efa_minute_rows_billed_bytes_per_request_packed: minutePackedBilled,
      parquet_bytes_per_efa_minute_row_day_file: +parquetEfaMinuteDay.toFixed(1),
      timestream_efa_minute_record_bytes: tsEfaMinute,
      firehose_records_per_batch_packed: packed.length,
      firehose_billed_bytes_per_batch_packed: packedBilledPerBatch,
      firehose_billed_bytes_per_batch_one_row_per_record: unpackedBilledPerBatch,
      firehose_usd_per_gpu_month_packed: +(firehoseGbPacked * firehoseRate).toFixed(4),
      firehose_usd_per_gpu_month_one_row_per_record: +(firehoseGbUnpacked * firehoseRate).toFixed(4),
      parquet_bytes_per_gpu_row_5min_file: +parquetGpu5min.toFixed(1),
      parquet_bytes_per_gpu_row_5min_file_512_gpus: +parquetGpu5minFleet.toFixed(1),
      parquet_bytes_per_gpu_row_day_file: +parquetGpuDay.toFixed(1),
      parquet_bytes_per_efa_row_day_file: +parquetEfaDay.toFixed(1),
      s3_gb_per_gpu_month_5min_files: +s3GbPerMonth5min.toFixed(4),
      s3_usd_per_gpu_month_of_data_stored_a_month: +(s3GbPerMonth5min * PRICE.s3PerGbMonth).toFixed(4),
      s3_usd_per_gpu_month_steady_state_365d: +(s3GbPerMonth5min * 12 * PRICE.s3PerGbMonth).toFixed(4),
      s3_gb_per_gpu_month_day_files: +s3GbPerMonthDay.toFixed(4),
      timestream_gpu_record_bytes: tsGpu,
      timestream_efa_record_bytes: tsEfa,
      timestream_write_units_per_gpu_window: tsUnitsPerWindow,
      timestream_writes_usd_per_gpu_month: +tsWrites.toFixed(4),
      timestream_memory_24h_usd_per_gpu_month: +tsMemory.toFixed(4),
      timestream_magnetic_usd_per_gpu_month_of_data: +tsMagneticMonth.toFixed(4),
      timestream_magnetic_usd_per_gpu_month_steady_state_365d: +(tsMagneticMonth * 12).toFixed(4),
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
