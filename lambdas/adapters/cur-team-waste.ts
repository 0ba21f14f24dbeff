import { CUR_PRICE_SOURCE } from '../domain/cur-columns';
import type { FleetTeamRow, TeamPricing } from '../domain/fleet';
import { latestCurRatesSql, repricedWindowsSql } from './cur-sql';
import { type ColumnGetter, wasteGroupRowFrom, wasteGroupSql } from './store-reads';

/**
 * The fleet evaluator's team waste priced from a Cost and Usage Report 2.0
 * (`CurPricedFleetReads`), in the SQL subset Athena engine v3 (`AthenaCurReads`) and DuckDB (local
 * `gpu-sentinel local --cur`) both speak: the span's GPU windows, each instance's newest CUR rate
 * (`latestCurRatesSql`), the windows repriced at it (`repricedWindowsSql`, `latest`) and summed per
 * `team` with how they were priced.
 */

const CUR_ROW = `price_source LIKE '${CUR_PRICE_SOURCE}%'`;

/**
 * @param windows - a parenthesised relation of the span's de-duplicated `gpu_windows` rows
 * @param cur - the CUR relation (a Glue table, or a DuckDB `read_parquet(…)`)
 * @param hours - the CUR hours searched for each instance's newest rate, `from` inclusive, `to` exclusive
 * @param where - further conditions on the CUR (a partition filter) @default none
 * @returns the query: {@link wasteGroupSql}'s columns by `team`, and `cur_gpu_hours`,
 *   `cur_usage_hour_from`, `cur_usage_hour_to`, `stored_price_sources`, `stored_price_source`
 */
export function curTeamWasteSql(
  windows: string,
  cur: string,
  hours: { readonly from: Date; readonly to: Date },
  where: readonly string[] = [],
): string {
  const rates = latestCurRatesSql(cur, hours, { sql: `SELECT DISTINCT instance_id FROM ${windows}` }, where);
  return wasteGroupSql(`(${repricedWindowsSql(windows, rates, 'latest')})`, 'team', [
    `sum(CASE WHEN ${CUR_ROW} THEN gpu_hours END) AS cur_gpu_hours`,
    'min(cur_usage_hour) AS cur_usage_hour_from',
    'max(cur_usage_hour) AS cur_usage_hour_to',
    `count(DISTINCT CASE WHEN NOT ${CUR_ROW} THEN price_source END) AS stored_price_sources`,
    `max(CASE WHEN NOT ${CUR_ROW} THEN price_source END) AS stored_price_source`,
  ]);
}

/** A timestamp as Athena (`2026-03-10 21:00:00.000`) or DuckDB (ISO 8601) gives it, UTC → ISO 8601. */
function isoOf(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value).replace(' ', 'T');
  const zoned = /(Z|[+-]\d\d(:?\d\d)?)$/.test(text.slice(10)) ? text : `${text}Z`;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/**
 * @param get - one result row of {@link curTeamWasteSql} (text or JS values)
 * @returns the team row with its `pricing`
 */
export function curTeamRowFrom(get: ColumnGetter): FleetTeamRow {
  const from = isoOf(get('cur_usage_hour_from'));
  const to = isoOf(get('cur_usage_hour_to'));
  const sources = Number(get('stored_price_sources') ?? 0);
  const stored = get('stored_price_source');
  const pricing: TeamPricing = {
    cur_gpu_hours: Number(get('cur_gpu_hours') ?? 0),
    ...(from !== undefined && to !== undefined ? { cur_usage_hour_from: from, cur_usage_hour_to: to } : {}),
    ...(sources > 1
      ? { stored_price_source: 'mixed' }
      : stored !== undefined && stored !== null
        ? { stored_price_source: String(stored) }
        : {}),
  };
  return { ...wasteGroupRowFrom(get), pricing };
}
