import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
} from './measure-types';

/**
 * The columns of the three telemetry tables, the one home every store shares (DuckDB DDL and
 * upserts, the Firehose JSON rows, the Glue table schema the CDK stack declares): same names,
 * same meaning, same order in every store.
 */

/** Column type of a stored table, in SQL's common names (mapped per store: Glue, DuckDB, Timestream). */
export type StoreColumnType =
  | 'TIMESTAMP'
  | 'VARCHAR'
  | 'INTEGER'
  | 'BIGINT'
  | 'DOUBLE'
  | 'BOOLEAN'
  | 'MAP_VARCHAR_BIGINT';

/**
 * The Kubernetes workload columns of `gpu_windows` (the window's `k8s`: the pod holding the GPU, from
 * dcgm-exporter's `namespace`/`pod`/`container` labels), NULL off Kubernetes. In Timestream they are
 * VARCHAR measures, not dimensions: a window's key stays (instance, GPU, time) whoever holds the GPU,
 * and short-lived pods do not multiply the series (see `gpuWindowRecord`).
 */
export const GPU_WORKLOAD_COLUMNS = ['namespace', 'pod', 'container'] as const;

/**
 * The MIG columns of `gpu_windows`: `gpu_instance_id` and `gpu_instance_profile` (the window's, NULL for a
 * whole GPU) and `gpu_instance_slot`, the key column: the instance id, or −1 for a whole GPU (a key
 * column is never NULL; {@link gpuInstanceSlot}). A MIG GPU has one row per slice and time.
 */
export const GPU_INSTANCE_COLUMNS = ['gpu_instance_id', 'gpu_instance_profile', 'gpu_instance_slot'] as const;

/**
 * The key value of a `gpu_windows` row's MIG slice: its `gpu_instance_id`, or −1 for a whole GPU.
 *
 * @param row - a stored GPU window (its `gpu_instance_id`)
 * @returns an integer ≥ −1
 */
export function gpuInstanceSlot(row: { readonly gpu_instance_id?: number }): number {
  return row.gpu_instance_id ?? -1;
}

/** Identity and dimension columns of `gpu_windows`, in insert order, before the metric and ledger columns. */
export const GPU_WINDOW_KEY_COLUMNS = [
  'time',
  'start',
  'instance_id',
  'instance_type',
  'region',
  'az',
  'gpu_index',
  'gpu_uuid',
  'gpu_name',
  ...GPU_INSTANCE_COLUMNS,
  'team',
  'job',
  ...GPU_WORKLOAD_COLUMNS,
  'batch_id',
  'seq',
] as const;

/** Every column of `gpu_windows` in insert order: identity, then one per metric, then one per ledger field. */
export const GPU_WINDOW_COLUMNS: readonly string[] = [
  ...GPU_WINDOW_KEY_COLUMNS,
  ...GPU_METRIC_NAMES,
  ...LEDGER_FIELD_NAMES,
];

/** Every column of `efa_windows` in insert order. */
export const EFA_WINDOW_COLUMNS = [
  'time',
  'start',
  'instance_id',
  'instance_type',
  'device',
  'port',
  'seq',
  'deltas',
] as const;

/** Every column of `events` in insert order. */
export const EVENT_COLUMNS = [
  'time',
  'instance_id',
  'instance_type',
  'gpu_index',
  'gpu_slot',
  'pci_bus_id',
  'kind',
  'xid',
  'source',
  'pid',
  'process_name',
  'detail',
  'batch_id',
  'seq',
] as const;

/**
 * Partition column of every table in the Athena store: Firehose's default S3 prefix
 * `yyyy/MM/dd/HH/` (UTC arrival hour), a string projected as a date (Athena user guide, partition
 * projection, "Amazon Data Firehose example"). Not a row column: the S3 path holds it.
 */
export const PARTITION_COLUMN = 'datehour';

/** The three telemetry tables, by their name in every store. */
export const TELEMETRY_TABLES = ['gpu_windows', 'efa_windows', 'events'] as const;
/** One of {@link TELEMETRY_TABLES}. */
export type TelemetryTable = (typeof TELEMETRY_TABLES)[number];

