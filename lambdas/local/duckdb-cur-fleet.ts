import { stringLiteral } from '../adapters/athena-sql';
import { curTeamRowFrom, curTeamWasteSql } from '../adapters/cur-team-waste';
import { compareWasteGroups } from '../adapters/store-reads';
import { wasteRangeProblem } from '../adapters/waste-aggregates';
import type { CurPricedFleetReads, CurTeamWasteQuery, FleetTeamRow } from '../domain/fleet';
import { StoreQueryError } from '../domain/port-errors';
import { ReportInputError } from '../domain/report-input-error';
import { curLineItems, curRelation } from './duckdb-cur';
import type { DuckDbSession } from './duckdb-session';

/**
 * `gpu-sentinel local --cur PATH`: the local fleet evaluator's team waste priced from a Cost and
 * Usage Report 2.0 read by DuckDB straight from its files (the same files `report --cur` takes),
 * with the SQL the fleet evaluator runs on Athena (`curTeamWasteSql`): each instance of the span at
 * the effective rate of its newest instance-hour in the CUR since `curFrom`. Reads only the CUR's
 * needed columns, and only the line items of those days and instances (DuckDB pushes the filters
 * into the Parquet scan). Writes nothing.
 */
export class DuckDbCurFleetReads implements CurPricedFleetReads {
  readonly #session: DuckDbSession;
  readonly #path: string;

  /**
   * @param session - the local store's session (`DuckDbStore.session`)
   * @param path - a CUR file, or the folder of an export (Parquet, or CSV with or without gzip)
   */
  constructor(session: DuckDbSession, path: string) {
    this.#session = session;
    this.#path = path;
  }

  /**
   * See `CurPricedFleetReads.teamWasteAtCurRates`.
   *
   * @throws {StoreQueryError} when a range is invalid, the path holds no CUR, a needed column is
   *   missing (naming it), or DuckDB cannot read the files
   */
  async teamWasteAtCurRates(query: CurTeamWasteQuery): Promise<FleetTeamRow[]> {
    const problem = wasteRangeProblem(query.from, query.to) ?? wasteRangeProblem(query.curFrom, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    try {
      const relation = await curRelation(this.#path);
      return await this.#session.serial(async () => {
        const cur = await curLineItems(this.#session, relation, this.#path);
        const [catalog] = await this.#session.rows('SELECT current_database() AS name');
        const table = `"${String(catalog?.name).replaceAll('"', '""')}".main.gpu_windows`;
        const windows = `(SELECT * FROM ${table} WHERE "time" >= ${stringLiteral(query.from.toISOString())}::TIMESTAMPTZ AND "time" < ${stringLiteral(query.to.toISOString())}::TIMESTAMPTZ)`;
        const rows = await this.#session.rows(
          curTeamWasteSql(windows, cur, { from: query.curFrom, to: query.to }),
        );
        return rows.map((r) => curTeamRowFrom((c) => r[c])).sort(compareWasteGroups);
      });
    } catch (error) {
      if (error instanceof StoreQueryError) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new StoreQueryError(
        error instanceof ReportInputError
          ? message
          : `Expected DuckDB to read the CUR at ${this.#path}, it failed: ${message}`,
        { cause: error },
      );
    }
  }
}
