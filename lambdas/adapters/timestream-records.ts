import type { _Record, Dimension, MeasureValue } from '@aws-sdk/client-timestream-write';
import { epochMicros } from '../contract';
import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
  type MeasureType,
} from '../domain/measure-types';
import { GPU_WORKLOAD_COLUMNS } from '../domain/store-columns';
import type { EfaWindowRow, EventRow, GpuWindowRow } from '../domain/types';
import {
  EFA_MEASURE_NAME,
  EVENT_MEASURE_NAME,
  GPU_MEASURE_NAME,
  TIMESTREAM_MAX_DIMENSION_PAIR_BYTES,
  TIMESTREAM_MAX_MEASURE_VALUE_BYTES,
  TIMESTREAM_MAX_RECORD_BYTES,
} from './constants';

const encoder = new TextEncoder();

/** Marks a value cut to fit Timestream's byte limits. */
export const TRUNCATION_MARK = '…';

/** UTF-8 bytes of a string. */
function utf8Bytes(text: string): number {
  return encoder.encode(text).length;
}

/**
 * Cuts a string to at most `maxBytes` UTF-8 bytes, never inside a character (nor a surrogate
 * pair), ending it with {@link TRUNCATION_MARK} when cut. Timestream limits are in bytes, so a
 * tag or detail in Japanese or with emoji passes a character count and still fails the write.
 *
 * @param text - any string
 * @param maxBytes - the byte budget, ≥ 3 (the mark's size)
 * @returns `text` when it fits, else its longest prefix that fits with the mark
 */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8Bytes(text) <= maxBytes) return text;
  const room = new Uint8Array(Math.max(0, maxBytes - utf8Bytes(TRUNCATION_MARK)));
  const { read } = encoder.encodeInto(text, room);
  return `${text.slice(0, read)}${TRUNCATION_MARK}`;
}

/**
 * A dimension, or nothing when the value is unknown or empty (Timestream refuses empty dimension
 * values); name and value together within {@link TIMESTREAM_MAX_DIMENSION_PAIR_BYTES}.
 */
function dim(name: string, value: string | number | undefined): Dimension[] {
  if (value === undefined || value === '') return [];
  return [
    { Name: name, Value: truncateUtf8(String(value), TIMESTREAM_MAX_DIMENSION_PAIR_BYTES - utf8Bytes(name)) },
  ];
}

/**
 * A measure, or nothing when absent or empty. BIGINT values are written as integers; VARCHAR
 * values within {@link TIMESTREAM_MAX_MEASURE_VALUE_BYTES}.
 */
function measure(
  name: string,
  type: MeasureType,
  value: string | number | boolean | undefined,
): MeasureValue[] {
  if (value === undefined || value === '') return [];
  const text = type === 'BIGINT' && typeof value === 'number' ? Math.round(value).toFixed(0) : String(value);
  const fitted = type === 'VARCHAR' ? truncateUtf8(text, TIMESTREAM_MAX_MEASURE_VALUE_BYTES) : text;
  return [{ Name: name, Value: fitted, Type: type }];
}

/** A measure value's metered size: 8 B for DOUBLE/BIGINT, 1 B for BOOLEAN, UTF-8 bytes for VARCHAR. */
function valueBytes(m: MeasureValue): number {
  if (m.Type === 'DOUBLE' || m.Type === 'BIGINT') return 8;
  if (m.Type === 'BOOLEAN') return 1;
  return utf8Bytes(m.Value ?? '');
}

/**
 * A record's size as Timestream meters it: 8 B of time, the UTF-8 bytes of dimension names and
 * values, of the measure name and of each measure name, plus each value's size.
 *
 * @param record - a multi-measure record
 * @returns bytes
 */
export function timestreamRecordBytes(record: _Record): number {
  let bytes = 8 + utf8Bytes(record.MeasureName ?? '');
  for (const d of record.Dimensions ?? []) bytes += utf8Bytes(d.Name ?? '') + utf8Bytes(d.Value ?? '');
  for (const m of record.MeasureValues ?? []) bytes += utf8Bytes(m.Name ?? '') + valueBytes(m);
  return bytes;
}

/**
 * Fits a record in {@link TIMESTREAM_MAX_RECORD_BYTES}: while it is too big, the longest VARCHAR
 * measure value is cut by the excess (an event's `detail`, a process name). Numbers, flags and
 * dimensions are never cut here; a record still too big after its text is cut is left as it is
 * and Timestream rejects it (reported as a rejected row).
 */
function fitRecord(record: _Record): _Record {
  let excess = timestreamRecordBytes(record) - TIMESTREAM_MAX_RECORD_BYTES;
  if (excess <= 0) return record;
  const measures = [...(record.MeasureValues ?? [])];
  while (excess > 0) {
    let longest = -1;
    measures.forEach((m, i) => {
      if (m.Type !== 'VARCHAR') return;
      const best = measures[longest];
      if (longest < 0 || (best !== undefined && utf8Bytes(m.Value ?? '') > utf8Bytes(best.Value ?? '')))
        longest = i;
    });
    const m = measures[longest];
    const before = m === undefined ? 0 : utf8Bytes(m.Value ?? '');
    if (m === undefined || before <= utf8Bytes(TRUNCATION_MARK)) break;
    const cut = truncateUtf8(m.Value ?? '', Math.max(utf8Bytes(TRUNCATION_MARK), before - excess));
    measures[longest] = { ...m, Value: cut };
    excess -= before - utf8Bytes(cut);
  }
  return { ...record, MeasureValues: measures };
}

