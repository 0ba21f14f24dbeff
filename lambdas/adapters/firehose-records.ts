import { epochMicros } from '../contract';
import { firehoseJsonKey } from '../domain/firehose-json-keys';
import { GPU_METRIC_NAMES, LEDGER_FIELD_NAMES } from '../domain/measure-types';
import {
  EFA_WINDOW_COLUMNS,
  EVENT_COLUMNS,
  GPU_WINDOW_KEY_COLUMNS,
  gpuInstanceSlot,
  type TelemetryTable,
} from '../domain/store-columns';
import type { EfaWindowRow, EventRow, GpuWindowRow } from '../domain/types';
import { FIREHOSE_MAX_RECORD_BYTES } from './constants';

/**
 * Rows as Amazon Data Firehose takes them for JSON → Parquet conversion: one flat JSON object per
 * row with the columns of `store-columns.ts` under their short keys (`firehose-json-keys.ts`, which
 * the delivery streams' SerDe maps back to the column names; absent values left out, which the
 * OpenX JSON SerDe reads as NULL), window times as epoch milliseconds (13 digits instead of the
 * 26 characters of a quoted `yyyy-MM-ddTHH:mm:ss.SSSZ`, the same instant: the agent's times are
 * in ms) and event times as `yyyy-MM-ddTHH:mm:ss.SSSSSSZ` (µs), both formats the OpenX JSON SerDe
 * parses (Firehose developer guide, "Convert input data format": "Epoch milliseconds"),
 * `efa_windows.deltas` as a JSON object (a Parquet `map<string,bigint>`).
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
 * A value as JSON text: a string JSON-escaped ({@link quoted}: the ledger's sources, waste class and
 * diagnosis repeat in every row), a non-finite number `null` (as `JSON.stringify` writes it), a map
 * of counters as a JSON object.
 */
function valueText(value: Exclude<ColumnValue, undefined>): string {
  switch (typeof value) {
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return quoted(value);
    default:
      return JSON.stringify(value);
  }
}

/** `prefix` + value for a defined value (`prefix` = `,"key":`), '' for `undefined`. */
function column(prefix: string, value: ColumnValue): string {
  return value === undefined ? '' : prefix + valueText(value);
}

/** The columns' text as one JSON object (drops the leading comma). */
function object(columns: string): JsonRow {
  return `{${columns.slice(1)}}`;
}

/** Most times {@link epochText} remembers before it starts again (a batch repeats a few window times). */
const EPOCH_MAX = 1024;
const epochTexts = new Map<string, string>();

/**
 * ISO 8601 → epoch milliseconds (UTC) as JSON text, as the SerDe reads a `TIMESTAMP` column from a
 * JSON number; remembered, since every row of a batch repeats its window's start and end.
 * @throws {RangeError} for a time `Date.parse` cannot read (the contract has validated it before)
 */
function epochText(iso: string): string {
  let text = epochTexts.get(iso);
  if (text === undefined) {
    const ms = Date.parse(iso);
    if (!Number.isFinite(ms)) throw new RangeError(`Invalid time value: ${iso}`);
    if (epochTexts.size >= EPOCH_MAX) epochTexts.clear();
    text = String(ms);
    epochTexts.set(iso, text);
  }
  return text;
}

/** Most strings {@link quoted} remembers before it starts again (a batch repeats a handful). */
const QUOTED_MAX = 1024;
const quotedText = new Map<string, string>();

/**
 * `JSON.stringify` of a string, remembered: the rows of a batch repeat their instance, type,
 * region, zone, GPU names, team, job, and batch id, 48 rows × 14 columns a batch.
 */
function quoted(value: string): string {
  let text = quotedText.get(value);
  if (text === undefined) {
    if (quotedText.size >= QUOTED_MAX) quotedText.clear();
    text = JSON.stringify(value);
    quotedText.set(value, text);
  }
  return text;
}

/** {@link column} for a GPU row's identity columns, `prefix` = `,"key":`, strings {@link quoted}. */
function identity(prefix: string, value: string | number | undefined): string {
  if (value === undefined) return '';
  return prefix + (typeof value === 'string' ? quoted(value) : valueText(value));
}

