import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AthenaClient,
  GetQueryExecutionCommand,
  GetQueryResultsCommand,
  StartQueryExecutionCommand,
  StopQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import { FirehoseClient, PutRecordBatchCommand } from '@aws-sdk/client-firehose';
import { DuckDBInstance } from '@duckdb/node-api';
import { mockClient } from 'aws-sdk-client-mock';
import { datehourOf } from '../../../lambdas/adapters/athena-sql';
import type { PerTable } from '../../../lambdas/adapters/athena-store';
import { firehoseJsonKey } from '../../../lambdas/domain/firehose-json-keys';
import {
  type StoreColumnType,
  TELEMETRY_TABLE_COLUMNS,
  TELEMETRY_TABLES,
  type TelemetryTable,
} from '../../../lambdas/domain/store-columns';
import { firehoseRowColumns } from './firehose-rows';

/** Column type → the DuckDB type Firehose's Parquet column reads back as. */
export const DUCKDB_TYPES: { readonly [T in StoreColumnType]: string } = {
  TIMESTAMP: 'TIMESTAMP',
  VARCHAR: 'VARCHAR',
  INTEGER: 'INTEGER',
  BIGINT: 'BIGINT',
  DOUBLE: 'DOUBLE',
  BOOLEAN: 'BOOLEAN',
  MAP_VARCHAR_BIGINT: 'MAP(VARCHAR, BIGINT)',
};

/**
 * The DuckDB query that reads a file of Firehose JSON rows of `table` as its delivery stream does:
 * each column under its JSON key (the SerDe's `ColumnToJsonKeyMappings`), a TIMESTAMP from an ISO
 * text or from a number of epoch milliseconds (as the OpenX JSON SerDe reads both).
 *
 * @param table - the rows' table
 * @param jsonPath - a newline-delimited file of the rows the Athena store sends
 * @returns `SELECT <every column, by name> FROM read_json(…)`
 */
export function firehoseReadJsonSql(table: TelemetryTable, jsonPath: string): string {
  const columns = TELEMETRY_TABLE_COLUMNS[table]
    .map(([n, t]) => `'${firehoseJsonKey(table, n)}': '${t === 'TIMESTAMP' ? 'VARCHAR' : DUCKDB_TYPES[t]}'`)
    .join(', ');
  const select = TELEMETRY_TABLE_COLUMNS[table]
    .map(([n, t]) => {
      const key = `"${firehoseJsonKey(table, n)}"`;
      const value =
        t === 'TIMESTAMP'
          ? `CASE WHEN regexp_full_match(${key}, '[0-9]+') THEN epoch_ms(CAST(${key} AS BIGINT)) ELSE CAST(${key} AS TIMESTAMP) END`
          : key;
      return `${value} AS "${n}"`;
    })
    .join(', ');
  return `SELECT ${select} FROM read_json('${jsonPath}', format = 'newline_delimited', columns = {${columns}})`;
}

/** The delivery stream names the fake knows, one per table. */
export const FAKE_STREAMS: PerTable = {
  gpu_windows: 'gpu-sentinel-gpu-windows',
  efa_windows: 'gpu-sentinel-efa-windows',
  events: 'gpu-sentinel-events',
};

/** What {@link fakeAthenaStore} gives a test. */
export interface FakeAthena {
  readonly firehose: FirehoseClient;
  readonly athena: AthenaClient;
  /** Every SQL text StartQueryExecution received, in order. */
  readonly queries: string[];
  /** Parquet files written, relative to the bucket root (`<table>/yyyy/MM/dd/HH/<id>.parquet`). */
  readonly files: string[];
  /** Removes the bucket folder and closes DuckDB. */
  close(): Promise<void>;
}

/** `{a=1, b=2}`, as Athena prints a map. */
function athenaText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Date) return value.toISOString().slice(0, 23).replace('T', ' ');
  if (Array.isArray(value)) {
    return `{${value.map((e) => `${String((e as { key: unknown }).key)}=${String((e as { value: unknown }).value)}`).join(', ')}}`;
  }
  return String(value);
}

/**
 * Firehose → S3 → Athena on one machine, to run the Athena store's real SQL:
 *
 * - `PutRecordBatch` does what a delivery stream with JSON → Parquet conversion does: reads each
 *   record's JSON documents with the Glue table's column types (`TELEMETRY_TABLE_COLUMNS`, as the
 *   CDK stack declares them) and writes them as a Parquet file under
 *   `<bucket>/<table>/yyyy/MM/dd/HH/`, the hour being the arrival time (`arrival`, by default one
 *   second after the latest row time in the record);
 * - `StartQueryExecution` runs the SQL in DuckDB, with each `"gpu_sentinel"."<table>"` replaced by
 *   `read_parquet` over that layout and the partition column `datehour` read from the file's path,
 *   as partition projection does; `GetQueryExecution` answers `RUNNING` once, then the outcome;
 *   `GetQueryResults` pages the rows as text, a header row first, `pageSize` rows per page.
 *
 * @param opts - `arrival`: the delivery time of a record; `pageSize`: rows per result page
 */
