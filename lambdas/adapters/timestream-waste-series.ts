import {
  type Datum,
  QueryCommand,
  type QueryCommandOutput,
  type TimestreamQueryClient,
} from '@aws-sdk/client-timestream-query';
import type { WasteQuery } from '../domain/ports';
import type { Diagnosis } from '../domain/types';
import type { WasteSeriesRow } from '../domain/waste-report';
import { GPU_MEASURE_NAME } from './constants';
import { StoreQueryError, StoreUnavailableError } from './errors';
import { wasteRangeProblem } from './waste-report';

/**
 * The report's slice read on Timestream for LiveAnalytics: the ledger per UTC day and per each
 * window's own diagnosis, team, job, instance type and price source (the same meaning as the local
 * store's `queryWasteSeries`).
 */

/**
 * The slice SQL for Timestream over `from ≤ time < to`.
 *
 * @param database - database name
 * @param table - the GPU windows table
 * @param from - inclusive start
 * @param to - exclusive end
 * @returns the query string
 */
export function wasteSeriesSql(database: string, table: string, from: Date, to: Date): string {
  return `SELECT date_format(bin(time, 1d), '%Y-%m-%d') AS day, diagnosis, team, job, instance_type, price_source,
  sum(gpu_hours) AS gpu_hours, sum(cost_usd) AS cost_usd, sum(idle_usd) AS idle_usd,
  sum(held_idle_usd) AS held_idle_usd, sum(underused_usd) AS underused_usd,
  sum(broken_usd) AS broken_usd, sum(wasted_usd) AS wasted_usd,
  coalesce(sum(CASE WHEN efficiency IS NOT NULL THEN efficiency * gpu_hours END), 0) AS efficiency_weighted,
  coalesce(sum(CASE WHEN efficiency IS NOT NULL THEN gpu_hours END), 0) AS efficiency_hours
FROM "${database}"."${table}"
WHERE measure_name = '${GPU_MEASURE_NAME}'
  AND time >= from_iso8601_timestamp('${from.toISOString()}')
  AND time < from_iso8601_timestamp('${to.toISOString()}')
GROUP BY 1, diagnosis, team, job, instance_type, price_source
ORDER BY 1`;
}

/**
 * Runs {@link wasteSeriesSql}, page by page.
 *
 * @param client - Timestream Query client
 * @param database - database name
 * @param table - the GPU windows table
 * @param query - the range
 * @returns the rows, by day
 * @throws {StoreQueryError} when the range is invalid or empty
 * @throws {StoreUnavailableError} when Timestream Query fails
 */
export async function queryTimestreamWasteSeries(
  client: TimestreamQueryClient,
  database: string,
  table: string,
  query: WasteQuery,
): Promise<WasteSeriesRow[]> {
  const problem = wasteRangeProblem(query.from, query.to);
  if (problem !== undefined) throw new StoreQueryError(problem);
  const sql = wasteSeriesSql(database, table, query.from, query.to);
  const out: WasteSeriesRow[] = [];
  let nextToken: string | undefined;
  do {
    let page: QueryCommandOutput;
    try {
      page = await client.send(
        new QueryCommand({ QueryString: sql, ...(nextToken ? { NextToken: nextToken } : {}) }),
      );
    } catch (error) {
      throw new StoreUnavailableError(
        'Query gpu_windows',
        'expected Timestream Query to answer the report slices; retry later',
        {
          cause: error,
        },
      );
    }
    const names = (page.ColumnInfo ?? []).map((c) => c.Name ?? '');
    for (const row of page.Rows ?? []) out.push(parseSeriesRow(names, row.Data ?? []));
    nextToken = page.NextToken;
  } while (nextToken);
  return out;
}

function parseSeriesRow(names: readonly string[], data: readonly Datum[]): WasteSeriesRow {
  const v = new Map<string, string | undefined>();
  names.forEach((n, i) => {
    const d = data[i];
    v.set(n, d === undefined || d.NullValue ? undefined : d.ScalarValue);
  });
  const num = (n: string): number => Number(v.get(n) ?? 0);
  const diagnosis = v.get('diagnosis');
  const team = v.get('team');
  const job = v.get('job');
  return {
    day: v.get('day') ?? '',
    ...(diagnosis !== undefined ? { diagnosis: diagnosis as Diagnosis } : {}),
    ...(team !== undefined ? { team } : {}),
    ...(job !== undefined ? { job } : {}),
    instance_type: v.get('instance_type') ?? '',
    price_source: v.get('price_source') ?? 'unpriced',
    gpu_hours: num('gpu_hours'),
    cost_usd: num('cost_usd'),
    idle_usd: num('idle_usd'),
    held_idle_usd: num('held_idle_usd'),
    underused_usd: num('underused_usd'),
    broken_usd: num('broken_usd'),
    wasted_usd: num('wasted_usd'),
    efficiency_weighted: num('efficiency_weighted'),
    efficiency_hours: num('efficiency_hours'),
  };
}