/**
 * `,"key":` of each column of `table`, its short JSON key ({@link firehoseJsonKey}), to write
 * columns without building their prefix per row. Keys are lowercase letters and digits, column
 * names snake_case identifiers: no escaping needed.
 */
function prefixesOf(table: TelemetryTable, names: readonly string[]): readonly string[] {
  return names.map((name) => `,"${firehoseJsonKey(table, name)}":`);
}

/** `,"key":` of each named column of `table`, by column name. */
function prefixMap<const C extends string>(
  table: TelemetryTable,
  names: readonly C[],
): { readonly [K in C]: string } {
  const prefixes = prefixesOf(table, names);
  return Object.fromEntries(names.map((n, i) => [n, prefixes[i]])) as { readonly [K in C]: string };
}
const GPU = prefixMap('gpu_windows', GPU_WINDOW_KEY_COLUMNS);
/** `{"key":` of `time`, the first column of every `gpu_windows` row. */
const GPU_OPEN = `{${GPU.time.slice(1)}`;
const EFA = prefixMap('efa_windows', EFA_WINDOW_COLUMNS);
const EVENT = prefixMap('events', EVENT_COLUMNS);

/** Writes the defined values of a fixed list of columns of `from` as column text (`,"key":value`…). */
type ColumnsWriter = (from: Readonly<Record<string, unknown>>) => string;

/**
 * The defined values of `names` in `from`, in that order, as column text (`prefixes[i]` is name
 * i's): the loop {@link columnsWriter} compiles, used as is where code generation is disallowed.
 */
function columnsOf(
  from: Readonly<Record<string, unknown>>,
  names: readonly string[],
  prefixes: readonly string[],
): string {
  let text = '';
  for (let i = 0; i < names.length; i++) {
    const value = from[names[i] as string] as ColumnValue;
    if (value === undefined) continue;
    // Numbers, nearly every column, without the switch of `valueText`.
    text +=
      (prefixes[i] as string) +
      (typeof value === 'number' ? (Number.isFinite(value) ? `${value}` : 'null') : valueText(value));
  }
  return text;
}

/**
 * {@link columnsOf} for one fixed list of columns, compiled once at module load into straight-line
 * code (one property read per column, its prefix a literal): the loop reads ≈ 60 columns of 48 rows
 * a batch by computed key, a megamorphic lookup each, and was 7 % of ingest's CPU; compiled,
 * `gpuWindowJson` takes 21–26 % less CPU (3 alternated runs; zod compiles its object parsers the
 * same way). What remains is mostly writing the numbers as text. The same text as the
 * loop, byte for byte (`firehose-records.test.ts`). Where the runtime forbids code generation
 * (`--disallow-code-generation-from-strings`) the loop is used.
 *
 * @param names - column names: snake_case identifiers (anything else is refused)
 * @param prefixes - `,"key":` of each name, same order
 * @throws {Error} when a name is not a snake_case identifier or a prefix not `,"key":` of a short key
 */
function columnsWriter(names: readonly string[], prefixes: readonly string[]): ColumnsWriter {
  const loop: ColumnsWriter = (from) => columnsOf(from, names, prefixes);
  names.forEach((name, i) => {
    if (!/^[a-z][a-z0-9_]*$/.test(name) || !/^,"[a-z][a-z0-9_]*":$/.test(prefixes[i] ?? '')) {
      throw new Error(`Expected snake_case column names and their JSON keys, got ${name} → ${prefixes[i]}`);
    }
  });
  const body = names
    .map(
      (name, i) =>
        `v = from.${name}; if (v !== undefined) text += '${prefixes[i]}' + (typeof v === 'number' ? (Number.isFinite(v) ? '' + v : 'null') : valueText(v));`,
    )
    .join('\n');
  try {
    return new Function(
      'valueText',
      `return function columns(from) { let text = ''; let v;\n${body}\nreturn text; };`,
    )(valueText) as ColumnsWriter;
  } catch {
    return loop;
  }
}

