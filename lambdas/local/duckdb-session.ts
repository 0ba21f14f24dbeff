import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import { StoreUnavailableError } from '../domain/port-errors';
import { DUCKDB_SCHEMA_SQL, GPU_WINDOWS_OLD_KEY_SQL, GPU_WINDOWS_REKEY_SQL } from './duckdb-schema';

/** `undefined` → SQL NULL. */
export function sqlValue(value: string | number | boolean | undefined): DuckDBValue {
  return value === undefined ? null : value;
}

/** A DuckDB result value → plain JS (bigint → number, Date → ISO string, other objects kept). */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  return value;
}

/**
 * Most prepared statements a session keeps (the least recently used is freed past it): the local
 * store runs a few dozen distinct statements, an upsert of n rows being one per n.
 */
const MAX_PREPARED_STATEMENTS = 128;

/**
 * One open local store file and its one connection, shared by the local store's two ports
 * (`DuckDbTelemetryStore`, `DuckDbStateStore`): every operation runs after the earlier ones
 * settled ({@link DuckDbSession.serial}), so a read-then-write is atomic and one transaction runs
 * at a time. A statement with parameters is prepared once per session and re-bound at each run:
 * DuckDB's `run(sql, values)` parses the text twice and plans it at every call, ≈ 20 % of a small
 * upsert's CPU, and an ingest runs about twenty of them before a fault's alert (BENCHMARKS.md).
 */
export class DuckDbSession {
  readonly #instance: DuckDBInstance;
  readonly #connection: DuckDBConnection;
  readonly #prepared = new Map<string, DuckDBPreparedStatement>();
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(instance: DuckDBInstance, connection: DuckDBConnection) {
    this.#instance = instance;
    this.#connection = connection;
  }

  /**
   * Opens (or creates) a store file: creates the parent directories and the tables when missing.
   * Read-only (`readOnly`), it creates nothing and writes nothing: the file must already be a
   * DuckDB database (DuckDB's `access_mode = READ_ONLY`, which other readers may share).
   *
   * @param path - database file path, or `:memory:` for a store that lives as long as the session
   * @param options - `readOnly`: open an existing file without writing it. @default { readOnly: false }
   * @returns the open session
   * @throws {StoreUnavailableError} when the file cannot be created or opened (e.g. locked by another
   *   process), or, read-only, when it is not a DuckDB database
   */
  static async open(path: string, options: { readonly readOnly?: boolean } = {}): Promise<DuckDbSession> {
    if (options.readOnly === true) {
      try {
        const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
        return new DuckDbSession(instance, await instance.connect());
      } catch (error) {
        throw new StoreUnavailableError(
          `open ${path} read-only`,
          `expected a DuckDB database file, and ${path} is not one (${(error as Error).message}); name the file \`gpu-sentinel local --db\` wrote`,
          { cause: error },
        );
      }
    }
    try {
      if (path !== ':memory:') await mkdir(dirname(path), { recursive: true });
      const instance = await DuckDBInstance.create(path);
      const connection = await instance.connect();
      for (const ddl of DUCKDB_SCHEMA_SQL) await connection.run(ddl);
      const old = await connection.runAndReadAll(GPU_WINDOWS_OLD_KEY_SQL);
      if (Number(old.getRowObjects()[0]?.n ?? 0) > 0) {
        await connection.run('BEGIN TRANSACTION');
        for (const sql of GPU_WINDOWS_REKEY_SQL) await connection.run(sql);
        await connection.run('COMMIT');
      }
      return new DuckDbSession(instance, connection);
    } catch (error) {
      throw new StoreUnavailableError(
        `open ${path}`,
        'expected a writable DuckDB file (or :memory:); check the path, its permissions, and that no other process holds it',
        { cause: error },
      );
    }
  }

