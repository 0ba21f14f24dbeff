import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
} from '../adapters/measure-types';

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
  'team',
  'job',
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
 * DDL of the local store (DESIGN §4): the Timestream tables with the same column names (dimensions
 * and measures as columns), plus the state tables of `StateStore`.
 *
 * - `gpu_windows`: key (instance_id, gpu_index, time); one column per metric and ledger field,
 *   typed as in Timestream.
 * - `efa_windows`: key (instance_id, device, port, time); the counter deltas in one
 *   `MAP(VARCHAR, BIGINT)` column `deltas` (Timestream has one measure per counter; the set of
 *   counters differs per driver, so a map keeps the table fixed).
 * - `events`: key (instance_id, kind, gpu_slot, time); `gpu_slot` = gpu_index, or −1 for an
 *   instance-wide event (a key column cannot be NULL; Timestream omits the dimension instead).
 * - `remediations`, `broken_gpus`, `alert_claims`, `alert_leases`, `firing_alerts`, `idle_gpus`: the
 *   state; times kept both as given (ISO text, returned unchanged) and as epoch ms (compared).
 */
export const DUCKDB_SCHEMA_SQL: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS gpu_windows (
    time TIMESTAMPTZ NOT NULL, start TIMESTAMPTZ NOT NULL, instance_id VARCHAR NOT NULL, instance_type VARCHAR NOT NULL,
    region VARCHAR NOT NULL, az VARCHAR, gpu_index INTEGER NOT NULL, gpu_uuid VARCHAR, gpu_name VARCHAR, team VARCHAR, job VARCHAR,
    batch_id VARCHAR NOT NULL, seq BIGINT NOT NULL,
    ${GPU_METRIC_NAMES.map((n) => `${n} ${GPU_METRIC_TYPES[n]}`).join(', ')},
    ${LEDGER_FIELD_NAMES.map((n) => `${n} ${LEDGER_MEASURE_TYPES[n]}`).join(', ')},
    PRIMARY KEY (instance_id, gpu_index, time))`,
  `CREATE TABLE IF NOT EXISTS efa_windows (
    time TIMESTAMPTZ NOT NULL, start TIMESTAMPTZ NOT NULL, instance_id VARCHAR NOT NULL, instance_type VARCHAR NOT NULL,
    device VARCHAR NOT NULL, port INTEGER NOT NULL, seq BIGINT NOT NULL, deltas MAP(VARCHAR, BIGINT) NOT NULL,
    PRIMARY KEY (instance_id, device, port, time))`,
  `CREATE TABLE IF NOT EXISTS events (
    time TIMESTAMPTZ NOT NULL, instance_id VARCHAR NOT NULL, instance_type VARCHAR NOT NULL, gpu_index INTEGER,
    gpu_slot INTEGER NOT NULL, pci_bus_id VARCHAR, kind VARCHAR NOT NULL, xid BIGINT, source VARCHAR NOT NULL, pid BIGINT,
    process_name VARCHAR, detail VARCHAR, batch_id VARCHAR NOT NULL, seq BIGINT NOT NULL,
    PRIMARY KEY (instance_id, kind, gpu_slot, time))`,
  `CREATE TABLE IF NOT EXISTS remediations (
    instance_id VARCHAR PRIMARY KEY, asg_name VARCHAR, action VARCHAR NOT NULL, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL,
    rule VARCHAR NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS broken_gpus (
    instance_id VARCHAR NOT NULL, gpu_key VARCHAR NOT NULL, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL,
    PRIMARY KEY (instance_id, gpu_key))`,
  `CREATE TABLE IF NOT EXISTS alert_claims (alert_id VARCHAR PRIMARY KEY, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL)`,
  'CREATE TABLE IF NOT EXISTS alert_leases (alert_id VARCHAR PRIMARY KEY, lease_ms BIGINT NOT NULL)',
  `CREATE TABLE IF NOT EXISTS firing_alerts (
    instance_id VARCHAR NOT NULL, alert_id VARCHAR NOT NULL, rule VARCHAR NOT NULL, severity VARCHAR NOT NULL,
    instance_type VARCHAR NOT NULL, since VARCHAR NOT NULL, summary VARCHAR NOT NULL, PRIMARY KEY (instance_id, alert_id))`,
  `CREATE TABLE IF NOT EXISTS idle_gpus (
    instance_id VARCHAR NOT NULL, gpu_key VARCHAR NOT NULL, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL,
    PRIMARY KEY (instance_id, gpu_key))`,
];

/**
 * An idempotent multi-row upsert: insert, or on a key conflict replace every non-key column only
 * when the new row's `seq` is higher (a retried batch is stored once; a newer batch replaces).
 * The rows of one statement must have distinct keys (DuckDB cannot update a row twice in one
 * statement). One multi-row statement is ~4× faster than one statement per row.
 *
 * @param table - table name
 * @param columns - all columns in insert order
 * @param key - the primary key columns
 * @param casts - per column, a SQL cast suffix for its parameter (e.g. `::TIMESTAMPTZ`)
 * @param rowCount - rows in the statement, ≥ 1
 * @returns the statement with `rowCount × columns.length` positional `?` parameters
 */
export function upsertSql(
  table: string,
  columns: readonly string[],
  key: readonly string[],
  casts: Readonly<Record<string, string>>,
  rowCount: number,
): string {
  const one = `(${columns.map((c) => `?${casts[c] ?? ''}`).join(', ')})`;
  const values = Array.from({ length: rowCount }, () => one).join(', ');
  const updates = columns
    .filter((c) => !key.includes(c))
    .map((c) => `${c} = excluded.${c}`)
    .join(', ');
  return `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${values} ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${updates} WHERE excluded.seq > ${table}.seq`;
}
