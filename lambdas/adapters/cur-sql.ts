import { CUR_EFFECTIVE_COST, CUR_PRICE_SOURCE, CUR_SPOT_PRICE_SOURCE } from '../domain/cur-columns';
import { GPU_WINDOW_COLUMNS } from '../domain/store-columns';
import { stringLiteral, timestampLiteral } from './athena-sql';

/**
 * The SQL that prices GPU windows from a Cost and Usage Report 2.0, in the subset DuckDB (local
 * `--cur`) and Athena engine v3 (the report Lambda's `curDatabase`/`curTable`) both speak:
 * `date_trunc('hour', …)`, `CASE` inside `sum`, a `LEFT JOIN`. Times are UTC (the CUR's
 * `line_item_usage_start_date` is a UTC timestamp; a DuckDB session sets `TimeZone` to UTC).
 */

/** The ledger's money columns a repriced window recomputes. */
const MONEY_COLUMNS = new Set([
  'price_usd_per_hour',
  'price_source',
  'cost_usd',
  'idle_usd',
  'held_idle_usd',
  'underused_usd',
  'broken_usd',
  'wasted_usd',
  'throttled_usd',
]);

/**
 * The effective price of each instance-hour in a CUR: per `line_item_resource_id` and hour, the
 * effective cost of its instance-hour line items (see `CUR_EFFECTIVE_COST`) divided by their
 * usage amount, USD per instance-hour. Filters (pushed down to the Parquet scan in both engines)
 * keep only the line items of the asked instances, of the range, of the three usage line item
 * types, and whose usage type is an instance usage (`…Usage:<instance type>`).
 *
 * @param cur - the CUR relation: a table (`"db"."table"`) or a DuckDB `read_parquet(…)`
 * @param range - `from` inclusive, `to` exclusive, on `line_item_usage_start_date`
 * @param instances - the instances to price: their ids (none: an empty result), or `{ sql }`, a
 *   query of one column of ids (Athena: the store's instances of the range)
 * @returns a query of `instance_id`, `usage_hour` (timestamp), `usd_per_hour`, `pricing_term`
 */
export function curRatesSql(
  cur: string,
  range: { readonly from: Date; readonly to: Date },
  instances: readonly string[] | { readonly sql: string },
): string {
  const ids =
    'sql' in instances
      ? instances.sql
      : instances.length === 0
        ? "''"
        : instances.map(stringLiteral).join(', ');
  const cost = Object.entries(CUR_EFFECTIVE_COST)
    .map(([type, column]) => `WHEN ${stringLiteral(type)} THEN ${column}`)
    .join(' ');
  return `SELECT line_item_resource_id AS instance_id,
  date_trunc('hour', line_item_usage_start_date) AS usage_hour,
  sum(CASE line_item_line_item_type ${cost} END) / sum(line_item_usage_amount) AS usd_per_hour,
  max(pricing_term) AS pricing_term
FROM ${cur}
WHERE line_item_resource_id IN (${ids})
  AND line_item_usage_start_date >= ${timestampLiteral(range.from)}
  AND line_item_usage_start_date < ${timestampLiteral(range.to)}
  AND line_item_line_item_type IN (${Object.keys(CUR_EFFECTIVE_COST).map(stringLiteral).join(', ')})
  AND line_item_usage_type LIKE '%Usage:%'
GROUP BY line_item_resource_id, date_trunc('hour', line_item_usage_start_date)
HAVING sum(line_item_usage_amount) > 0`;
}

/**
 * The earliest and latest start of the CUR's instance-hour line items, whatever their instance or
 * time: what a report says when the CUR priced none of its hours (another account or period).
 *
 * @param cur - the CUR relation
 * @returns a query of one row: `usage_from`, `usage_to` (NULL when it has none)
 */
export function curSpanSql(cur: string): string {
  return `SELECT min(line_item_usage_start_date) AS usage_from, max(line_item_usage_start_date) AS usage_to
FROM ${cur}
WHERE line_item_line_item_type IN (${Object.keys(CUR_EFFECTIVE_COST).map(stringLiteral).join(', ')})
  AND line_item_usage_type LIKE '%Usage:%'`;
}

/**
 * GPU windows repriced from CUR rates: a window whose instance and start hour has a rate gets
 * `price_usd_per_hour` = the rate, `price_source` = `cur` (`cur:spot` for a Spot hour), `cost_usd` = rate / `gpu_count` ×
 * `gpu_hours`, and its waste recomputed from its stored class and efficiency exactly as the ledger
 * does (idle, held-idle and broken: the whole cost; underused and none: cost × (1 − efficiency)),
 * and its throttled dollars as the ledger does ((cost − wasted) × the larger throttle ratio);
 * every other window is as stored. Same columns, same order as `gpu_windows`.
 *
 * @param windows - a relation of `gpu_windows` rows (a table or a de-duplicated subquery)
 * @param rates - a relation of `instance_id`, `usage_hour`, `usd_per_hour`, `pricing_term` ({@link curRatesSql})
 * @returns a query over the same columns as `gpu_windows`
 */
export function repricedWindowsSql(windows: string, rates: string): string {
  const cost = 'r.usd_per_hour / w.gpu_count * w.gpu_hours';
  const money: Record<string, string> = {
    price_usd_per_hour: 'r.usd_per_hour',
    price_source: `CASE WHEN r.pricing_term = 'Spot' THEN ${stringLiteral(CUR_SPOT_PRICE_SOURCE)} ELSE ${stringLiteral(CUR_PRICE_SOURCE)} END`,
    cost_usd: cost,
    idle_usd: `CASE WHEN w.waste_class = 'idle' THEN ${cost} ELSE 0 END`,
    held_idle_usd: `CASE WHEN w.waste_class = 'held_idle' THEN ${cost} ELSE 0 END`,
    broken_usd: `CASE WHEN w.waste_class = 'broken' THEN ${cost} ELSE 0 END`,
    underused_usd: `CASE WHEN w.waste_class IN ('underused', 'none') THEN ${cost} * (1 - w.efficiency) ELSE 0 END`,
    wasted_usd: `CASE WHEN w.waste_class IN ('idle', 'held_idle', 'broken') THEN ${cost} WHEN w.waste_class IN ('underused', 'none') THEN ${cost} * (1 - w.efficiency) ELSE 0 END`,
    throttled_usd: `CASE WHEN w.waste_class IN ('underused', 'none') THEN ${cost} * w.efficiency WHEN w.waste_class = 'unknown' THEN ${cost} ELSE 0 END * greatest(coalesce(w.thermal_throttle_ratio, 0), coalesce(w.power_throttle_ratio, 0))`,
  };
  const columns = GPU_WINDOW_COLUMNS.map((c) =>
    MONEY_COLUMNS.has(c)
      ? `CASE WHEN r.usd_per_hour IS NULL THEN w."${c}" ELSE ${money[c]} END AS "${c}"`
      : `w."${c}"`,
  );
  return `SELECT ${columns.join(',\n  ')}
FROM ${windows} AS w
LEFT JOIN (${rates}) AS r
  ON r.instance_id = w.instance_id AND r.usage_hour = date_trunc('hour', w."start")`;
}
