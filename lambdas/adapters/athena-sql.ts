import { MAX_FUTURE_S, MAX_PAST_S } from '../contract';
import { PARTITION_COLUMN, TELEMETRY_TABLE_KEYS, type TelemetryTable } from '../domain/store-columns';
import { FIREHOSE_MAX_BUFFER_INTERVAL_S } from './constants';
import { WASTE_AGGREGATES_SQL, WASTE_SLICE_SQL } from './waste-aggregates';

/**
 * SQL of the Athena store, kept in the subset Athena engine v3 (Trino) and DuckDB share, so the
 * tests run the very same text on DuckDB over the same Parquet layout. Where the dialects differ
 * we chose the Trino spelling DuckDB also accepts: `max_by` (DuckDB: alias of `arg_max`),
 * `CASE` inside aggregates (no `FILTER`), `TIMESTAMP '…'` literals (no `from_iso8601_timestamp`),
 * `row_number() OVER (…)` for de-duplication (no `QUALIFY`), quoted `"time"`.
 */

const HOUR_MS = 3_600_000;

/**
 * @param at - a time
 * @returns its UTC hour as Firehose's S3 prefix writes it and the partition column holds it: `yyyy/MM/dd/HH`
 */
export function datehourOf(at: Date): string {
  const iso = new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS).toISOString();
  return `${iso.slice(0, 4)}/${iso.slice(5, 7)}/${iso.slice(8, 10)}/${iso.slice(11, 13)}`;
}

/**
 * The partitions that can hold rows with `from ≤ time < to`. Firehose files an S3 object under
 * the arrival hour of the *oldest* record in it (Firehose developer guide, "Custom prefixes"), not
 * under the rows' window times: a window can arrive up to {@link MAX_FUTURE_S} before its time
 * (clock skew the contract admits), share an object with records that arrived up to one buffer
 * interval ({@link FIREHOSE_MAX_BUFFER_INTERVAL_S}) before it, and arrive up to
 * {@link MAX_PAST_S} after its time (7 days of agent spool, the contract's limit). Every read
 * filters on this range, so Athena reads only those hours (partition projection).
 *
 * @param from - inclusive start of the row times
 * @param to - exclusive end of the row times
 * @returns a SQL condition on the partition column
 */
export function partitionFilter(from: Date, to: Date): string {
  const first = datehourOf(new Date(from.getTime() - (MAX_FUTURE_S + FIREHOSE_MAX_BUFFER_INTERVAL_S) * 1000));
  const last = datehourOf(new Date(to.getTime() + MAX_PAST_S * 1000));
  return `${PARTITION_COLUMN} BETWEEN '${first}' AND '${last}'`;
}

/**
 * @param from - inclusive start of the row times
 * @param to - exclusive end of the row times
 * @returns the SQL condition every read starts with: the partitions (see {@link partitionFilter}) and the times
 */
export function partitionAndTime(from: Date, to: Date): string {
  return `${partitionFilter(from, to)} AND "time" >= ${timestampLiteral(from)} AND "time" < ${timestampLiteral(to)}`;
}

/**
 * @param at - a time
 * @returns a SQL timestamp literal in UTC to the ms: `TIMESTAMP '2026-03-10 12:00:00.000'`
 */
export function timestampLiteral(at: Date): string {
  return `TIMESTAMP '${at.toISOString().slice(0, 23).replace('T', ' ')}'`;
}

/**
 * @param value - any text
 * @returns a SQL string literal (single quotes doubled)
 */
export function stringLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * The de-duplicated rows of a table: Athena has no upsert, so a retried batch is stored twice and
 * a late older batch beside a newer one; per key (the table's {@link TELEMETRY_TABLE_KEYS}) only
 * the row with the highest `seq` counts, as Timestream's version and DuckDB's upsert keep it.
 *
 * @param tableRef - the quoted table, `"database"."table"`
 * @param table - which table (for its key)
 * @param from - inclusive start of the row times
 * @param to - exclusive end of the row times
 * @param where - further conditions, SQL, ANDed
 * @returns a query of the table's columns, only the latest row per key, rows with `from ≤ time < to`
 */
export function latestRowsSql(
  tableRef: string,
  table: TelemetryTable,
  from: Date,
  to: Date,
  where: readonly string[] = [],
): string {
  const key = TELEMETRY_TABLE_KEYS[table].map((k) => `"${k}"`).join(', ');
  const conditions = [partitionAndTime(from, to), ...where];
  return `SELECT * FROM (
  SELECT *, row_number() OVER (PARTITION BY ${key} ORDER BY seq DESC) AS seq_rank
  FROM ${tableRef}
  WHERE ${conditions.join('\n    AND ')}
) WHERE seq_rank = 1`;
}

/**
 * The waste report on Athena: the ledger of the latest row per GPU window summed per instance
 * and GPU (per MIG slice where the GPU was split) over `from ≤ time < to`.
 *
 * @param tableRef - the quoted `gpu_windows` table
 * @param from - inclusive start
 * @param to - exclusive end
 * @returns the query; its columns are read by `wasteRowFromText`
 */
export function athenaWasteSql(tableRef: string, from: Date, to: Date): string {
  return `SELECT instance_id, gpu_index, ${WASTE_SLICE_SQL},
  ${WASTE_AGGREGATES_SQL}
FROM (${latestRowsSql(tableRef, 'gpu_windows', from, to)})
GROUP BY instance_id, gpu_index, gpu_instance_slot`;
}
