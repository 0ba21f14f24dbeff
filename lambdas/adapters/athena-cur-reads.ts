import { type CurColumnMap, type CurCoverage, resolveCurColumns } from '../domain/cur-columns';
import type { CurPricedFleetReads, CurTeamWasteQuery, FleetTeamRow } from '../domain/fleet';
import { StoreQueryError } from '../domain/port-errors';
import type { WasteGroupQuery, WasteGroupRow, WasteQuery } from '../domain/ports';
import { ReportInputError } from '../domain/report-input-error';
import type { WasteReportRow } from '../domain/types';
import { latestRowsSql } from './athena-sql';
import type { TextResult } from './athena-store';
import {
  billingPeriodFilterSql,
  CUR_BILLING_PERIOD_COLUMN,
  curLineItemsSql,
  curRatesSql,
  curSpanSql,
  repricedWindowsSql,
} from './cur-sql';
import { curTeamRowFrom, curTeamWasteSql } from './cur-team-waste';
import { compareWasteGroups, wasteGroupRowFrom, wasteGroupSql } from './store-reads';
import {
  compareWasteRows,
  WASTE_AGGREGATES_SQL,
  wasteRangeProblem,
  wasteRowFromText,
} from './waste-aggregates';

/**
 * The report's reads on Athena with every instance-hour priced from a Cost and Usage Report 2.0
 * (the Glue table of a CUR 2.0 data export, `-c curDatabase=… -c curTable=…`): the same SQL as the
 * Athena store's reads, over its de-duplicated `gpu_windows` joined to the CUR's effective price
 * per instance and hour (`curRatesSql`, `repricedWindowsSql`). Athena reads only the CUR columns
 * named and skips the row groups outside the hours asked (Parquet statistics).
 */

/** Glue database and table names: lower-case letters, digits and `_` (Athena: "Name tables, databases and columns"). */
const GLUE_NAME = /^[a-z0-9_]{1,255}$/;

/**
 * `"database"."table"` of a Glue table, checked.
 *
 * @param database - Glue database, e.g. `cur`
 * @param table - Glue table, e.g. `cur_2_export`
 * @returns the quoted reference
 * @throws {StoreQueryError} naming `curDatabase` or `curTable` when a name is not a Glue name
 */
export function curTableRef(database: string, table: string): string {
  for (const [field, name] of [
    ['curDatabase', database],
    ['curTable', table],
  ] as const) {
    if (!GLUE_NAME.test(name)) {
      throw new StoreQueryError(
        `Expected \`${field}\` to be a Glue name of lower-case letters, digits and _, got \`${name}\`.`,
      );
    }
  }
  return `"${database}"."${table}"`;
}

/** Options of {@link AthenaCurReads}. */
export interface AthenaCurReadsOptions {
  /** Runs a query in the workgroup and reads every page (the Athena store's `query`). */
  readonly query: (sql: string) => Promise<TextResult>;
  /** `"database"."table"` of the store's `gpu_windows`. @default '"gpu_sentinel"."gpu_windows"' */
  readonly gpuTable?: string;
  /** `"database"."table"` of the CUR 2.0 export's table (see {@link curTableRef}). */
  readonly curTable: string;
}

function getters(result: TextResult): Array<(column: string) => string | undefined> {
  const at = new Map(result.columns.map((c, i) => [c, i]));
  return result.rows.map((row) => (column: string) => {
    const i = at.get(column);
    return i === undefined ? undefined : row[i];
  });
}

/** Athena's timestamp text (`2026-03-10 12:00:00.000`, UTC) → ISO 8601. */
function isoOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  return new Date(Date.parse(`${text.replace(' ', 'T').slice(0, 23)}Z`)).toISOString();
}

/**
 * The report reads (`queryWaste`, `queryWasteBy`) priced from a CUR, and what the CUR covered.
 * Use as the report's `ReportStore` when the deployment names a CUR table.
 */
export class AthenaCurReads implements CurPricedFleetReads {
  readonly #query: (sql: string) => Promise<TextResult>;
  readonly #gpuTable: string;
  readonly #curTable: string;
  /** The CUR table's columns, read once (a `LIMIT 0` query) by the first read that needs them. */
  #curColumns: Promise<readonly string[]> | undefined;

  /**
   * @param options - the query runner and the two tables
   */
  constructor(options: AthenaCurReadsOptions) {
    this.#query = options.query;
    this.#gpuTable = options.gpuTable ?? '"gpu_sentinel"."gpu_windows"';
    this.#curTable = options.curTable;
  }

  /** The CUR table's line items as the CUR SQL reads them (`curLineItemsSql`), and whether it is partitioned by billing period. */
  async #curLineItems(): Promise<{ readonly sql: string; readonly partitioned: boolean }> {
    const columns = await this.#checkedCurColumns();
    const partitioned = columns.present.includes(CUR_BILLING_PERIOD_COLUMN);
    return {
      sql: curLineItemsSql(this.#curTable, columns.map, {}, partitioned ? [CUR_BILLING_PERIOD_COLUMN] : []),
      partitioned,
    };
  }

