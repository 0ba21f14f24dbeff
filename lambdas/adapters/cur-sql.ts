import {
  CUR_EFFECTIVE_COST,
  CUR_OPTIONAL_COLUMNS,
  CUR_PRICE_SOURCE,
  CUR_REQUIRED_COLUMNS,
  CUR_SPOT_PRICE_SOURCE,
  type CurColumn,
  type CurColumnMap,
} from '../domain/cur-columns';
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

/** The columns read as timestamps (UTC), and as numbers; the others are text. */
const TIMESTAMP_COLUMNS: ReadonlySet<CurColumn> = new Set([
  'line_item_usage_start_date',
  'line_item_usage_end_date',
]);
const NUMBER_COLUMNS: ReadonlySet<CurColumn> = new Set([
  'line_item_usage_amount',
  'line_item_unblended_cost',
  ...CUR_OPTIONAL_COLUMNS,
]);

/** A SQL identifier, double-quoted (a legacy CSV's `lineItem/UsageAmount` needs the quotes). */
function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * One column of {@link curLineItemsSql}: renamed, cast where the CUR's own type is not the one read
 * (a CSV's text: an all-empty column, a time with its `Z`), `NULL` where the CUR lacks it.
 */
function projected(column: CurColumn, source: string | undefined, type: string | undefined): string {
  const number = NUMBER_COLUMNS.has(column);
  if (source === undefined) return `CAST(NULL AS ${number ? 'DOUBLE' : 'VARCHAR'}) AS ${column}`;
  const t = type?.toUpperCase();
  const ref = quoted(source);
  if (TIMESTAMP_COLUMNS.has(column) && t !== undefined && t !== 'TIMESTAMP') {
    return t.startsWith('TIMESTAMP')
      ? `timezone('UTC', ${ref}) AS ${column}`
      : `TRY_CAST(${ref} AS TIMESTAMP) AS ${column}`;
  }
  if (number && t !== undefined && !/^(DOUBLE|FLOAT|REAL|DECIMAL|NUMERIC|BIGINT|INTEGER|HUGEINT)/.test(t)) {
    return `TRY_CAST(${ref} AS DOUBLE) AS ${column}`;
  }
  return source === column ? column : `${ref} AS ${column}`;
}

/**
 * A CUR's line items with the columns the report reads under their CUR 2.0 names, whatever the
 * CUR's naming (CUR 2.0; legacy CSV `lineItem/UsageAmount`; legacy Athena `line_item_usage_amount`):
 * what {@link curRatesSql} and {@link curSpanSql} read. An optional column the CUR lacks is `NULL`.
 *
 * @param relation - the CUR as the engine reads it: a table (`"db"."table"`) or a DuckDB `read_parquet(…)`
 * @param columns - where each column is in this CUR (`resolveCurColumns`)
 * @param types - the CUR's type of each column by its CUR 2.0 name (DuckDB's `DESCRIBE`), so that
 *   text is cast; none for an Athena table (its Glue types are the CUR's)
 * @param passthrough - further columns kept as they are (the `billing_period` partition)
 * @default types - none
 * @default passthrough - none
 * @returns a parenthesised relation, aliased `cur_line_items`
 */
export function curLineItemsSql(
  relation: string,
  columns: CurColumnMap,
  types: Readonly<Partial<Record<CurColumn, string>>> = {},
  passthrough: readonly string[] = [],
): string {
  const list = [...CUR_REQUIRED_COLUMNS, ...CUR_OPTIONAL_COLUMNS].map((c) =>
    projected(c, columns[c], types[c]),
  );
  return `(SELECT ${[...list, ...passthrough.map(quoted)].join(', ')}\nFROM ${relation}) AS cur_line_items`;
}

/**
 * The cost of one line item of each instance-hour type, SQL: the net column where it holds a net
 * (not `NULL`, and not 0 where the gross is not), else the gross (see `CUR_EFFECTIVE_COST`).
 */
function lineItemCostSql(): string {
  const cases = Object.entries(CUR_EFFECTIVE_COST).map(
    ([type, [net, gross]]) =>
      `WHEN ${stringLiteral(type)} THEN CASE WHEN ${net} IS NULL OR (${net} = 0 AND ${gross} <> 0) THEN ${gross} ELSE ${net} END`,
  );
  return `CASE line_item_line_item_type ${cases.join(' ')} END`;
}

/**
 * The effective price of the instances' CUR line items, per span: per `line_item_resource_id` and
 * span (`line_item_usage_start_date` to `line_item_usage_end_date`: an hour in an hourly export, a
 * day or a month in a daily or monthly one), the effective cost of its instance-hour line items
 * (see `CUR_EFFECTIVE_COST`) and their usage amount (instance-hours), and their ratio, USD per
 * instance-hour. A span one of whose line items has no cost (a reserved hour in a CUR without
 * `reservation_effective_cost`) has no rate: it is left out, never priced from the rest. Filters
 * (pushed down to the Parquet scan in both engines) keep only the line items of the asked
 * instances, of spans overlapping the range, of the three usage line item types, and whose usage
 * type is an instance usage (`…Usage:<instance type>`). A span is Spot when its `pricing_term` says
 * so or its usage type is `…SpotUsage:…` (a legacy CUR leaves Spot's `pricing_term` empty).
 *
 * @param cur - the CUR's line items ({@link curLineItemsSql})
 * @param range - the hours to price, `from` inclusive, `to` exclusive: spans that overlap it (a
 *   span starts at most {@link CUR_LONGEST_SPAN_DAYS} days before `from`, a month's line item)
 * @param instances - the instances to price: their ids (none: an empty result), or `{ sql }`, a
 *   query of one column of ids (Athena: the store's instances of the range)
 * @param where - further conditions on the CUR, SQL, ANDed (a partition filter)
 * @default where - none
 * @returns a query of `instance_id`, `usage_hour` (the span's first hour, timestamp), `usage_to`
 *   (its end, timestamp, exclusive), `cost_usd`, `usage_hours`, `usd_per_hour`, `pricing_term`
 */
export function curRatesSql(
  cur: string,
  range: { readonly from: Date; readonly to: Date },
  instances: readonly string[] | { readonly sql: string },
  where: readonly string[] = [],
): string {
  const ids =
    'sql' in instances
      ? instances.sql
      : instances.length === 0
        ? "''"
        : instances.map(stringLiteral).join(', ');
  const cost = lineItemCostSql();
  const earliest = new Date(range.from.getTime() - CUR_LONGEST_SPAN_DAYS * 86_400_000);
  return `SELECT line_item_resource_id AS instance_id,
  date_trunc('hour', line_item_usage_start_date) AS usage_hour,
  line_item_usage_end_date AS usage_to,
  sum(${cost}) AS cost_usd,
  sum(line_item_usage_amount) AS usage_hours,
  sum(${cost}) / sum(line_item_usage_amount) AS usd_per_hour,
  max(CASE WHEN pricing_term = 'Spot' OR line_item_usage_type LIKE '%SpotUsage:%' THEN 'Spot' ELSE pricing_term END) AS pricing_term
FROM ${cur}
WHERE line_item_resource_id IN (${ids})
  AND line_item_usage_start_date >= ${timestampLiteral(earliest)}
  AND line_item_usage_start_date < ${timestampLiteral(range.to)}
  AND line_item_usage_end_date > ${timestampLiteral(range.from)}
  AND line_item_line_item_type IN (${Object.keys(CUR_EFFECTIVE_COST).map(stringLiteral).join(', ')})
  AND line_item_usage_type LIKE '%Usage:%'${where.map((w) => `\n  AND ${w}`).join('')}
GROUP BY line_item_resource_id, date_trunc('hour', line_item_usage_start_date), line_item_usage_end_date
HAVING sum(line_item_usage_amount) > 0 AND count(*) = count(${cost})`;
}

/**
 * The longest span of one CUR line item, days: a monthly export's line items cover a calendar month
 * (AWS Data Exports: time granularity hourly, daily or monthly). Bounds how far before a range the
 * CUR is searched, so the scan still skips the row groups of earlier months.
 */
export const CUR_LONGEST_SPAN_DAYS = 31;

/**
 * The rate of each instance-hour of some windows, from {@link curRatesSql}'s spans: every span of the
 * instance that covers the hour (an hour, the day, the month), their costs over their usage hours —
 * one rate per instance-hour even when a folder holds two exports of the same account (the same
 * spans twice give the same ratio; an hourly and a daily export over the same hour, their blend).
 *
 * @param windows - a relation of `gpu_windows` rows
 * @param rates - a relation of {@link curRatesSql}'s columns
 * @returns a query of `instance_id`, `usage_hour`, `usd_per_hour`, `pricing_term`, one row per
 *   instance-hour of `windows` that a span covers
 */
export function curHourRatesSql(windows: string, rates: string): string {
  return `SELECT h.instance_id, h.usage_hour,
  sum(s.cost_usd) / sum(s.usage_hours) AS usd_per_hour, max(s.pricing_term) AS pricing_term
FROM (SELECT DISTINCT instance_id, date_trunc('hour', "start") AS usage_hour FROM ${windows}) AS h
JOIN (${rates}) AS s
  ON s.instance_id = h.instance_id AND h.usage_hour >= s.usage_hour AND h.usage_hour < s.usage_to
GROUP BY h.instance_id, h.usage_hour`;
}

/**
 * The newest effective price of each instance in a CUR: of the spans {@link curRatesSql} finds
 * overlapping `range`, the latest one per instance (its first hour: the hour, day or month). What the fleet evaluator prices the last hour at:
 * a CUR 2.0 export is refreshed at least once a day, so the hours being judged are not in it yet,
 * and the instance's most recent billed hour is the best estimate of what they cost.
 *
 * @param cur - the CUR relation (see {@link curRatesSql})
 * @param range - the hours searched, `from` inclusive, `to` exclusive (see {@link curRatesSql})
 * @param instances - the instances to price (see {@link curRatesSql})
 * @param where - further conditions on the CUR (see {@link curRatesSql})
 * @default where - none
 * @returns a query of one row per instance: `instance_id`, `usage_hour` (the newest hour, timestamp),
 *   `usd_per_hour` and `pricing_term` of that hour
 */
export function latestCurRatesSql(
  cur: string,
  range: { readonly from: Date; readonly to: Date },
  instances: readonly string[] | { readonly sql: string },
  where: readonly string[] = [],
): string {
  return `SELECT instance_id, max(usage_hour) AS usage_hour,
  max_by(usd_per_hour, usage_hour) AS usd_per_hour, max_by(pricing_term, usage_hour) AS pricing_term
FROM (${curRatesSql(cur, range, instances, where)})
GROUP BY instance_id`;
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
 * With `match` `latest` the rates are one per instance ({@link latestCurRatesSql}) and price every
 * window of the instance, whatever its hour; the query then has one more column, `cur_usage_hour`,
 * the CUR hour whose rate priced the window (NULL for a window left at its stored price).
 *
 * @param windows - a relation of `gpu_windows` rows (a table or a de-duplicated subquery)
 * @param rates - `hour`: {@link curRatesSql}'s spans; `latest`: {@link latestCurRatesSql}'s rows
 * @param match - `hour`: each window at the rate of the spans covering its hour
 *   ({@link curHourRatesSql}); `latest`: all the instance's windows at its newest rate
 * @default match - 'hour'
 * @returns a query over the same columns as `gpu_windows` (and `cur_usage_hour` with `latest`)
 */
export function repricedWindowsSql(
  windows: string,
  rates: string,
  match: 'hour' | 'latest' = 'hour',
): string {
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
  if (match === 'latest') columns.push('r.usage_hour AS cur_usage_hour');
  const on =
    match === 'latest'
      ? 'r.instance_id = w.instance_id'
      : `r.instance_id = w.instance_id AND r.usage_hour = date_trunc('hour', w."start")`;
  const joined = match === 'latest' ? rates : curHourRatesSql(windows, rates);
  return `SELECT ${columns.join(',\n  ')}
FROM ${windows} AS w
LEFT JOIN (${joined}) AS r
  ON ${on}`;
}

/**
 * The partition column of a CUR 2.0 export's Glue table when AWS's Athena integration (or a crawler
 * over the export's folders) made it: Data Exports writes each billing period under
 * `data/BILLING_PERIOD=YYYY-MM/` (AWS Data Exports user guide, "Understanding export delivery"), so
 * the table is partitioned by `billing_period`, text `YYYY-MM`.
 */
export const CUR_BILLING_PERIOD_COLUMN = 'billing_period';

/**
 * A filter on {@link CUR_BILLING_PERIOD_COLUMN} keeping only the billing periods (UTC calendar months)
 * a range of hours falls in, so Athena reads only those partitions' files.
 *
 * @param range - `from` inclusive, `to` exclusive
 * @returns `billing_period IN ('2026-02', '2026-03')`
 */
export function billingPeriodFilterSql(range: { readonly from: Date; readonly to: Date }): string {
  const months: string[] = [];
  const last = new Date(range.to.getTime() - 1);
  let year = range.from.getUTCFullYear();
  let month = range.from.getUTCMonth();
  while (year < last.getUTCFullYear() || (year === last.getUTCFullYear() && month <= last.getUTCMonth())) {
    months.push(`'${year}-${String(month + 1).padStart(2, '0')}'`);
    month += 1;
    if (month === 12) {
      month = 0;
      year += 1;
    }
  }
  return `${CUR_BILLING_PERIOD_COLUMN} IN (${months.join(', ')})`;
}
