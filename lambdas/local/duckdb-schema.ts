import {
  GPU_WORKLOAD_COLUMNS,
  type StoreColumnType,
  TELEMETRY_REQUIRED_COLUMNS,
  TELEMETRY_TABLE_COLUMNS,
  TELEMETRY_TABLE_KEYS,
  type TelemetryTable,
} from '../domain/store-columns';

export {
  EFA_WINDOW_COLUMNS,
  EVENT_COLUMNS,
  GPU_WINDOW_COLUMNS,
  GPU_WINDOW_KEY_COLUMNS,
} from '../domain/store-columns';

/** Column type → DuckDB type (times with time zone, compared as instants). */
const DUCKDB_COLUMN_TYPES: { readonly [T in StoreColumnType]: string } = {
  TIMESTAMP: 'TIMESTAMPTZ',
  VARCHAR: 'VARCHAR',
  INTEGER: 'INTEGER',
  BIGINT: 'BIGINT',
  DOUBLE: 'DOUBLE',
  BOOLEAN: 'BOOLEAN',
  MAP_VARCHAR_BIGINT: 'MAP(VARCHAR, BIGINT)',
};

/** `CREATE TABLE` of a telemetry table from the shared column list, required columns `NOT NULL`, keyed by its key. */
function telemetryTableDdl(table: TelemetryTable): string {
  const required = TELEMETRY_REQUIRED_COLUMNS[table];
  const columns = TELEMETRY_TABLE_COLUMNS[table].map(
    ([n, t]) => `${n} ${DUCKDB_COLUMN_TYPES[t]}${required.includes(n) ? ' NOT NULL' : ''}`,
  );
  return `CREATE TABLE IF NOT EXISTS ${table} (\n    ${columns.join(', ')},\n    PRIMARY KEY (${TELEMETRY_TABLE_KEYS[table].join(', ')}))`;
}

/**
 * DDL of the local store (docs/design.md §4): the three telemetry tables from the column list every store
 * shares (`store-columns.ts`: Timestream's dimensions and measures as columns, the Glue tables'
 * columns), plus the state tables of `StateStore`.
 *
 * - `gpu_windows`: key (instance_id, gpu_index, gpu_instance_slot, time), the slot a MIG instance id
 *   or −1 for a whole GPU; one column per metric and ledger field, typed as in Timestream.
 * - `efa_windows`: key (instance_id, device, port, time); the counter deltas in one
 *   `MAP(VARCHAR, BIGINT)` column `deltas` (Timestream has one measure per counter; the set of
 *   counters differs per driver, so a map keeps the table fixed).
 * - `events`: key (instance_id, kind, gpu_slot, time); `gpu_slot` = gpu_index, or −1 for an
 *   instance-wide event (a key column cannot be NULL; Timestream omits the dimension instead).
 * - `remediations`, `broken_gpus`, `alert_claims`, `alert_leases`, `firing_alerts`, `idle_gpus`: the
 *   state; times kept both as given (ISO text, returned unchanged) and as epoch ms (compared). A
 *   remediation is `pending` under a lease (`lease_id`, `lease_until_ms`) from its reservation until
 *   it is confirmed `done`.
 * - `pending_remediations`: a reboot or replacement announced and not yet due (the grace period),
 *   one row per instance, the finding as JSON.
 * - `remediation_slots`: the replacement budgets, one row per taken slot of a scope (`asg#<group>`
 *   or `fleet`), free again once older than the budget's window.
 */