  /** The repriced, de-duplicated GPU windows of a range, as a parenthesised relation. */
  async #windows(from: Date, to: Date): Promise<string> {
    const latest = latestRowsSql(this.#gpuTable, 'gpu_windows', from, to);
    const rates = curRatesSql(
      (await this.#curLineItems()).sql,
      { from: new Date(from.getTime() - 3_600_000), to },
      {
        sql: `SELECT DISTINCT instance_id FROM (${latest})`,
      },
    );
    return `(${repricedWindowsSql(`(${latest})`, rates)})`;
  }

  /**
   * Checks that the CUR table has every column the report reads (a `LIMIT 0` query: no data scanned).
   *
   * @throws {ReportInputError} naming the first missing column
   * @throws whatever the query runner throws
   */
  async checkColumns(): Promise<void> {
    const result = await this.#query(`SELECT * FROM ${this.#curTable} LIMIT 0`);
    resolveCurColumns(result.columns, this.#curTable);
  }

  /**
   * Per-GPU ledger sums over `from ≤ time < to`, each window priced from the CUR where it has
   * the instance-hour (`price_source` `cur` or `cur:spot`), as stored elsewhere.
   *
   * @param query - the range
   * @returns one row per instance+GPU, most wasted first
   * @throws {StoreQueryError} when the range is invalid
   */
  async queryWaste(query: WasteQuery): Promise<WasteReportRow[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const sql = `SELECT instance_id, gpu_index,
  ${WASTE_AGGREGATES_SQL}
FROM ${await this.#windows(query.from, query.to)}
GROUP BY instance_id, gpu_index`;
    return getters(await this.#query(sql))
      .map((get) => wasteRowFromText(get))
      .sort(compareWasteRows);
  }

  /**
   * Grouped ledger sums over `from ≤ time < to`, priced like {@link queryWaste}.
   *
   * @param query - the range and the grouping
   * @returns one row per group, most wasted first
   * @throws {StoreQueryError} when the range is invalid
   */
  async queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const result = await this.#query(wasteGroupSql(await this.#windows(query.from, query.to), query.by));
    return getters(result).map(wasteGroupRowFrom).sort(compareWasteGroups);
  }

  /**
   * The fleet evaluator's team waste at CUR rates (see `CurPricedFleetReads`), in one Athena query
   * (and, the first time, a `LIMIT 0` query for the CUR table's columns, which scans no data):
   * the de-duplicated `gpu_windows` of the span, each instance's newest CUR rate of `curFrom ≤ hour <
   * to` (`latestCurRatesSql`: only the CUR columns named, only those days' row groups, only the
   * billing-period partitions of those days when the table has `billing_period`, only the
   * instances of the span), the windows repriced (`repricedWindowsSql`, `latest`) and summed per team
   * with how they were priced.
   *
   * @param query - the span and the CUR hours searched
   * @returns one row per team, most wasted first
   * @throws {StoreQueryError} when the span or the CUR hours are not a valid range, or Athena refuses the query
   * @throws {StoreUnavailableError} when Athena cannot answer
   */
  async teamWasteAtCurRates(query: CurTeamWasteQuery): Promise<FleetTeamRow[]> {
    const problem = wasteRangeProblem(query.from, query.to) ?? wasteRangeProblem(query.curFrom, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const hours = { from: query.curFrom, to: query.to };
    const cur = await this.#curLineItems();
    const partitioned = cur.partitioned;
    const latest = latestRowsSql(this.#gpuTable, 'gpu_windows', query.from, query.to);
    const sql = curTeamWasteSql(
      `(${latest})`,
      cur.sql,
      hours,
      partitioned ? [billingPeriodFilterSql(hours)] : [],
    );
    return getters(await this.#query(sql))
      .map(curTeamRowFrom)
      .sort(compareWasteGroups);
  }

  /**
   * The CUR table's columns (lower case), read with a `LIMIT 0` query (no data scanned) the first
   * time and kept (a failed read is tried again next time), and checked to hold every column the
   * reads need.
   *
   * @throws {StoreQueryError} naming the first missing column
   * @throws whatever the query runner throws
   */
  async #checkedCurColumns(): Promise<{ readonly present: readonly string[]; readonly map: CurColumnMap }> {
    this.#curColumns ??= this.#query(`SELECT * FROM ${this.#curTable} LIMIT 0`).then((r) =>
      r.columns.map((c) => c.toLowerCase()),
    );
    let columns: readonly string[];
    try {
      columns = await this.#curColumns;
    } catch (error) {
      this.#curColumns = undefined;
      throw error;
    }
    try {
      return { present: columns, map: resolveCurColumns(columns, this.#curTable) };
    } catch (error) {
      if (error instanceof ReportInputError) throw new StoreQueryError(error.message, { cause: error });
      throw error;
    }
  }

  /**
   * How many instance-hours of `from ≤ time < to` the CUR priced, and the span of its instance-hours.
   *
   * @param range - the report range
   * @returns the coverage, `source` the CUR table
   * @throws {StoreQueryError} when the range is invalid
   */
  async coverage(range: WasteQuery): Promise<CurCoverage> {
    const problem = wasteRangeProblem(range.from, range.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const hours = `SELECT count(DISTINCT CAST(instance_id AS VARCHAR) || '@' || CAST(date_trunc('hour', "start") AS VARCHAR)) AS instance_hours,
  count(DISTINCT CASE WHEN price_source LIKE 'cur%' THEN CAST(instance_id AS VARCHAR) || '@' || CAST(date_trunc('hour', "start") AS VARCHAR) END) AS covered
FROM ${await this.#windows(range.from, range.to)}`;
    const [h] = getters(await this.#query(hours));
    const [span] = getters(await this.#query(curSpanSql((await this.#curLineItems()).sql)));
    const usageFrom = isoOf(span?.('usage_from'));
    const usageTo = isoOf(span?.('usage_to'));
    return {
      source: this.#curTable,
      instance_hours: Number(h?.('instance_hours') ?? 0),
      covered_instance_hours: Number(h?.('covered') ?? 0),
      ...(usageFrom !== undefined && usageTo !== undefined
        ? { usage_from: usageFrom, usage_to: usageTo }
        : {}),
    };
  }
}
