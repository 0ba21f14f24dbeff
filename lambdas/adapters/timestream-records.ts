import type { _Record, Dimension, MeasureValue } from '@aws-sdk/client-timestream-write';
import { epochMicros } from '../contract';
import type { EfaWindowRow, EventRow, GpuWindowRow } from '../domain/types';
import { EFA_MEASURE_NAME, EVENT_MEASURE_NAME, GPU_MEASURE_NAME } from './constants';
import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
  type MeasureType,
} from './measure-types';

/** A dimension, or nothing when the value is unknown or empty (Timestream refuses empty dimension values). */
function dim(name: string, value: string | number | undefined): Dimension[] {
  if (value === undefined || value === '') return [];
  return [{ Name: name, Value: String(value) }];
}

/** A measure, or nothing when absent or empty. BIGINT values are written as integers. */
function measure(
  name: string,
  type: MeasureType,
  value: string | number | boolean | undefined,
): MeasureValue[] {
  if (value === undefined || value === '') return [];
  const text = type === 'BIGINT' && typeof value === 'number' ? Math.round(value).toFixed(0) : String(value);
  return [{ Name: name, Value: text, Type: type }];
}

/** ISO 8601 → epoch milliseconds as Timestream's `Time` string. */
function epochMs(iso: string): string {
  return String(Date.parse(iso));
}

/**
 * Builds the multi-measure record of one GPU window (table `gpu_windows`, DESIGN §4): dimensions
 * `instance_id, instance_type, gpu_index, gpu_uuid?, az?, team?, job?`, measure name `gpu`, every
 * present metric and every ledger field, with types from {@link GPU_METRIC_TYPES} and
 * {@link LEDGER_MEASURE_TYPES}; `Time` = window end in ms; `Version` = batch seq.
 *
 * @param row - the stored GPU window
 * @returns one Timestream record
 */
export function gpuWindowRecord(row: GpuWindowRow): _Record {
  const metrics = row.metrics as Readonly<Record<string, number | boolean | undefined>>;
  const ledger = row.ledger as unknown as Readonly<Record<string, string | number | boolean | undefined>>;
  return {
    Dimensions: [
      ...dim('instance_id', row.instance_id),
      ...dim('instance_type', row.instance_type),
      ...dim('gpu_index', row.gpu_index),
      ...dim('gpu_uuid', row.gpu_uuid),
      ...dim('az', row.az),
      ...dim('team', row.team),
      ...dim('job', row.job),
    ],
    MeasureName: GPU_MEASURE_NAME,
    MeasureValueType: 'MULTI',
    MeasureValues: [
      ...GPU_METRIC_NAMES.flatMap((n) => measure(n, GPU_METRIC_TYPES[n], metrics[n])),
      ...LEDGER_FIELD_NAMES.flatMap((n) => measure(n, LEDGER_MEASURE_TYPES[n], ledger[n])),
    ],
    Time: epochMs(row.time),
    TimeUnit: 'MILLISECONDS',
    Version: row.seq,
  };
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
 * `pci_bus_id`, `process_name` (VARCHAR) when present. `Time` in MICROSECONDS: kernel logs stamp
 * XIDs to the µs and a faulting GPU logs many within one ms, so a ms key would merge distinct events.
 *
 * @param row - the stored event
 * @returns one Timestream record
 */
export function eventRecord(row: EventRow): _Record {
  return {
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
  };
}
