import { randomUUID } from 'node:crypto';
import {
  type AthenaClient,
  GetQueryExecutionCommand,
  GetQueryResultsCommand,
  StartQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { AwsClientStub } from 'aws-sdk-client-mock';

/**
 * Opens the local store at `storePath` (read-only) in `db` as Athena's Glue table
 * `"gpu_sentinel"."gpu_windows"`: times as TIMESTAMP and the `datehour` partition column
 * (`yyyy/MM/dd/HH` of `time`) that partition projection gives the real table.
 */
export async function attachStoreAsGlue(db: DuckDBConnection, storePath: string): Promise<void> {
  await db.run("SET TimeZone = 'UTC'");
  await db.run(`ATTACH '${storePath}' AS store (READ_ONLY)`);
  await db.run("ATTACH ':memory:' AS gpu_sentinel");
  await db.run(
    `CREATE TABLE gpu_sentinel.gpu_windows AS SELECT * REPLACE (CAST("time" AS TIMESTAMP) AS "time", CAST("start" AS TIMESTAMP) AS "start"), strftime("time", '%Y/%m/%d/%H') AS datehour FROM store.gpu_windows`,
  );
}

/**
 * Answers the Athena client `athenaMock` stubs from DuckDB: `StartQueryExecution` runs the SQL text
 * as sent on `db` (whose catalogs stand for the Glue databases), `GetQueryExecution` answers
 * `SUCCEEDED` or `FAILED` with DuckDB's error as the reason, `GetQueryResults` gives every row as
 * Athena's text (a header row first; timestamps `yyyy-MM-dd HH:mm:ss.SSS`, NULL absent), one page.
 *
 * @returns every SQL text StartQueryExecution received, in order (the array fills as queries come)
 */
export function answerAthenaFromDuckDb(
  athenaMock: AwsClientStub<AthenaClient>,
  db: DuckDBConnection,
): string[] {
  const results = new Map<string, { columns: string[]; rows: (string | undefined)[][]; error?: string }>();
  const sent: string[] = [];
  const text = (v: unknown) =>
    v === null || v === undefined
      ? undefined
      : v instanceof Date
        ? v.toISOString().slice(0, 23).replace('T', ' ')
        : String(v);
  athenaMock.on(StartQueryExecutionCommand).callsFake(async (input) => {
    const id = randomUUID();
    sent.push(input.QueryString ?? '');
    try {
      const reader = await db.runAndReadAll(input.QueryString ?? '');
      results.set(id, { columns: reader.columnNames(), rows: reader.getRowsJS().map((r) => r.map(text)) });
    } catch (error) {
      results.set(id, { columns: [], rows: [], error: String(error) });
    }
    return { QueryExecutionId: id };
  });
  athenaMock.on(GetQueryExecutionCommand).callsFake(async (input) => {
    const r = results.get(input.QueryExecutionId ?? '');
    return {
      QueryExecution: {
        QueryExecutionId: input.QueryExecutionId,
        Status:
          r?.error === undefined
            ? { State: 'SUCCEEDED' }
            : {
                State: 'FAILED',
                StateChangeReason: r.error,
                AthenaError: { ErrorCategory: 2, Retryable: false },
              },
      },
    };
  });
  athenaMock.on(GetQueryResultsCommand).callsFake(async (input) => {
    const r = results.get(input.QueryExecutionId ?? '');
    const rows = [r?.columns ?? [], ...(r?.rows ?? [])];
    return {
      ResultSet: {
        ResultSetMetadata: { ColumnInfo: (r?.columns ?? []).map((Name) => ({ Name, Type: 'varchar' })) },
        Rows: rows.map((row) => ({ Data: row.map((v) => (v === undefined ? {} : { VarCharValue: v })) })),
      },
    };
  });
  return sent;
}