export async function fakeAthenaStore(
  opts: { arrival?: (latestRowTime: Date) => Date; pageSize?: number } = {},
): Promise<FakeAthena> {
  const root = await mkdtemp(join(tmpdir(), 'gs-athena-'));
  const duck = await DuckDBInstance.create(':memory:');
  const db = await duck.connect();
  await db.run("SET TimeZone = 'UTC'");
  const queries: string[] = [];
  const files: string[] = [];

  // An empty file per table (partition 0000/00/00/00, never in range) gives read_parquet the schema.
  for (const table of TELEMETRY_TABLES) {
    const dir = join(root, table, '0000', '00', '00', '00');
    await mkdir(dir, { recursive: true });
    const empty = TELEMETRY_TABLE_COLUMNS[table].map(
      ([n, t]) => `CAST(NULL AS ${DUCKDB_TYPES[t]}) AS "${n}"`,
    );
    await db.run(
      `COPY (SELECT ${empty.join(', ')} LIMIT 0) TO '${join(dir, 'empty.parquet')}' (FORMAT PARQUET)`,
    );
  }

  const firehose = new FirehoseClient({ region: 'us-east-1' });
  const firehoseMock = mockClient(firehose);
  const tableOfStream = new Map(TELEMETRY_TABLES.map((t) => [FAKE_STREAMS[t], t]));
  firehoseMock.on(PutRecordBatchCommand).callsFake(async (input) => {
    const table = tableOfStream.get(input.DeliveryStreamName ?? '');
    if (table === undefined)
      throw new Error(`ResourceNotFoundException: no stream ${input.DeliveryStreamName}`);
    const responses = [];
    for (const record of input.Records ?? []) {
      const text = new TextDecoder().decode(record.Data);
      const latest = Math.max(
        ...text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => new Date(firehoseRowColumns(table, l).time as string | number).getTime()),
      );
      const arrival = opts.arrival?.(new Date(latest)) ?? new Date(latest + 1000);
      const json = join(root, `${randomUUID()}.json`);
      await writeFile(json, text);
      const relative = join(table, datehourOf(arrival), `${randomUUID()}.parquet`);
      await mkdir(join(root, relative, '..'), { recursive: true });
      await db.run(
        `COPY (${firehoseReadJsonSql(table, json)}) TO '${join(root, relative)}' (FORMAT PARQUET)`,
      );
      await rm(json);
      files.push(relative);
      responses.push({ RecordId: randomUUID() });
    }
    return { FailedPutCount: 0, Encrypted: true, RequestResponses: responses };
  });

  const athena = new AthenaClient({ region: 'us-east-1' });
  const athenaMock = mockClient(athena);
  const executions = new Map<
    string,
    { polled: boolean; error?: string; columns: string[]; rows: Array<Array<string | undefined>> }
  >();
  athenaMock.on(StartQueryExecutionCommand).callsFake(async (input) => {
    const sql = input.QueryString ?? '';
    queries.push(sql);
    const database = input.QueryExecutionContext?.Database ?? '';
    let local = sql;
    for (const table of TELEMETRY_TABLES) {
      const glob = join(root, table, '*', '*', '*', '*', '*.parquet');
      local = local.replaceAll(
        `"${database}"."${table}"`,
        () =>
          `(SELECT *, regexp_extract(filename, '(\\d{4}/\\d{2}/\\d{2}/\\d{2})/[^/]+$', 1) AS datehour FROM read_parquet('${glob}', filename = true))`,
      );
    }
    const id = randomUUID();
    try {
      const reader = await db.runAndReadAll(local);
      const columns = reader.columnNames();
      const rows = reader.getRowsJS().map((r) => r.map(athenaText));
      executions.set(id, { polled: false, columns, rows });
    } catch (error) {
      executions.set(id, { polled: false, error: String(error), columns: [], rows: [] });
    }
    return { QueryExecutionId: id };
  });
  athenaMock.on(GetQueryExecutionCommand).callsFake(async (input) => {
    const e = executions.get(input.QueryExecutionId ?? '');
    if (e === undefined) throw new Error('InvalidRequestException: unknown QueryExecutionId');
    if (!e.polled) {
      e.polled = true;
      return { QueryExecution: { QueryExecutionId: input.QueryExecutionId, Status: { State: 'RUNNING' } } };
    }
    return {
      QueryExecution: {
        QueryExecutionId: input.QueryExecutionId,
        Status:
          e.error === undefined
            ? { State: 'SUCCEEDED' }
            : {
                State: 'FAILED',
                StateChangeReason: e.error,
                AthenaError: { ErrorCategory: 2, Retryable: false },
              },
      },
    };
  });
  athenaMock.on(GetQueryResultsCommand).callsFake(async (input) => {
    const e = executions.get(input.QueryExecutionId ?? '');
    if (e === undefined || e.error !== undefined) throw new Error('InvalidRequestException: no results');
    const pageSize = Math.min(opts.pageSize ?? 1000, input.MaxResults ?? 1000);
    const all = [e.columns.map((c) => c as string | undefined), ...e.rows];
    const start = Number(input.NextToken ?? '0');
    const page = all.slice(start, start + pageSize);
    const next = start + pageSize < all.length ? String(start + pageSize) : undefined;
    return {
      ResultSet: {
        ResultSetMetadata: { ColumnInfo: e.columns.map((Name) => ({ Name, Type: 'varchar' })) },
        Rows: page.map((r) => ({ Data: r.map((v) => (v === undefined ? {} : { VarCharValue: v })) })),
      },
      ...(next !== undefined ? { NextToken: next } : {}),
    };
  });
  athenaMock.on(StopQueryExecutionCommand).resolves({});

  return {
    firehose,
    athena,
    queries,
    files,
    async close() {
      db.closeSync();
      duck.closeSync();
      await rm(root, { recursive: true, force: true });
    },
  };
}