/** The metric columns of a `gpu_windows` row, then its ledger columns, in their lists' order. */
const metricColumns = columnsWriter(GPU_METRIC_NAMES, prefixesOf('gpu_windows', GPU_METRIC_NAMES));
const ledgerColumns = columnsWriter(LEDGER_FIELD_NAMES, prefixesOf('gpu_windows', LEDGER_FIELD_NAMES));

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
  // `time` is always present: the row opens with it, written without {@link object}'s copy.
  return (
    GPU_OPEN +
    epochText(row.time) +
    GPU.start +
    epochText(row.start) +
    identity(GPU.instance_id, row.instance_id) +
    identity(GPU.instance_type, row.instance_type) +
    identity(GPU.region, row.region) +
    identity(GPU.az, row.az) +
    identity(GPU.gpu_index, row.gpu_index) +
    identity(GPU.gpu_uuid, row.gpu_uuid) +
    identity(GPU.gpu_name, row.gpu_name) +
    identity(GPU.gpu_instance_id, row.gpu_instance_id) +
    identity(GPU.gpu_instance_profile, row.gpu_instance_profile) +
    identity(GPU.gpu_instance_slot, gpuInstanceSlot(row)) +
    identity(GPU.team, row.team) +
    identity(GPU.job, row.job) +
    identity(GPU.namespace, row.namespace) +
    identity(GPU.pod, row.pod) +
    identity(GPU.container, row.container) +
    identity(GPU.batch_id, row.batch_id) +
    identity(GPU.seq, row.seq) +
    // Metrics then ledger fields, in their lists' order.
    metricColumns(row.metrics as Readonly<Record<string, unknown>>) +
    ledgerColumns(row.ledger as unknown as Readonly<Record<string, unknown>>) +
    '}'
  );
}

/**
 * @param row - a stored EFA window
 * @returns its `efa_windows` JSON row, the counter deltas as one map column `deltas`
 */
export function efaWindowJson(row: EfaWindowRow): JsonRow {
  return object(
    EFA.time +
      epochText(row.time) +
      EFA.start +
      epochText(row.start) +
      column(EFA.instance_id, row.instance_id) +
      column(EFA.instance_type, row.instance_type) +
      column(EFA.device, row.device) +
      column(EFA.port, row.port) +
      column(EFA.seq, row.seq) +
      column(EFA.deltas, row.deltas),
  );
}

/**
 * @param row - a stored event
 * @returns its `events` JSON row; `gpu_slot` = `gpu_index`, or −1 for an instance-wide event
 */
export function eventJson(row: EventRow): JsonRow {
  return object(
    column(EVENT.time, isoMicros(row.time)) +
      column(EVENT.instance_id, row.instance_id) +
      column(EVENT.instance_type, row.instance_type) +
      column(EVENT.gpu_index, row.gpu_index) +
      column(EVENT.gpu_slot, row.gpu_index ?? -1) +
      column(EVENT.pci_bus_id, row.pci_bus_id) +
      column(EVENT.kind, row.kind) +
      column(EVENT.xid, row.xid) +
      column(EVENT.source, row.source) +
      column(EVENT.pid, row.pid) +
      column(EVENT.process_name, row.process_name) +
      column(EVENT.detail, row.detail) +
      column(EVENT.batch_id, row.batch_id) +
      column(EVENT.seq, row.seq),
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

/**
 * Packs rows into as few Firehose records as fit: JSON objects one after another, each followed by
 * a newline (Firehose's deserializers read several JSON documents in one record, but not a JSON
 * array). Fewer, fuller records cost less, as each record is billed rounded up to 5 KB. Each record
 * is encoded to UTF-8 once, as one text (a row's size is its UTF-8 byte length, counted apart).
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
  let text = '';
  let indexes: number[] = [];
  let size = 0;
  const flush = (): void => {
    if (indexes.length === 0) return;
    records.push({ data: encoder.encode(text), rows: indexes });
    text = '';
    indexes = [];
    size = 0;
  };
  rows.forEach((row, i) => {
    // The newline is one byte; a lone surrogate counts as the 3 bytes of U+FFFD, as it is encoded.
    const bytes = Buffer.byteLength(row, 'utf8') + 1;
    if (bytes > maxRecordBytes) {
      oversized.push(i);
      return;
    }
    if (size + bytes > maxRecordBytes) flush();
    text += `${row}\n`;
    indexes.push(i);
    size += bytes;
  });
  flush();
  return { records, oversized };
}