export const DUCKDB_SCHEMA_SQL: readonly string[] = [
  telemetryTableDdl('gpu_windows'),
  // A store file made before the Kubernetes workload columns existed gains them (NULL in old rows).
  ...GPU_WORKLOAD_COLUMNS.map((c) => `ALTER TABLE gpu_windows ADD COLUMN IF NOT EXISTS ${c} VARCHAR`),
  // … and the MIG columns (old rows are whole GPUs: slot −1); its key is widened by GPU_WINDOWS_REKEY_SQL.
  'ALTER TABLE gpu_windows ADD COLUMN IF NOT EXISTS gpu_instance_id INTEGER',
  'ALTER TABLE gpu_windows ADD COLUMN IF NOT EXISTS gpu_instance_profile VARCHAR',
  'ALTER TABLE gpu_windows ADD COLUMN IF NOT EXISTS gpu_instance_slot INTEGER DEFAULT -1',
  // … and the power-throttle measure (NULL in old rows: not measured then).
  'ALTER TABLE gpu_windows ADD COLUMN IF NOT EXISTS power_throttle_ratio DOUBLE',
  // … and the dollars lost to throttling (0 in old rows: they were never priced).
  'ALTER TABLE gpu_windows ADD COLUMN IF NOT EXISTS throttled_usd DOUBLE DEFAULT 0',
  telemetryTableDdl('efa_windows'),
  telemetryTableDdl('events'),
  `CREATE TABLE IF NOT EXISTS remediations (
    instance_id VARCHAR PRIMARY KEY, asg_name VARCHAR, action VARCHAR NOT NULL, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL,
    rule VARCHAR NOT NULL)`,
  // Reservations (StateStore.reserveRemediation): a row is `pending` under a lease until confirmed `done`.
  `ALTER TABLE remediations ADD COLUMN IF NOT EXISTS state VARCHAR DEFAULT 'done'`,
  'ALTER TABLE remediations ADD COLUMN IF NOT EXISTS lease_id VARCHAR',
  'ALTER TABLE remediations ADD COLUMN IF NOT EXISTS lease_until_ms BIGINT',
  // The last reboot of each instance (the ladder's first step), reserved and confirmed like a remediation.
  `CREATE TABLE IF NOT EXISTS reboots (
    instance_id VARCHAR PRIMARY KEY, asg_name VARCHAR, action VARCHAR NOT NULL, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL,
    rule VARCHAR NOT NULL, state VARCHAR NOT NULL, lease_id VARCHAR, lease_until_ms BIGINT)`,
  // The last fault of each instance per incident scope (StateStore.recordFault: storms).
  `CREATE TABLE IF NOT EXISTS scope_faults (
    scope VARCHAR NOT NULL, instance_id VARCHAR NOT NULL, "at" VARCHAR NOT NULL, at_ms BIGINT NOT NULL,
    PRIMARY KEY (scope, instance_id))`,
  // A reboot or replacement announced and not yet due (the grace period), one per instance.
  `CREATE TABLE IF NOT EXISTS pending_remediations (
    instance_id VARCHAR PRIMARY KEY, action VARCHAR NOT NULL, finding VARCHAR NOT NULL, decided_at VARCHAR NOT NULL,
    due_at VARCHAR NOT NULL, last_fault_at VARCHAR NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS remediation_slots (
    scope VARCHAR NOT NULL, slot INTEGER NOT NULL, instance_id VARCHAR NOT NULL, lease_id VARCHAR NOT NULL,
    at_ms BIGINT NOT NULL, PRIMARY KEY (scope, slot))`,
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
 * Counts (`n`) the `gpu_windows` primary keys made before MIG slices had rows of their own (a key
 * without `gpu_instance_slot`): 1 on a store file from before, then {@link GPU_WINDOWS_REKEY_SQL} runs.
 */
export const GPU_WINDOWS_OLD_KEY_SQL = `SELECT count(*) AS n FROM duckdb_constraints()
  WHERE table_name = 'gpu_windows' AND constraint_type = 'PRIMARY KEY'
  AND NOT list_contains(constraint_column_names, 'gpu_instance_slot')`;

/**
 * Widens an old store file's `gpu_windows` key to (instance_id, gpu_index, gpu_instance_slot, time),
 * keeping every row (copied through a temporary table: DuckDB cannot alter a primary key in place).
 * Run in one transaction, after {@link DUCKDB_SCHEMA_SQL}.
 */
export const GPU_WINDOWS_REKEY_SQL: readonly string[] = [
  'CREATE TEMP TABLE gpu_windows_before_mig AS SELECT * FROM gpu_windows',
  'DROP TABLE gpu_windows',
  telemetryTableDdl('gpu_windows'),
  'INSERT INTO gpu_windows BY NAME SELECT * FROM gpu_windows_before_mig',
  'DROP TABLE gpu_windows_before_mig',
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
