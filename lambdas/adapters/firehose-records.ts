import { epochMicros } from '../contract';
import { GPU_METRIC_NAMES, LEDGER_FIELD_NAMES } from '../domain/measure-types';
import { gpuInstanceSlot } from '../domain/store-columns';
import type { EfaWindowRow, EventRow, GpuWindowRow } from '../domain/types';
import { FIREHOSE_MAX_RECORD_BYTES } from './constants';

/**
 * Rows as Amazon Data Firehose takes them for JSON → Parquet conversion: one flat JSON object per
 * row with the columns of `store-columns.ts` (absent values left out, which the OpenX JSON SerDe
 * reads as NULL), times as `yyyy-MM-ddTHH:mm:ss.SSSZ` in UTC (a format the OpenX JSON SerDe
 * parses; Firehose developer guide, "Convert input data format"), `efa_windows.deltas` as a JSON
 * object (a Parquet `map<string,bigint>`).
 */

/**
 * One row as Firehose receives it: the JSON text of a flat object, column → value, absent
 * columns left out. Written as text directly (no object per row, no `JSON.stringify` of a wide
 * object): this runs for every row of every batch, and was 15 % of ingest's CPU as objects.
 */
export type JsonRow = string;

/** A column value: a string (JSON-escaped), a finite number, a boolean, or a map of counters. */
type ColumnValue = string | number | boolean | Readonly<Record<string, number>> | undefined;

/**
 * `,"name":value` for a defined value, '' for `undefined`. Column names are this project's
 * snake_case identifiers (no escaping needed); a non-finite number is written `null`, as
 * `JSON.stringify` writes it.
 */
function column(name: string, value: ColumnValue): string {
  switch (typeof value) {
    case 'undefined':
      return '';
    case 'string':
      return `,"${name}":${JSON.stringify(value)}`;
    case 'number':
      return `,"${name}":${Number.isFinite(value) ? value : 'null'}`;
    case 'boolean':
      return `,"${name}":${value}`;
    default:
      return `,"${name}":${JSON.stringify(value)}`;
  }
}

/** The columns' text as one JSON object (drops the leading comma). */
function object(columns: string): JsonRow {
  return `{${columns.slice(1)}}`;
}

/** Already `yyyy-MM-ddTHH:mm:ss.SSSZ`, as the agent sends times. */
const ISO_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** ISO 8601 → `yyyy-MM-ddTHH:mm:ss.SSSZ` (UTC, ms); a time already in that form is kept as is. */
function isoMs(iso: string): string {
  return ISO_MS_UTC.test(iso) ? iso : new Date(Date.parse(iso)).toISOString();
}

/** The defined values of `names` in `from`, in that order, as column text. */
function columnsOf(from: Readonly<Record<string, unknown>>, names: readonly string[]): string {
  let text = '';
  for (const name of names) text += column(name, from[name] as ColumnValue);
  return text;
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
  return object(
    column('time', isoMs(row.time)) +
      column('start', isoMs(row.start)) +
      column('instance_id', row.instance_id) +
      column('instance_type', row.instance_type) +
      column('region', row.region) +
      column('az', row.az) +
      column('gpu_index', row.gpu_index) +
      column('gpu_uuid', row.gpu_uuid) +
      column('gpu_name', row.gpu_name) +
      column('gpu_instance_id', row.gpu_instance_id) +
      column('gpu_instance_profile', row.gpu_instance_profile) +
      column('gpu_instance_slot', gpuInstanceSlot(row)) +
      column('team', row.team) +
      column('job', row.job) +
      column('namespace', row.namespace) +
      column('pod', row.pod) +
      column('container', row.container) +
      column('batch_id', row.batch_id) +
      column('seq', row.seq) +
      // Metrics then ledger fields, in their lists' order.
      columnsOf(row.metrics as Readonly<Record<string, unknown>>, GPU_METRIC_NAMES) +
      columnsOf(row.ledger as unknown as Readonly<Record<string, unknown>>, LEDGER_FIELD_NAMES),
  );
}

/**
 * @param row - a stored EFA window
 * @returns its `efa_windows` JSON row, the counter deltas as one map column `deltas`
 */
export function efaWindowJson(row: EfaWindowRow): JsonRow {
  return object(
    column('time', isoMs(row.time)) +
      column('start', isoMs(row.start)) +
      column('instance_id', row.instance_id) +
      column('instance_type', row.instance_type) +
      column('device', row.device) +
      column('port', row.port) +
      column('seq', row.seq) +
      column('deltas', row.deltas),
  );
}

/**
 * @param row - a stored event
 * @returns its `events` JSON row; `gpu_slot` = `gpu_index`, or −1 for an instance-wide event
 */
export function eventJson(row: EventRow): JsonRow {
  return object(
    column('time', isoMicros(row.time)) +
      column('instance_id', row.instance_id) +
      column('instance_type', row.instance_type) +
      column('gpu_index', row.gpu_index) +
      column('gpu_slot', row.gpu_index ?? -1) +
      column('pci_bus_id', row.pci_bus_id) +
      column('kind', row.kind) +
      column('xid', row.xid) +
      column('source', row.source) +
      column('pid', row.pid) +
      column('process_name', row.process_name) +
      column('detail', row.detail) +
      column('batch_id', row.batch_id) +
      column('seq', row.seq),
  );
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
 * @param rows - JSON rows (text) in order
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
    const json = encoder.encode(row);
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