/** ISO 8601 → epoch milliseconds as Timestream's `Time` string. */
function epochMs(iso: string): string {
  return String(Date.parse(iso));
}

/**
 * Builds the multi-measure record of one GPU window (table `gpu_windows`, docs/design.md §4): dimensions
 * `instance_id, instance_type, gpu_index, gpu_uuid?, gpu_instance_id?, gpu_instance_profile?, az?, team?,
 * job?` (a MIG slice is its own series), measure name `gpu`; the
 * Kubernetes workload (`namespace?, pod?, container?`) as VARCHAR measures, not dimensions (a pod is
 * what holds the GPU in that window, not who the series is: as dimensions, a window re-sent with
 * another pod would be a second record for the same key, and every short-lived pod a new series);
 * then every present metric and every ledger field, with types from {@link GPU_METRIC_TYPES} and
 * {@link LEDGER_MEASURE_TYPES}; `Time` = window end in ms; `Version` = batch seq. Text is cut to
 * Timestream's byte limits (UTF-8): dimension pairs ≤ 2 KB, VARCHAR values ≤ 2 KB, record ≤ 2 KB.
 *
 * @param row - the stored GPU window
 * @returns one Timestream record
 */
export function gpuWindowRecord(row: GpuWindowRow): _Record {
  const metrics = row.metrics as Readonly<Record<string, number | boolean | undefined>>;
  const ledger = row.ledger as unknown as Readonly<Record<string, string | number | boolean | undefined>>;
  return fitRecord({
    Dimensions: [
      ...dim('instance_id', row.instance_id),
      ...dim('instance_type', row.instance_type),
      ...dim('gpu_index', row.gpu_index),
      ...dim('gpu_uuid', row.gpu_uuid),
      ...dim('gpu_instance_id', row.gpu_instance_id),
      ...dim('gpu_instance_profile', row.gpu_instance_profile),
      ...dim('az', row.az),
      ...dim('team', row.team),
      ...dim('job', row.job),
    ],
    MeasureName: GPU_MEASURE_NAME,
    MeasureValueType: 'MULTI',
    MeasureValues: [
      ...GPU_WORKLOAD_COLUMNS.flatMap((n) => measure(n, 'VARCHAR', row[n])),
      ...GPU_METRIC_NAMES.flatMap((n) => measure(n, GPU_METRIC_TYPES[n], metrics[n])),
      ...LEDGER_FIELD_NAMES.flatMap((n) => measure(n, LEDGER_MEASURE_TYPES[n], ledger[n])),
    ],
    Time: epochMs(row.time),
    TimeUnit: 'MILLISECONDS',
    Version: row.seq,
  });
}

/**
 * Builds the record of one EFA window (table `efa_windows`): dimensions `instance_id,
 * instance_type, device, port`, measure name `efa`, one BIGINT measure per counter delta.
 *
 * @param row - the stored EFA window
 * @returns one Timestream record; its `MeasureValues` is empty when the row has no counters
 */
export function efaWindowRecord(row: EfaWindowRow): _Record {
  return {
    Dimensions: [
      ...dim('instance_id', row.instance_id),
      ...dim('instance_type', row.instance_type),
      ...dim('device', row.device),
      ...dim('port', row.port),
    ],
    MeasureName: EFA_MEASURE_NAME,
    MeasureValueType: 'MULTI',
    MeasureValues: Object.keys(row.deltas)
      .sort()
      .flatMap((n) => measure(n, 'BIGINT', row.deltas[n])),
    Time: epochMs(row.time),
    TimeUnit: 'MILLISECONDS',
    Version: row.seq,
  };
}

/**
 * Builds the record of one event (table `events`): dimensions `instance_id, gpu_index?, kind`,
 * measure name `event`, time in MICROSECONDS (kernel logs stamp XIDs to the µs and bursts fall
 * within one ms: a ms key would merge distinct events), measures `source` (always), `xid`, `pid` (BIGINT), `detail`,
 * `pci_bus_id`, `process_name` (VARCHAR) when present, the longest text cut first when the record
 * is over 2 KB (UTF-8). `Time` in MICROSECONDS: kernel logs stamp
 * XIDs to the µs and a faulting GPU logs many within one ms, so a ms key would merge distinct events.
 *
 * @param row - the stored event
 * @returns one Timestream record
 */
export function eventRecord(row: EventRow): _Record {
  return fitRecord({
    Dimensions: [
      ...dim('instance_id', row.instance_id),
      ...dim('gpu_index', row.gpu_index),
      ...dim('kind', row.kind),
    ],
    MeasureName: EVENT_MEASURE_NAME,
    MeasureValueType: 'MULTI',
    MeasureValues: [
      ...measure('source', 'VARCHAR', row.source),
      ...measure('xid', 'BIGINT', row.xid),
      ...measure('pid', 'BIGINT', row.pid),
      ...measure('detail', 'VARCHAR', row.detail),
      ...measure('pci_bus_id', 'VARCHAR', row.pci_bus_id),
      ...measure('process_name', 'VARCHAR', row.process_name),
    ],
    Time: String(epochMicros(row.time)),
    TimeUnit: 'MICROSECONDS',
    Version: row.seq,
  });
}
