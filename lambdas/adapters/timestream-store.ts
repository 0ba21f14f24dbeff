import {
  type Datum,
  QueryCommand,
  type QueryCommandOutput,
  type TimestreamQueryClient,
} from '@aws-sdk/client-timestream-query';
import {
  type _Record,
  RejectedRecordsException,
  type TimestreamWriteClient,
  WriteRecordsCommand,
} from '@aws-sdk/client-timestream-write';
import { LEDGER_FIELD_NAMES } from '../domain/measure-types';
import { StoreQueryError, StoreUnavailableError } from '../domain/port-errors';
import type {
  LastSeen,
  NodeJobMeans,
  RecentWindowsQuery,
  RejectedRow,
  StoredGpuWindow,
  StoreWriteResult,
  TelemetryStore,
  WasteGroupQuery,
  WasteGroupRow,
  WasteQuery,
} from '../domain/ports';
import { STRAGGLER_METRICS } from '../domain/rules/straggler';
import { type StoreColumnType, TELEMETRY_TABLE_COLUMNS } from '../domain/store-columns';
import type { StoreRows, WasteReportRow } from '../domain/types';
import { DEFAULT_TIMESTREAM_TABLES, GPU_MEASURE_NAME, TIMESTREAM_MAX_RECORDS_PER_WRITE } from './constants';
import {
  type ColumnGetter,
  compareWasteGroups,
  DEFAULT_RECENT_LIMIT,
  gpuWindowFrom,
  lastSeenFrom,
  lastSeenSql,
  limitProblem,
  nodeJobMeansFrom,
  nodeJobMeansSql,
  wasteGroupColumn,
  wasteGroupRowFrom,
  wasteGroupSql,
} from './store-reads';
import { efaWindowRecord, eventRecord, gpuWindowRecord } from './timestream-records';
import {
  compareWasteRows,
  WASTE_AGGREGATES_SQL,
  wasteRangeProblem,
  wasteRowFromText,
} from './waste-aggregates';

/** Timestream table names of the three stored tables. */
export interface TimestreamTables {
  /** @default 'gpu_windows' */
  readonly gpu: string;
  /** @default 'efa_windows' */
  readonly efa: string;
  /** @default 'events' */
  readonly events: string;
}

/** Options of {@link TimestreamStore}. */
export interface TimestreamStoreOptions {
  /** Write client (endpoint discovery is handled by the SDK). */
  readonly client: TimestreamWriteClient;
  /** Query client, needed by `queryWaste` only. */
  readonly queryClient?: TimestreamQueryClient;
  /** Timestream database name, e.g. `gpu_sentinel`. */
  readonly database: string;
  /** Table names. @default { gpu: 'gpu_windows', efa: 'efa_windows', events: 'events' } */
  readonly tables?: Partial<TimestreamTables>;
}

type TableKey = RejectedRow['table'];

/** Columns the per-GPU waste read names besides the keys: the latest tags and every ledger field. */
const WASTE_READ_COLUMNS: readonly string[] = [
  'team',
  'job',
  'region',
  'az',
  'namespace',
  ...LEDGER_FIELD_NAMES,
];

/** Each `gpu_windows` column's type, by name. */
const GPU_COLUMN_TYPES: ReadonlyMap<string, StoreColumnType> = new Map(TELEMETRY_TABLE_COLUMNS.gpu_windows);

/** Store column type → Timestream SQL type of a typed NULL (dimensions are all varchar there). */
const TIMESTREAM_SQL_TYPES: { readonly [T in StoreColumnType]: string } = {
  TIMESTAMP: 'timestamp',
  VARCHAR: 'varchar',
  INTEGER: 'varchar',
  BIGINT: 'bigint',
  DOUBLE: 'double',
  BOOLEAN: 'boolean',
  MAP_VARCHAR_BIGINT: 'varchar',
};

/** A record with where it came from, so a rejection maps back to a row. */
interface Located {
  readonly table: TableKey;
  readonly index: number;
  readonly seq: number;
  readonly record: _Record;
}

