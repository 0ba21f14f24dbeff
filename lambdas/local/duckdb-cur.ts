import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { stringLiteral } from '../adapters/athena-sql';
import { curLineItemsSql, curRatesSql, curSpanSql, repricedWindowsSql } from '../adapters/cur-sql';
import { type CurColumn, type CurCoverage, curColumnName, resolveCurColumns } from '../domain/cur-columns';
import { ReportInputError } from '../domain/report-input-error';
import type { DuckDbSession } from './duckdb-session';

/**
 * `gpu-sentinel report --cur PATH`: a Cost and Usage Report 2.0 read by DuckDB straight from its
 * files (Parquet, or CSV, gzip allowed; one file or the folder of a data export), and the local
 * store's GPU windows repriced from it for the rest of the session: a temporary view named
 * `gpu_windows` shadows the table, so every report read prices from the bill (docs/finance.md,
 * "Reconciling with the bill"). Only the CUR's needed columns are read, and its line items are
 * filtered by instance and hour in the scan (DuckDB pushes both into the Parquet reader).
 */

/** File names a CUR export writes: Parquet, or CSV (gzip-compressed or not). */
const PARQUET = /\.parquet$/i;
const CSV = /\.csv(\.gz)?$/i;

async function filesUnder(folder: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(join(entry.parentPath, entry.name));
  }
  return out.sort();
}

/**
 * The DuckDB relation reading a CUR: `read_parquet` over its Parquet files, or `read_csv` over its
 * CSV files (gzip by extension), columns matched by name across files.
 *
 * @param path - a CUR file, or a folder holding one export's files (searched recursively)
 * @returns the relation, e.g. `read_parquet(['/cur/a.parquet'], union_by_name = true)`
 * @throws {ReportInputError} naming `--cur` when the path does not exist, or holds no Parquet or CSV file
 */
export async function curRelation(path: string): Promise<string> {
  let files: string[];
  try {
    files = (await stat(path)).isDirectory() ? await filesUnder(path) : [path];
  } catch {
    throw new ReportInputError(
      '--cur',
      path,
      `Expected --cur to name a CUR file or folder, got ${path}, which does not exist.`,
    );
  }
  const parquet = files.filter((f) => PARQUET.test(f));
  const csv = files.filter((f) => CSV.test(f));
  const list = (fs: string[]) => `[${fs.map(stringLiteral).join(', ')}]`;
  if (parquet.length > 0) return `read_parquet(${list(parquet)}, union_by_name = true)`;
  if (csv.length > 0) return `read_csv(${list(csv)}, header = true, union_by_name = true)`;
  throw new ReportInputError(
    '--cur',
    path,
    `Expected --cur to hold a Cost and Usage Report 2.0 as .parquet, .csv or .csv.gz files, and ${path} has none.`,
  );
}

/**
 * The CUR's line items as the CUR SQL reads them (`curLineItemsSql`): its columns found in any of
 * the CUR's namings, cast from the types DuckDB gave them (a CSV's all-empty column is text, a
 * time with its `Z` is a `TIMESTAMP WITH TIME ZONE`). Run inside the session's `serial`.
 *
 * @param session - the store session
 * @param relation - the CUR relation ({@link curRelation})
 * @param path - the CUR file or folder, named in errors
 * @returns the parenthesised relation of its line items
 * @throws {ReportInputError} naming the first missing column when it is not a CUR
 */
export async function curLineItems(session: DuckDbSession, relation: string, path: string): Promise<string> {
  const described = await session.rows(`DESCRIBE SELECT * FROM ${relation}`);
  const columns = resolveCurColumns(
    described.map((r) => String(r.column_name)),
    path,
  );
  const types: Partial<Record<CurColumn, string>> = {};
  for (const r of described) {
    const name = curColumnName(String(r.column_name)) as CurColumn;
    if (columns[name] === String(r.column_name)) types[name] = String(r.column_type);
  }
  return curLineItemsSql(relation, columns, types);
}

/** `TIMESTAMP` text DuckDB returns → ISO 8601 UTC. */
function iso(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  const text = String(value);
  return new Date(
    Date.parse(text.endsWith('Z') || text.includes('+') ? text : `${text.replace(' ', 'T')}Z`),
  ).toISOString();
}

/**
 * Reprices the session's GPU windows from a CUR for the rest of the session: checks the CUR's
 * columns, computes the effective price of each instance-hour of the range for the instances the
 * store holds (`curRatesSql`), and shadows `gpu_windows` with a temporary view of the repriced
 * windows (`repricedWindowsSql`). Writes nothing to the store (works read-only).
 *
 * @param session - the open store session (`DuckDbStore.session`)
 * @param path - the CUR file or folder
 * @param range - the report range, `from` inclusive, `to` exclusive (window end times)
 * @returns how many of the range's instance-hours the CUR priced, and its span
 * @throws {ReportInputError} naming the path or the first missing column when it is not a CUR
 * @throws whatever DuckDB throws reading the files
 */
export async function applyCurPrices(
  session: DuckDbSession,
  path: string,
  range: { readonly from: Date; readonly to: Date },
): Promise<CurCoverage> {
  const relation = await curRelation(path);
  return session.serial(async () => {
    await session.exec("SET TimeZone = 'UTC'");
    const cur = await curLineItems(session, relation, path);
    const [catalog] = await session.rows('SELECT current_database() AS name');
    const table = `"${String(catalog?.name).replaceAll('"', '""')}".main.gpu_windows`;
    const inRange = `"time" >= ${stringLiteral(range.from.toISOString())}::TIMESTAMPTZ AND "time" < ${stringLiteral(range.to.toISOString())}::TIMESTAMPTZ`;
    const ids = (await session.rows(`SELECT DISTINCT instance_id FROM ${table} WHERE ${inRange}`)).map((r) =>
      String(r.instance_id),
    );
    // A window ending in the range may have started up to an hour before it.
    const hoursFrom = new Date(range.from.getTime() - 3_600_000);
    await session.exec(
      `CREATE OR REPLACE TEMP TABLE cur_rates AS ${curRatesSql(cur, { from: hoursFrom, to: range.to }, ids)}`,
    );
    await session.exec(
      `CREATE OR REPLACE TEMP VIEW gpu_windows AS ${repricedWindowsSql(table, 'SELECT * FROM cur_rates')}`,
    );
    // Covered: the hours the repriced view priced from the CUR (as the Athena reads count them).
    const [hours] = await session.rows(
      `SELECT count(DISTINCT (instance_id, date_trunc('hour', "start"))) AS instance_hours,
  count(DISTINCT CASE WHEN price_source LIKE 'cur%' THEN (instance_id, date_trunc('hour', "start")) END) AS covered
FROM temp.main.gpu_windows
WHERE ${inRange}`,
    );
    const [span] = await session.rows(curSpanSql(cur));
    const usageFrom = iso(span?.usage_from);
    const usageTo = iso(span?.usage_to);
    return {
      source: path,
      instance_hours: Number(hours?.instance_hours ?? 0),
      covered_instance_hours: Number(hours?.covered ?? 0),
      ...(usageFrom !== undefined && usageTo !== undefined
        ? { usage_from: usageFrom, usage_to: usageTo }
        : {}),
    };
  });
}
