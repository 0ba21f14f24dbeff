import { epochMicros } from '../contract';
import { GPU_METRIC_NAMES, LEDGER_FIELD_NAMES } from '../domain/measure-types';
import type { EfaWindowRow, EventRow, GpuWindowRow } from '../domain/types';
import { FIREHOSE_MAX_RECORD_BYTES } from './constants';

/**
 * Rows as Amazon Data Firehose takes them for JSON → Parquet conversion: one flat JSON object per
 * row with the columns of `store-columns.ts` (absent values left out, which the OpenX JSON SerDe
 * reads as NULL), times as `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC (a format the OpenX JSON SerDe
 * parses; Firehose developer guide, "Convert input data format"), `efa_windows.deltas` as a JSON
 * object (a Parquet `map<string,bigint>`).
 */

/** A JSON object row: column → value, absent columns left out. */
export type JsonRow = Readonly<Record<string, string | number | boolean | Readonly<Record<string, number>>>>;

/** `undefined` columns dropped (a plain loop: this runs for every row of every batch). */
function defined(entries: ReadonlyArray<readonly [string, unknown]>): JsonRow {
  const row: Record<string, unknown> = {};
  for (const [name, value] of entries) if (value !== undefined) row[name] = value;
  return row as JsonRow;
}

/** Already `yyyy-MM-ddTHH:mm:ss.SSSZ`, as the agent sends times. */
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** ISO 8601 → `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC, ms); a time already in that form is kept as is. */
function isoMs(iso: string): string {
  return ISO_MS_UTC.test(iso) ? iso : new Date(Date.parse(iso)).toISOString();
}

/** Copies the defined values of `names` from `from` into `row`, in that order. */
function copyDefined(
  row: Record<string, unknown>,
  from: Readonly<Record<string, unknown>>,
  names: readonly string[],
): void {
  for (const name of names) {
    const value = from[name];
    if (value !== undefined) row[name] = value;
  }
}

/** ISO 8601 → `yyyy-MM-ddTHH:mm:ss.SSSSSSZ` (UTC, µs: events are keyed to the µs, as kernel logs stamp XIDs). */
export function isoMicros(iso: string): string {
  const micros = epochMicros(iso);
  const ms = Math.floor(micros / 1000);
  const sub = String(micros - ms * 1000).padStart(3, '0');
  return `${new Date(ms).toISOString().slice(0, -1)}${sub}Z`;
}

/**
 * @param row - a stored GPU window
 * @returns its `gpu_windows` JSON row: identity, every present metric, every ledger field
 */
export function gpuWindowJson(row: GpuWindowRow): JsonRow {
  const json = defined([
    ['time', isoMs(row.time)],
    ['start', isoMs(row.start)],
    ['instance_id', row.instance_id],
    ['instance_type', row.instance_type],
    ['region', row.region],
    ['az', row.az],
    ['gpu_index', row.gpu_index],
    ['gpu_uuid', row.gpu_uuid],
    ['gpu_name', row.gpu_name],
    ['team', row.team],
    ['job', row.job],
    ['namespace', row.namespace],
    ['pod', row.pod],
    ['container', row.container],
    ['batch_id', row.batch_id],
    ['seq', row.seq],
  ]) as Record<string, unknown>;
  // Metrics then ledger fields, in their lists' order, without an entry array per row (hot path).
  copyDefined(json, row.metrics as Readonly<Record<string, unknown>>, GPU_METRIC_NAMES);
  copyDefined(json, row.ledger as unknown as Readonly<Record<string, unknown>>, LEDGER_FIELD_NAMES);
  return json as JsonRow;
}

/**
 * @param row - a stored EFA window
 * @returns its `efa_windows` JSON row, the counter deltas as one map column `deltas`
 */
export function efaWindowJson(row: EfaWindowRow): JsonRow {
  return defined([
    ['time', isoMs(row.time)],
    ['start', isoMs(row.start)],
    ['instance_id', row.instance_id],
    ['instance_type', row.instance_type],
    ['device', row.device],
    ['port', row.port],
    ['seq', row.seq],
    ['deltas', row.deltas],
  ]);
}

/**
 * @param row - a stored event
 * @returns its `events` JSON row; `gpu_slot` = `gpu_index`, or −1 for an instance-wide event
 */
export function eventJson(row: EventRow): JsonRow {
  return defined([
    ['time', isoMicros(row.time)],
    ['instance_id', row.instance_id],
    ['instance_type', row.instance_type],
    ['gpu_index', row.gpu_index],
    ['gpu_slot', row.gpu_index ?? -1],
    ['pci_bus_id', row.pci_bus_id],
    ['kind', row.kind],
    ['xid', row.xid],
    ['source', row.source],
    ['pid', row.pid],
    ['process_name', row.process_name],
    ['detail', row.detail],
    ['batch_id', row.batch_id],
    ['seq', row.seq],
  ]);
}

/** One Firehose record: several rows' JSON, newline-separated, and which rows it carries. */
export interface PackedRecord {
  /** UTF-8 bytes of the record (`Record.Data`). */
  readonly data: Uint8Array;
  /** Indexes of the rows in it, into the array given to {@link packRecords}. */
  readonly rows: readonly number[];
}

/** What {@link packRecords} made: records to send, and rows that fit in no record. */
export interface PackResult {
  readonly records: readonly PackedRecord[];
  /** Indexes of rows whose JSON alone is over `maxRecordBytes`. */
  readonly oversized: readonly number[];
}

const encoder = new TextEncoder();
const NEWLINE = encoder.encode('\n');

/**
 * Packs rows into as few Firehose records as fit: JSON objects one after another, each followed by
 * a newline (Firehose's deserializers read several JSON documents in one record, but not a JSON
 * array). Fewer, fuller records cost less, as each record is billed rounded up to 5 KB.
 *
 * @param rows - JSON rows in order
 * @param maxRecordBytes - largest record, bytes, ≥ 1
 * @default maxRecordBytes {@link FIREHOSE_MAX_RECORD_BYTES} (1,000 KiB, the Firehose limit)
 * @returns records in row order; rows larger than a record alone in `oversized`
 */
export function packRecords(
  rows: readonly JsonRow[],
  maxRecordBytes: number = FIREHOSE_MAX_RECORD_BYTES,
): PackResult {
  const records: PackedRecord[] = [];
  const oversized: number[] = [];
  let parts: Uint8Array[] = [];
  let indexes: number[] = [];
  let size = 0;
  const flush = (): void => {
    if (indexes.length === 0) return;
    const data = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      data.set(p, at);
      at += p.length;
    }
    records.push({ data, rows: indexes });
    parts = [];
    indexes = [];
    size = 0;
  };
  rows.forEach((row, i) => {
    const json = encoder.encode(JSON.stringify(row));
    const bytes = json.length + NEWLINE.length;
    if (bytes > maxRecordBytes) {
      oversized.push(i);
      return;
    }
    if (size + bytes > maxRecordBytes) flush();
    parts.push(json, NEWLINE);
    indexes.push(i);
    size += bytes;
  });
  flush();
  return { records, oversized };
}