/**
 * The telemetry store on Amazon Timestream for LiveAnalytics (docs/design.md §4).
 *
 * Writes: one multi-measure record per row, ≤ 100 records per `WriteRecords` (Timestream limit),
 * `Version` = batch `seq`, so a retried batch overwrites itself. Rejected records
 * (`RejectedRecordsException`) come back in `rejected` with their row index and reason; a version
 * conflict whose `ExistingVersion ≥ seq` means the same or a newer batch is already stored, so the
 * row counts as written (idempotent duplicate). If a later call of a batch fails as a whole, the
 * error is thrown after earlier calls succeeded; the agent retries the whole batch, and the records
 * already stored are overwritten by themselves (same version, same values).
 *
 * @example
 * const store = new TimestreamStore({ client: new TimestreamWriteClient({}), database: 'gpu_sentinel' });
 * const { written, rejected } = await store.write(rows);
 */
export class TimestreamStore implements TelemetryStore {
  readonly #client: TimestreamWriteClient;
  readonly #queryClient: TimestreamQueryClient | undefined;
  readonly #database: string;
  readonly #tables: TimestreamTables;
  /** The GPU table's columns as last read (see `#missingGpuColumns`). */
  #gpuColumns: ReadonlySet<string> | undefined;

  /**
   * @param options - clients, database and table names
   */
  constructor(options: TimestreamStoreOptions) {
    this.#client = options.client;
    this.#queryClient = options.queryClient;
    this.#database = options.database;
    this.#tables = { ...DEFAULT_TIMESTREAM_TABLES, ...options.tables };
  }

  /**
   * Writes one batch's rows to the three tables, in calls of ≤ 100 records.
   *
   * @param rows - the batch's GPU windows, EFA windows and events
   * @returns `written`: rows stored (idempotent duplicates included); `rejected`: rows Timestream
   *   refused, with table, index into that table's array of `rows`, and Timestream's reason
   * @throws {StoreUnavailableError} when a call fails as a whole (throttling, 5xx, network,
   *   validation): the caller answers 503 and the agent retries the batch
   */
  async write(rows: StoreRows): Promise<StoreWriteResult> {
    const rejected: RejectedRow[] = [];
    let written = 0;
    const groups: ReadonlyArray<readonly [TableKey, string, Located[]]> = [
      [
        'gpu_windows',
        this.#tables.gpu,
        rows.gpu.map((r, index) => ({ table: 'gpu_windows', index, seq: r.seq, record: gpuWindowRecord(r) })),
      ],
      [
        'efa_windows',
        this.#tables.efa,
        rows.efa.map((r, index) => ({ table: 'efa_windows', index, seq: r.seq, record: efaWindowRecord(r) })),
      ],
      [
        'events',
        this.#tables.events,
        rows.events.map((r, index) => ({ table: 'events', index, seq: r.seq, record: eventRecord(r) })),
      ],
    ];
    for (const [table, tableName, located] of groups) {
      const sendable: Located[] = [];
      for (const l of located) {
        if ((l.record.MeasureValues ?? []).length === 0) {
          rejected.push({
            table,
            index: l.index,
            reason: 'record has no measure values (an EFA window without counters); not sent',
          });
        } else {
          sendable.push(l);
        }
      }
      for (let i = 0; i < sendable.length; i += TIMESTREAM_MAX_RECORDS_PER_WRITE) {
        const chunk = sendable.slice(i, i + TIMESTREAM_MAX_RECORDS_PER_WRITE);
        const result = await this.#writeChunk(tableName, chunk);
        written += result.written;
        rejected.push(...result.rejected);
      }
    }
    return { written, rejected };
  }