  /**
   * Runs `task` after every earlier operation settled (one connection, one transaction at a time).
   *
   * @param task - the operation, free to run several statements
   * @returns what `task` returns
   * @throws {StoreUnavailableError} when the session is closed; whatever `task` throws otherwise
   */
  serial<T>(task: () => Promise<T>): Promise<T> {
    if (this.#closed) {
      return Promise.reject(
        new StoreUnavailableError('use', 'expected an open store, got a closed one; open a new DuckDbStore'),
      );
    }
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs one statement (inside {@link serial}).
   *
   * @param sql - the statement, `?` parameters
   * @param params - their values
   * @param types - their DuckDB types where the JS type does not say it
   * @throws the driver's error as it comes
   */
  async exec(sql: string, params: DuckDBValue[] = [], types?: DuckDBType[]): Promise<void> {
    if (params.length === 0) {
      await this.#connection.run(sql);
      return;
    }
    const prepared = await this.#prepare(sql);
    prepared.bind(params, types);
    await prepared.run();
  }

  /**
   * The session's prepared statement for `sql`, prepared at its first use (inside {@link serial}).
   * @throws the driver's error when `sql` does not prepare (nothing is kept then)
   */
  async #prepare(sql: string): Promise<DuckDBPreparedStatement> {
    const kept = this.#prepared.get(sql);
    if (kept !== undefined) {
      // Most recently used last: the first entry is the one to free.
      this.#prepared.delete(sql);
      this.#prepared.set(sql, kept);
      return kept;
    }
    const prepared = await this.#connection.prepare(sql);
    if (this.#prepared.size >= MAX_PREPARED_STATEMENTS) {
      const [oldestSql, oldest] = this.#prepared.entries().next().value as [string, DuckDBPreparedStatement];
      this.#prepared.delete(oldestSql);
      oldest.destroySync();
    }
    this.#prepared.set(sql, prepared);
    return prepared;
  }

  /**
   * Runs one statement (inside {@link serial}), turning a DuckDB failure into {@link StoreUnavailableError}.
   *
   * @param operation - the port operation, named in the error
   * @param sql - the statement
   * @param params - its parameters
   * @throws {StoreUnavailableError} when DuckDB fails
   */
  async run(operation: string, sql: string, params: DuckDBValue[]): Promise<void> {
    try {
      await this.exec(sql, params);
    } catch (error) {
      throw new StoreUnavailableError(operation, 'expected DuckDB to answer, it failed; retry later', {
        cause: error,
      });
    }
  }

  /**
   * Runs a query (inside {@link serial}) and returns its rows as plain objects: integers as numbers,
   * timestamps as ISO 8601 strings, NULL as `null`.
   *
   * @param sql - the query, `?` parameters
   * @param params - their values
   * @returns the rows
   * @throws the driver's error as it comes
   */
  async rows(sql: string, params: DuckDBValue[] = []): Promise<Record<string, unknown>[]> {
    let reader: Awaited<ReturnType<DuckDBConnection['runAndReadAll']>>;
    if (params.length === 0) reader = await this.#connection.runAndReadAll(sql);
    else {
      const prepared = await this.#prepare(sql);
      prepared.bind(params);
      reader = await prepared.runAndReadAll();
    }
    return reader
      .getRowObjectsJS()
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, x]) => [k, plain(x)])));
  }

  /**
   * Runs `work` in one transaction (inside {@link serial}): committed when it returns, rolled back
   * when it throws, and the failure becomes a {@link StoreUnavailableError} naming `operation`.
   *
   * @param operation - the port operation, named in the error
   * @param failure - what the error says was not done, e.g. `nothing of the batch was stored, retry it`
   * @param work - the statements
   * @returns what `work` returns
   * @throws {StoreUnavailableError} when DuckDB fails (rolled back: nothing written)
   */
  async transaction<T>(operation: string, failure: string, work: () => Promise<T>): Promise<T> {
    await this.#connection.run('BEGIN TRANSACTION');
    try {
      const answer = await work();
      await this.#connection.run('COMMIT');
      return answer;
    } catch (error) {
      await this.#connection.run('ROLLBACK').catch(() => undefined);
      throw new StoreUnavailableError(operation, failure, { cause: error });
    }
  }

  /**
   * Waits for the operations under way, then closes the connection and the database; later calls
   * reject with {@link StoreUnavailableError}. Closing twice is fine.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queue;
    for (const prepared of this.#prepared.values()) prepared.destroySync();
    this.#prepared.clear();
    this.#connection.closeSync();
    this.#instance.closeSync();
  }
}
