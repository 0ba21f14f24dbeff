import {
  type AthenaClient,
  GetQueryExecutionCommand,
  GetQueryResultsCommand,
  type GetQueryResultsCommandOutput,
  StartQueryExecutionCommand,
  StopQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import {
  type FirehoseClient,
  PutRecordBatchCommand,
  type PutRecordBatchCommandOutput,
} from '@aws-sdk/client-firehose';
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
import { TELEMETRY_TABLES, type TelemetryTable } from '../domain/store-columns';
import type { StoreRows, WasteReportRow } from '../domain/types';
import { athenaWasteSql, latestRowsSql, partitionAndTime, stringLiteral } from './athena-sql';
import {
  ATHENA_CATALOG,
  ATHENA_DEFAULT_QUERY_TIMEOUT_MS,
  ATHENA_MAX_RESULTS_PER_PAGE,
  ATHENA_POLL_FIRST_DELAY_MS,
  ATHENA_POLL_MAX_DELAY_MS,
  DEFAULT_ATHENA_DATABASE,
  FIREHOSE_MAX_BYTES_PER_CALL,
  FIREHOSE_MAX_RECORDS_PER_CALL,
  FIREHOSE_PUT_MAX_ATTEMPTS,
  FIREHOSE_RETRY_BASE_DELAY_MS,
} from './constants';
import {
  efaWindowJson,
  eventJson,
  gpuWindowJson,
  type JsonRow,
  type PackedRecord,
  packRecords,
} from './firehose-records';
import {
  compareWasteGroups,
  DEFAULT_RECENT_LIMIT,
  gpuWindowFrom,
  lastSeenFrom,
  lastSeenSql,
  limitProblem,
  nodeJobMeansFrom,
  nodeJobMeansSql,
  wasteGroupRowFrom,
  wasteGroupSql,
} from './store-reads';
import { compareWasteRows, wasteRangeProblem, wasteRowFromText } from './waste-aggregates';

/** A name per telemetry table: Firehose stream names, or Glue table names. */
export type PerTable = { readonly [T in TelemetryTable]: string };

/** Options of {@link AthenaStore}. */
export interface AthenaStoreOptions {
  /** Firehose client (writes). */
  readonly firehose: FirehoseClient;
  /** Athena client, needed by the reads only. */
  readonly athena?: AthenaClient;
  /** Firehose delivery stream per table (each converts JSON to Parquet into `s3://bucket/<table>/yyyy/MM/dd/HH/`). */
  readonly streams: PerTable;
  /** Glue database of the tables. @default 'gpu_sentinel' */
  readonly database?: string;
  /** Glue table per table. @default the table names themselves */
  readonly tables?: Partial<PerTable>;
  /** Athena workgroup the reads run in (its enforced settings encrypt and place the results). @default 'primary' */
  readonly workGroup?: string;
  /** Longest wait for one query, ms. @default 120000 ({@link ATHENA_DEFAULT_QUERY_TIMEOUT_MS}) */
  readonly queryTimeoutMs?: number;
  /** Waits `ms` milliseconds (injected so tests run without real time). @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Random number in [0, 1) for backoff jitter. @default Math.random */
  readonly random?: () => number;
}

/** A query's result: column names and rows of text (`undefined` = SQL NULL), as Athena answers. */
export interface TextResult {
  readonly columns: readonly string[];
  readonly rows: ReadonlyArray<ReadonlyArray<string | undefined>>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The default AWS telemetry store (docs/design.md §4): Amazon Data Firehose → S3 (Parquet, one stream per
 * table, Firehose's `yyyy/MM/dd/HH/` prefixes) → Glue Data Catalog tables with partition
 * projection → Amazon Athena. Open to every account and region, unlike Timestream for LiveAnalytics.
 *
 * Writes: rows become JSON objects packed several to a Firehose record (records are billed in 5 KB
 * steps) and sent with `PutRecordBatch` (≤ 500 records, ≤ 4 MiB per call). A call can answer 200
 * and still fail some records (`FailedPutCount`): exactly those are sent again with exponential
 * backoff and full jitter, up to {@link FIREHOSE_PUT_MAX_ATTEMPTS} attempts. Records still failing
 * then make the write throw {@link StoreUnavailableError} (the agent keeps the batch and sends it
 * again), so nothing is lost; the rows already delivered are stored twice, which every read undoes.
 *
 * Reads: Athena has no upsert, so every query keeps the latest `seq` per row key (see
 * `latestRowsSql`), and every query filters on the hour partition.
 *
 * @example
 * const store = new AthenaStore({
 *   firehose: new FirehoseClient({}),
 *   athena: new AthenaClient({}),
 *   streams: { gpu_windows: 'gs-gpu', efa_windows: 'gs-efa', events: 'gs-events' },
 *   workGroup: 'gpu-sentinel',
 * });
 * await store.write(rows);
 */
export class AthenaStore implements TelemetryStore {
  readonly #firehose: FirehoseClient;
  readonly #athena: AthenaClient | undefined;
  readonly #streams: PerTable;
  readonly #database: string;
  readonly #tables: PerTable;
  readonly #workGroup: string;
  readonly #queryTimeoutMs: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;

  /** @param options - clients, stream, database, table and workgroup names */
  constructor(options: AthenaStoreOptions) {
    this.#firehose = options.firehose;
    this.#athena = options.athena;
    this.#streams = options.streams;
    this.#database = options.database ?? DEFAULT_ATHENA_DATABASE;
    this.#tables = { ...tableNames(), ...options.tables };
    this.#workGroup = options.workGroup ?? 'primary';
    this.#queryTimeoutMs = options.queryTimeoutMs ?? ATHENA_DEFAULT_QUERY_TIMEOUT_MS;
    this.#sleep = options.sleep ?? defaultSleep;
    this.#random = options.random ?? Math.random;
  }

  /**
   * Writes one batch's rows to the three streams.
   *
   * @param rows - the batch's GPU windows, EFA windows and events
   * @returns `written`: rows Firehose took; `rejected`: rows whose JSON alone is over a Firehose
   *   record (1,000 KiB), never sent
   * @throws {StoreUnavailableError} when a call fails as a whole, or records still fail after every
   *   attempt: the caller answers 503 and the agent retries the batch
   */
  async write(rows: StoreRows): Promise<StoreWriteResult> {
    const tables: ReadonlyArray<readonly [TelemetryTable, JsonRow[]]> = [
      ['gpu_windows', rows.gpu.map(gpuWindowJson)],
      ['efa_windows', rows.efa.map(efaWindowJson)],
      ['events', rows.events.map(eventJson)],
    ];
    const rejected: RejectedRow[] = [];
    let written = 0;
    for (const [table, json] of tables) {
      const { records, oversized } = packRecords(json);
      for (const index of oversized) {
        rejected.push({
          table,
          index,
          reason: 'row is over the Firehose record limit of 1,000 KiB; not sent',
        });
      }
      for (const call of callsOf(records)) {
        await this.#put(table, call);
        written += call.reduce((n, r) => n + r.rows.length, 0);
      }
    }
    return { written, rejected };
  }

  /** Sends one call's records, then again exactly the failed ones, with backoff. */
  async #put(table: TelemetryTable, records: readonly PackedRecord[]): Promise<void> {
    const stream = this.#streams[table];
    let pending = records;
    let lastErrors: string[] = [];
    for (let attempt = 1; attempt <= FIREHOSE_PUT_MAX_ATTEMPTS; attempt++) {
      if (attempt > 1) {
        const capMs = FIREHOSE_RETRY_BASE_DELAY_MS * 2 ** (attempt - 2);
        await this.#sleep(Math.round(this.#random() * capMs));
      }
      let answer: PutRecordBatchCommandOutput;
      try {
        answer = await this.#firehose.send(
          new PutRecordBatchCommand({
            DeliveryStreamName: stream,
            Records: pending.map((r) => ({ Data: r.data })),
          }),
        );
      } catch (error) {
        const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        throw new StoreUnavailableError(
          `PutRecordBatch ${stream}`,
          `expected Firehose to accept ${pending.length} records, got ${detail}; answer 503 so the agent retries the batch`,
          { cause: error },
        );
      }
      if ((answer.FailedPutCount ?? 0) === 0) return;
      const responses = answer.RequestResponses ?? [];
      if (responses.length !== pending.length) {
        throw new StoreUnavailableError(
          `PutRecordBatch ${stream}`,
          `expected one RequestResponses entry per record (${pending.length}), got ${responses.length}; cannot tell which records were stored, retry the batch`,
        );
      }
      const failed: PackedRecord[] = [];
      lastErrors = [];
      responses.forEach((r, i) => {
        const p = pending[i];
        if (r.ErrorCode !== undefined && p !== undefined) {
          failed.push(p);
          lastErrors.push(`${r.ErrorCode}: ${r.ErrorMessage ?? ''}`);
        }
      });
      if (failed.length === 0) return;
      pending = failed;
    }
    throw new StoreUnavailableError(
      `PutRecordBatch ${stream}`,
      `expected Firehose to accept every record, ${pending.length} still failed after ${FIREHOSE_PUT_MAX_ATTEMPTS} attempts (${[...new Set(lastErrors)].slice(0, 3).join('; ')}); answer 503 so the agent retries the batch (reads drop the duplicates)`,
    );
  }

  /**
   * Sums the ledger per GPU over windows with `from ≤ time < to` (latest `seq` per window).
   *
   * @param query - the time range
   * @returns one row per instance+GPU, ordered by `wasted_usd` desc, then instance id, then GPU index
   * @throws {StoreQueryError} when no Athena client was given, the range is invalid, or the query fails
   * @throws {StoreUnavailableError} when Athena cannot be reached, or the query does not finish in time
   */
  async queryWaste(query: WasteQuery): Promise<WasteReportRow[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const result = await this.query(athenaWasteSql(this.#tableRef('gpu_windows'), query.from, query.to));
    return textRows(result)
      .map((get) => wasteRowFromText(get))
      .sort(compareWasteRows);
  }

  /**
   * Sums the ledger per group over windows with `from ≤ time < to` (latest `seq` per window).
   *
   * @param query - the time range and the grouping
   * @returns one row per group, most wasted first
   * @throws {StoreQueryError} when the range is invalid or the query fails
   * @throws {StoreUnavailableError} when Athena cannot be reached or the query does not finish in time
   */
  async queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const result = await this.query(wasteGroupSql(`(${this.#latestGpu(query.from, query.to)})`, query.by));
    return textRows(result).map(wasteGroupRowFrom).sort(compareWasteGroups);
  }

  /**
   * The GPU windows of one instance with `from ≤ time < to`, newest first (latest `seq` per window).
   *
   * @param query - instance, range, `limit` (default 1000)
   * @returns the windows with every column the table keeps
   * @throws {StoreQueryError} when the range or limit is invalid or the query fails
   * @throws {StoreUnavailableError} when Athena cannot be reached or the query does not finish in time
   */
  async recentWindows(query: RecentWindowsQuery): Promise<StoredGpuWindow[]> {
    const problem = wasteRangeProblem(query.from, query.to) ?? limitProblem(query.limit);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const latest = this.#latestGpu(query.from, query.to, [
      `instance_id = ${stringLiteral(query.instance_id)}`,
    ]);
    const result = await this.query(
      `SELECT * FROM (${latest}) ORDER BY "time" DESC, gpu_index LIMIT ${query.limit ?? DEFAULT_RECENT_LIMIT}`,
    );
    return textRows(result).map(gpuWindowFrom);
  }

  /**
   * Per instance and job, the straggler metric means of the GPU windows with `from ≤ time < to`
   * (latest `seq` per window): one query for the whole fleet.
   *
   * @param query - the range
   * @returns one entry per instance and job, by instance id then job
   * @throws {StoreQueryError} when the range is invalid or the query fails
   * @throws {StoreUnavailableError} when Athena cannot be reached or the query does not finish in time
   */
  async nodeJobMeans(query: WasteQuery): Promise<NodeJobMeans[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    const result = await this.query(nodeJobMeansSql(`(${this.#latestGpu(query.from, query.to)})`));
    return textRows(result).map(nodeJobMeansFrom);
  }

  /**
   * When each instance last sent a GPU window with `from ≤ time < to`.
   *
   * @param query - the range
   * @returns one entry per instance, by instance id
   * @throws {StoreQueryError} when the range is invalid or the query fails
   * @throws {StoreUnavailableError} when Athena cannot be reached or the query does not finish in time
   */
  async lastSeen(query: WasteQuery): Promise<LastSeen[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) throw new StoreQueryError(problem);
    // No de-duplication needed: a duplicate row has the same time.
    const source = `(SELECT instance_id, instance_type, "time" FROM ${this.#tableRef('gpu_windows')} WHERE ${partitionAndTime(query.from, query.to)})`;
    const result = await this.query(lastSeenSql(source));
    return textRows(result).map(lastSeenFrom);
  }

  /** The latest-seq `gpu_windows` rows of a range. */
  #latestGpu(from: Date, to: Date, where: readonly string[] = []): string {
    return latestRowsSql(this.#tableRef('gpu_windows'), 'gpu_windows', from, to, where);
  }

  /** `"database"."table"` of a telemetry table. */
  #tableRef(table: TelemetryTable): string {
    return `"${this.#database}"."${this.#tables[table]}"`;
  }

  /**
   * Runs one query in the workgroup: `StartQueryExecution`, `GetQueryExecution` until it ends
   * (waits from 200 ms doubling to 2 s), then every page of `GetQueryResults` (1,000 rows each).
   *
   * @param sql - the query (Athena engine v3)
   * @returns the column names and every row as text
   * @throws {StoreQueryError} when no Athena client was given, or Athena fails the query for a reason a retry will not cure
   * @throws {StoreUnavailableError} when a call fails, the query fails for a retryable reason, or it does not finish in time (it is stopped)
   */
  async query(sql: string): Promise<TextResult> {
    const athena = this.#athena;
    if (athena === undefined) {
      throw new StoreQueryError(
        'Expected an `athena` client (AthenaClient) in the AthenaStore options to read, got none; pass one.',
      );
    }
    const call = async <T>(operation: string, send: () => Promise<T>): Promise<T> => {
      try {
        return await send();
      } catch (error) {
        throw new StoreUnavailableError(operation, 'expected Athena to answer; retry later', {
          cause: error,
        });
      }
    };
    const started = await call('StartQueryExecution', () =>
      athena.send(
        new StartQueryExecutionCommand({
          QueryString: sql,
          QueryExecutionContext: { Catalog: ATHENA_CATALOG, Database: this.#database },
          WorkGroup: this.#workGroup,
        }),
      ),
    );
    const id = started.QueryExecutionId;
    if (id === undefined) {
      throw new StoreUnavailableError(
        'StartQueryExecution',
        'expected a QueryExecutionId, got none; retry later',
      );
    }
    let waitedMs = 0;
    let delayMs = ATHENA_POLL_FIRST_DELAY_MS;
    for (;;) {
      const execution = await call('GetQueryExecution', () =>
        athena.send(new GetQueryExecutionCommand({ QueryExecutionId: id })),
      );
      const status = execution.QueryExecution?.Status;
      const state = status?.State;
      if (state === 'SUCCEEDED') break;
      if (state === 'FAILED' || state === 'CANCELLED') {
        const reason = status?.StateChangeReason ?? status?.AthenaError?.ErrorMessage ?? 'no reason given';
        if (status?.AthenaError?.Retryable === true) {
          throw new StoreUnavailableError(
            'GetQueryExecution',
            `query ${id} ${state}: ${reason}; retry later`,
          );
        }
        throw new StoreQueryError(`Expected Athena query ${id} to succeed, it ${state}: ${reason}`);
      }
      if (waitedMs >= this.#queryTimeoutMs) {
        await athena.send(new StopQueryExecutionCommand({ QueryExecutionId: id })).catch(() => undefined);
        throw new StoreUnavailableError(
          'GetQueryExecution',
          `expected query ${id} to finish within ${this.#queryTimeoutMs} ms, it is still ${state ?? 'unknown'}; it was stopped, retry later`,
        );
      }
      await this.#sleep(delayMs);
      waitedMs += delayMs;
      delayMs = Math.min(delayMs * 2, ATHENA_POLL_MAX_DELAY_MS);
    }
    let columns: string[] = [];
    const rows: Array<Array<string | undefined>> = [];
    let nextToken: string | undefined;
    let first = true;
    do {
      const token = nextToken;
      const page: GetQueryResultsCommandOutput = await call('GetQueryResults', () =>
        athena.send(
          new GetQueryResultsCommand({
            QueryExecutionId: id,
            MaxResults: ATHENA_MAX_RESULTS_PER_PAGE,
            ...(token !== undefined ? { NextToken: token } : {}),
          }),
        ),
      );
      if (first) columns = (page.ResultSet?.ResultSetMetadata?.ColumnInfo ?? []).map((c) => c.Name ?? '');
      const data = (page.ResultSet?.Rows ?? []).map((r) => (r.Data ?? []).map((d) => d.VarCharValue));
      // The first row of the first page of a SELECT is the header (Athena API reference, GetQueryResults).
      rows.push(...(first ? data.slice(1) : data));
      first = false;
      nextToken = page.NextToken;
    } while (nextToken !== undefined);
    return { columns, rows };
  }
}

/** Each telemetry table named as itself (the Glue table names the CDK stack creates). */
function tableNames(): PerTable {
  return Object.fromEntries(TELEMETRY_TABLES.map((t) => [t, t])) as unknown as PerTable;
}

/** Splits records into `PutRecordBatch` calls of ≤ 500 records and ≤ 4 MiB. */
function callsOf(records: readonly PackedRecord[]): PackedRecord[][] {
  const calls: PackedRecord[][] = [];
  let call: PackedRecord[] = [];
  let bytes = 0;
  for (const r of records) {
    if (
      call.length === FIREHOSE_MAX_RECORDS_PER_CALL ||
      bytes + r.data.length > FIREHOSE_MAX_BYTES_PER_CALL
    ) {
      calls.push(call);
      call = [];
      bytes = 0;
    }
    call.push(r);
    bytes += r.data.length;
  }
  if (call.length > 0) calls.push(call);
  return calls;
}

/** Rows of a text result as getters by column name. */
function textRows(result: TextResult): Array<(column: string) => string | undefined> {
  const at = new Map(result.columns.map((c, i) => [c, i]));
  return result.rows.map((row) => (column: string) => {
    const i = at.get(column);
    return i === undefined ? undefined : row[i];
  });
}