/**
 * The key of a row in each table (Timestream's dimensions + time): two rows with the same key are
 * the same measurement, and the one with the higher `seq` wins. `events.gpu_slot` is the GPU
 * index, or −1 for an instance-wide event; `gpu_windows.gpu_instance_slot` the MIG instance id, or
 * −1 for a whole GPU (a key column is never NULL).
 */
export const TELEMETRY_TABLE_KEYS: { readonly [T in TelemetryTable]: readonly string[] } = {
  gpu_windows: ['instance_id', 'gpu_index', 'gpu_instance_slot', 'time'],
  efa_windows: ['instance_id', 'device', 'port', 'time'],
  events: ['instance_id', 'kind', 'gpu_slot', 'time'],
};

/**
 * Columns that always have a value (`NOT NULL` where a store can say so): identity, time, key and
 * provenance. Every other column is absent when unknown, never invented.
 */
export const TELEMETRY_REQUIRED_COLUMNS: { readonly [T in TelemetryTable]: readonly string[] } = {
  gpu_windows: [
    'time',
    'start',
    'instance_id',
    'instance_type',
    'region',
    'gpu_index',
    'gpu_instance_slot',
    'batch_id',
    'seq',
  ],
  efa_windows: ['time', 'start', 'instance_id', 'instance_type', 'device', 'port', 'seq', 'deltas'],
  events: ['time', 'instance_id', 'instance_type', 'gpu_slot', 'kind', 'source', 'batch_id', 'seq'],
};

const GPU_KEY_COLUMN_TYPES: { readonly [K in (typeof GPU_WINDOW_KEY_COLUMNS)[number]]: StoreColumnType } = {
  time: 'TIMESTAMP',
  start: 'TIMESTAMP',
  instance_id: 'VARCHAR',
  instance_type: 'VARCHAR',
  region: 'VARCHAR',
  az: 'VARCHAR',
  gpu_index: 'INTEGER',
  gpu_uuid: 'VARCHAR',
  gpu_name: 'VARCHAR',
  gpu_instance_id: 'INTEGER',
  gpu_instance_profile: 'VARCHAR',
  gpu_instance_slot: 'INTEGER',
  team: 'VARCHAR',
  job: 'VARCHAR',
  namespace: 'VARCHAR',
  pod: 'VARCHAR',
  container: 'VARCHAR',
  batch_id: 'VARCHAR',
  seq: 'BIGINT',
};

/**
 * Every column of every table with its type, in insert order: the schema the Glue tables declare
 * and Firehose converts JSON to Parquet with. Metric and ledger columns take their types from
 * {@link GPU_METRIC_TYPES} and {@link LEDGER_MEASURE_TYPES}.
 */
export const TELEMETRY_TABLE_COLUMNS: {
  readonly [T in TelemetryTable]: ReadonlyArray<readonly [name: string, type: StoreColumnType]>;
} = {
  gpu_windows: [
    ...GPU_WINDOW_KEY_COLUMNS.map((c) => [c, GPU_KEY_COLUMN_TYPES[c]] as const),
    ...GPU_METRIC_NAMES.map((c) => [c, GPU_METRIC_TYPES[c]] as const),
    ...LEDGER_FIELD_NAMES.map((c) => [c, LEDGER_MEASURE_TYPES[c]] as const),
  ],
  efa_windows: [
    ['time', 'TIMESTAMP'],
    ['start', 'TIMESTAMP'],
    ['instance_id', 'VARCHAR'],
    ['instance_type', 'VARCHAR'],
    ['device', 'VARCHAR'],
    ['port', 'INTEGER'],
    ['seq', 'BIGINT'],
    ['deltas', 'MAP_VARCHAR_BIGINT'],
  ],
  events: [
    ['time', 'TIMESTAMP'],
    ['instance_id', 'VARCHAR'],
    ['instance_type', 'VARCHAR'],
    ['gpu_index', 'INTEGER'],
    ['gpu_slot', 'INTEGER'],
    ['pci_bus_id', 'VARCHAR'],
    ['kind', 'VARCHAR'],
    ['xid', 'BIGINT'],
    ['source', 'VARCHAR'],
    ['pid', 'BIGINT'],
    ['process_name', 'VARCHAR'],
    ['detail', 'VARCHAR'],
    ['batch_id', 'VARCHAR'],
    ['seq', 'BIGINT'],
  ],
};