  async #writeChunk(tableName: string, chunk: readonly Located[]): Promise<StoreWriteResult> {
    try {
      await this.#client.send(
        new WriteRecordsCommand({
          DatabaseName: this.#database,
          TableName: tableName,
          Records: chunk.map((l) => l.record),
        }),
      );
      return { written: chunk.length, rejected: [] };
    } catch (error) {
      if (error instanceof RejectedRecordsException && Array.isArray(error.RejectedRecords)) {
        const rejected: RejectedRow[] = [];
        for (const r of error.RejectedRecords) {
          const source = r.RecordIndex === undefined ? undefined : chunk[r.RecordIndex];
          if (source === undefined) {
            throw new StoreUnavailableError(
              `WriteRecords ${tableName}`,
              `expected RejectedRecords[].RecordIndex within 0..${chunk.length - 1}, got ${String(r.RecordIndex)}; cannot tell which rows were stored, retry the batch`,
              { cause: error },
            );
          }
          if (r.ExistingVersion !== undefined && r.ExistingVersion >= source.seq) continue;
          rejected.push({
            table: source.table,
            index: source.index,
            reason: r.Reason ?? 'rejected without a reason',
          });
        }
        return { written: chunk.length - rejected.length, rejected };
      }
      const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new StoreUnavailableError(
        `WriteRecords ${tableName}`,
        `expected Timestream to accept ${chunk.length} records, got ${detail}; answer 503 so the agent retries the batch`,
        { cause: error },
      );
    }
  }

  /**
   * Sums the ledger per GPU over windows with `from ≤ time < to` (Timestream SQL, all result pages).
   *
   * @param query - the time range
   * @returns one row per instance+GPU, ordered by `wasted_usd` desc, then instance id, then GPU index
   * @throws {StoreQueryError} when no `queryClient` was given, or the range is empty or invalid
   * @throws {StoreUnavailableError} when Timestream Query fails
   */
  async queryWaste(query: WasteQuery): Promise<WasteReportRow[]> {
    const missing = await this.#missingGpuColumns(query, WASTE_READ_COLUMNS);
    const rows = await this.#query(query, wasteSql(this.#gpuSource(query.from, query.to, missing)));
    return rows.map(wasteRowFromText).sort(compareWasteRows);
  }

  /**
   * Sums the ledger per group over windows with `from ≤ time < to`.
   *
   * @param query - the range and the grouping
   * @returns one row per group, most wasted first
   * @throws {StoreQueryError} when no `queryClient` was given, or the range is invalid
   * @throws {StoreUnavailableError} when Timestream Query fails
   */
  async queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]> {
    const needed = [wasteGroupColumn(query.by), ...LEDGER_FIELD_NAMES];
    const missing = await this.#missingGpuColumns(query, needed);
    const rows = await this.#query(
      query,
      wasteGroupSql(this.#gpuSource(query.from, query.to, missing), query.by),
    );
    return rows.map(wasteGroupRowFrom).sort(compareWasteGroups);
  }

  /**
   * Which of `needed` the GPU table's schema lacks. Timestream's schema grows as records bring new
   * dimensions and measures, and a query naming a column no record ever had fails; a fleet without
   * Kubernetes never writes `namespace`, one without `team` tags never writes `team`. Read from the
   * `ColumnInfo` of a `SELECT *` that matches no row; kept once every needed column exists, asked
   * again otherwise (a column may appear with the next batch).
   */
  async #missingGpuColumns(range: WasteQuery, needed: readonly string[]): Promise<string[]> {
    const missing = (known: ReadonlySet<string>) => needed.filter((c) => !known.has(c));
    if (this.#gpuColumns !== undefined && missing(this.#gpuColumns).length === 0) return [];
    if (this.#queryClient === undefined) return [];
    const problem = wasteRangeProblem(range.from, range.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    let page: QueryCommandOutput;
    try {
      page = await this.#queryClient.send(
        new QueryCommand({
          QueryString: `SELECT * FROM "${this.#database}"."${this.#tables.gpu}" WHERE time < from_milliseconds(0)`,
        }),
      );
    } catch (error) {
      throw new StoreUnavailableError(
        'Query gpu_windows columns',
        'expected Timestream Query to answer; retry later',
        {
          cause: error,
        },
      );
    }
    this.#gpuColumns = new Set((page.ColumnInfo ?? []).map((c) => c.Name ?? ''));
    return missing(this.#gpuColumns);
  }

  /**
   * The GPU windows of one instance with `from ≤ time < to`, newest first. Timestream keeps no
   * batch id, seq, region or GPU name, so those are absent; `start` is `time − window_s`.
   *
   * @param query - instance, range, `limit` (default 1000)
   * @returns the windows
   * @throws {StoreQueryError} when no `queryClient` was given, or the range or limit is invalid
   * @throws {StoreUnavailableError} when Timestream Query fails
   */
  async recentWindows(query: RecentWindowsQuery): Promise<StoredGpuWindow[]> {
    const problem = limitProblem(query.limit);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const sql = `SELECT * FROM ${this.#gpuSource(query.from, query.to)} AS w
WHERE instance_id = '${query.instance_id.replaceAll("'", "''")}'
ORDER BY time DESC, CAST(gpu_index AS BIGINT)
LIMIT ${query.limit ?? DEFAULT_RECENT_LIMIT}`;
    return (await this.#query(query, sql)).map(gpuWindowFrom);
  }

  /**
   * Per instance and job, the straggler metric means of the GPU windows with `from ≤ time < to`:
   * one query for the whole fleet. A metric (or `job`) no record ever had reads as absent.
   *
   * @param query - the range
   * @returns one entry per instance and job, by instance id then job
   * @throws {StoreQueryError} when no `queryClient` was given, or the range is invalid
   * @throws {StoreUnavailableError} when Timestream Query fails
   */
  async nodeJobMeans(query: WasteQuery): Promise<NodeJobMeans[]> {
    const missing = await this.#missingGpuColumns(query, ['job', ...STRAGGLER_METRICS]);
    const rows = await this.#query(query, nodeJobMeansSql(this.#gpuSource(query.from, query.to, missing)));
    return rows.map(nodeJobMeansFrom);
  }

  /**
   * When each instance last sent a GPU window with `from ≤ time < to`.
   *
   * @param query - the range
   * @returns one entry per instance, by instance id
   * @throws {StoreQueryError} when no `queryClient` was given, or the range is invalid
   * @throws {StoreUnavailableError} when Timestream Query fails
   */
  async lastSeen(query: WasteQuery): Promise<LastSeen[]> {
    return (await this.#query(query, lastSeenSql(this.#gpuSource(query.from, query.to)))).map(lastSeenFrom);
  }

  /**
   * The `gpu` records of `gpu_windows` in a range, as a subquery; each of `missing` (columns the
   * table's schema lacks) added as a typed NULL, so a query naming it reads "no value" instead of failing.
   */
  #gpuSource(from: Date, to: Date, missing: readonly string[] = []): string {
    const nulls = missing.map(
      (c) => `, CAST(NULL AS ${TIMESTREAM_SQL_TYPES[GPU_COLUMN_TYPES.get(c) ?? 'VARCHAR']}) AS ${c}`,
    );
    return `(SELECT *${nulls.join('')} FROM "${this.#database}"."${this.#tables.gpu}"
  WHERE measure_name = '${GPU_MEASURE_NAME}'
    AND time >= from_iso8601_timestamp('${from.toISOString()}')
    AND time < from_iso8601_timestamp('${to.toISOString()}'))`;
  }

  /** Runs a query over a checked range and reads every result page; rows as getters by column name. */
  async #query(range: WasteQuery, sql: string): Promise<ColumnGetter[]> {
    if (this.#queryClient === undefined) {
      throw new StoreQueryError(
        'Expected a `queryClient` (TimestreamQueryClient) in the TimestreamStore options to read, got none; pass one.',
      );
    }
    const problem = wasteRangeProblem(range.from, range.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const out: ColumnGetter[] = [];
    let nextToken: string | undefined;
    do {
      let page: QueryCommandOutput;
      try {
        page = await this.#queryClient.send(
          new QueryCommand({ QueryString: sql, ...(nextToken ? { NextToken: nextToken } : {}) }),
        );
      } catch (error) {
        throw new StoreUnavailableError(
          'Query gpu_windows',
          'expected Timestream Query to answer; retry later',
          {
            cause: error,
          },
        );
      }
      const names = (page.ColumnInfo ?? []).map((c) => c.Name ?? '');
      for (const row of page.Rows ?? []) out.push(textGetter(names, row.Data ?? []));
      nextToken = page.NextToken;
    } while (nextToken);
    return out;
  }
}

/**
 * The waste report SQL for Timestream: ledger sums per instance and GPU.
 *
 * @param source - the `gpu` records of the range, as a subquery (optional columns the table lacks
 *   added as NULL)
 * @returns the query string
 */
export function wasteSql(source: string): string {
  return `SELECT instance_id, gpu_index,
  ${WASTE_AGGREGATES_SQL}
FROM ${source} AS w
GROUP BY instance_id, gpu_index`;
}

/** One result row → its scalar values by column name (`undefined` for NULL). */
function textGetter(names: readonly string[], data: readonly Datum[]): ColumnGetter {
  const v = new Map<string, string | undefined>();
  names.forEach((n, i) => {
    const d = data[i];
    v.set(n, d === undefined || d.NullValue ? undefined : d.ScalarValue);
  });
  return (n) => v.get(n);
}
