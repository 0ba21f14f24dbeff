import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type DuckDBConnection, DuckDBInstance, type DuckDBValue } from '@duckdb/node-api';
import { StoreQueryError, StoreUnavailableError } from '../adapters/errors';
import { isoToMs } from '../adapters/iso-time';
import {
  compareWasteGroups,
  DEFAULT_RECENT_LIMIT,
  gpuWindowFrom,
  lastSeenFrom,
  lastSeenSql,
  limitProblem,
  wasteGroupRowFrom,
  wasteGroupSql,
} from '../adapters/store-reads';
import {
  compareWasteRows,
  WASTE_AGGREGATES_SQL,
  wasteRangeProblem,
  wasteRowFromText,
} from '../adapters/waste-report';
import { epochMicros } from '../contract';
import { GPU_METRIC_NAMES, LEDGER_FIELD_NAMES } from '../domain/measure-types';
import type {
  LastSeen,
  RecentWindowsQuery,
  RemediationRecord,
  StateStore,
  StoredGpuWindow,
  StoreWriteResult,
  TelemetryStore,
  WasteGroupQuery,
  WasteGroupRow,
  WasteQuery,
} from '../domain/ports';
import { TELEMETRY_TABLE_KEYS } from '../domain/store-columns';
import type { StoreRows, WasteReportRow } from '../domain/types';
import {
  DUCKDB_SCHEMA_SQL,
  EFA_WINDOW_COLUMNS,
  EVENT_COLUMNS,
  GPU_WINDOW_COLUMNS,
  upsertSql,
} from './duckdb-schema';

/** Tables of the local store that {@link DuckDbStore.readAll} can read. */
export const DUCKDB_TABLES = [
  'gpu_windows',
  'efa_windows',
  'events',
  'remediations',
  'broken_gpus',
  'alert_claims',
] as const;
/** One of {@link DUCKDB_TABLES}. */
export type DuckDbTable = (typeof DUCKDB_TABLES)[number];

/** One upsertable table: columns, key, parameter casts. */
interface UpsertTable {
  readonly name: 'gpu_windows' | 'efa_windows' | 'events';
  readonly columns: readonly string[];
  readonly key: readonly string[];
  readonly casts: Readonly<Record<string, string>>;
}

const GPU_TABLE: UpsertTable = {
  name: 'gpu_windows',
  columns: GPU_WINDOW_COLUMNS,
  key: TELEMETRY_TABLE_KEYS.gpu_windows,
  casts: { time: '::TIMESTAMPTZ', start: '::TIMESTAMPTZ' },
};
const EFA_TABLE: UpsertTable = {
  name: 'efa_windows',
  columns: EFA_WINDOW_COLUMNS,
  key: TELEMETRY_TABLE_KEYS.efa_windows,
  casts: { time: '::TIMESTAMPTZ', start: '::TIMESTAMPTZ', deltas: '::JSON::MAP(VARCHAR, BIGINT)' },
};
const EVENT_TABLE: UpsertTable = {
  name: 'events',
  columns: EVENT_COLUMNS,
  key: TELEMETRY_TABLE_KEYS.events,
  casts: { time: '::TIMESTAMPTZ' },
};

/** Rows per upsert statement (bounds the statement's parameter count to ~4,000). */
const ROWS_PER_STATEMENT = 64;

/** Rows of `gpu_windows` in `[?, ?)`, the source of every read. */
const GPU_RANGE = `(SELECT * FROM gpu_windows WHERE "time" >= ?::TIMESTAMPTZ AND "time" < ?::TIMESTAMPTZ)`;

const WASTE_SQL = `SELECT instance_id, gpu_index,
  ${WASTE_AGGREGATES_SQL}
FROM ${GPU_RANGE} AS w
GROUP BY instance_id, gpu_index`;

/** `undefined` → SQL NULL. */
function v(value: string | number | boolean | undefined): DuckDBValue {
  return value === undefined ? null : value;
}

/** A DuckDB result value → plain JS (bigint → number, Date → ISO string, other objects kept). */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  return value;
}

/**
 * The embedded local store (DESIGN §4, §12) on DuckDB: the telemetry tables `gpu_windows`,
 * `efa_windows`, `events` with the Timestream column names, and the remediation/alert state.
 *
 * Writes are upserts keyed like Timestream records (dimensions + time) keeping the row with the
 * higher `seq`, so a retried batch is stored once and a newer batch replaces; one batch is one
 * transaction (nothing half-written). All operations run one at a time on one connection.
 *
 * @example
 * const store = await DuckDbStore.open('.gpu-sentinel/store.duckdb');
 * await store.write(rows);
 * const report = await store.queryWaste({ from, to });
 * await store.close();
 */
export class DuckDbStore implements TelemetryStore, StateStore {
  readonly #instance: DuckDBInstance;
  readonly #connection: DuckDBConnection;
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  private constructor(instance: DuckDBInstance, connection: DuckDBConnection) {
    this.#instance = instance;
    this.#connection = connection;
  }

  /**
   * Opens (or creates) a store: creates the parent directories and the tables when missing.
   *
   * @param path - database file path, or `:memory:` for a store that lives as long as the object
   * @returns the open store
   * @throws {StoreUnavailableError} when the file cannot be created or opened (e.g. locked by another process)
   */
  static async open(path: string): Promise<DuckDbStore> {
    try {
      if (path !== ':memory:') await mkdir(dirname(path), { recursive: true });
      const instance = await DuckDBInstance.create(path);
      const connection = await instance.connect();
      for (const ddl of DUCKDB_SCHEMA_SQL) await connection.run(ddl);
      return new DuckDbStore(instance, connection);
    } catch (error) {
      throw new StoreUnavailableError(
        `open ${path}`,
        'expected a writable DuckDB file (or :memory:); check the path, its permissions, and that no other process holds it',
        { cause: error },
      );
    }
  }

  /** Runs `task` after every earlier operation settled (one connection, one transaction at a time). */
  #serial<T>(task: () => Promise<T>): Promise<T> {
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
   * Upserts value rows (in `table.columns` order) with multi-row statements. Rows with the same key
   * are reduced first to the one with the highest seq (the later one on a tie), as Timestream does.
   */
  async #upsert(table: UpsertTable, values: DuckDBValue[][]): Promise<void> {
    const keyAt = table.key.map((k) => table.columns.indexOf(k));
    const seqAt = table.columns.indexOf('seq');
    const byKey = new Map<string, DuckDBValue[]>();
    for (const row of values) {
      const key = JSON.stringify(
        keyAt.map((i) =>
          table.casts[table.columns[i] ?? ''] === '::TIMESTAMPTZ' ? epochMicros(String(row[i])) : row[i],
        ),
      );
      const seen = byKey.get(key);
      if (seen === undefined || Number(row[seqAt]) >= Number(seen[seqAt])) byKey.set(key, row);
    }
    const unique = [...byKey.values()];
    for (let i = 0; i < unique.length; i += ROWS_PER_STATEMENT) {
      const chunk = unique.slice(i, i + ROWS_PER_STATEMENT);
      await this.#connection.run(
        upsertSql(table.name, table.columns, table.key, table.casts, chunk.length),
        chunk.flat(),
      );
    }
  }

  async #rows(sql: string, params: DuckDBValue[] = []): Promise<Record<string, unknown>[]> {
    const reader = await this.#connection.runAndReadAll(sql, params);
    return reader
      .getRowObjectsJS()
      .map((r) => Object.fromEntries(Object.entries(r).map(([k, x]) => [k, plain(x)])));
  }

  /**
   * Writes one batch's rows in one transaction.
   *
   * @param rows - the batch's GPU windows, EFA windows and events
   * @returns `written`: every row of the batch (a row whose key already holds the same or a newer
   *   `seq` is an idempotent duplicate and counts as written); `rejected`: always empty
   * @throws {StoreUnavailableError} when DuckDB fails; the transaction is rolled back, nothing of the batch is stored
   */
  write(rows: StoreRows): Promise<StoreWriteResult> {
    return this.#serial(async () => {
      const c = this.#connection;
      await c.run('BEGIN TRANSACTION');
      try {
        const gpu = rows.gpu.map((r) => {
          const metrics = r.metrics as Readonly<Record<string, number | boolean | undefined>>;
          const ledger = r.ledger as unknown as Readonly<
            Record<string, string | number | boolean | undefined>
          >;
          return [
            r.time,
            r.start,
            r.instance_id,
            r.instance_type,
            r.region,
            v(r.az),
            r.gpu_index,
            v(r.gpu_uuid),
            v(r.gpu_name),
            v(r.team),
            v(r.job),
            r.batch_id,
            r.seq,
            ...GPU_METRIC_NAMES.map((n) => v(metrics[n])),
            ...LEDGER_FIELD_NAMES.map((n) => v(ledger[n])),
          ];
        });
        const efa = rows.efa.map((r) => [
          r.time,
          r.start,
          r.instance_id,
          r.instance_type,
          r.device,
          r.port,
          r.seq,
          JSON.stringify(r.deltas),
        ]);
        const events = rows.events.map((r) => [
          r.time,
          r.instance_id,
          r.instance_type,
          v(r.gpu_index),
          r.gpu_index ?? -1,
          v(r.pci_bus_id),
          r.kind,
          v(r.xid),
          r.source,
          v(r.pid),
          v(r.process_name),
          v(r.detail),
          r.batch_id,
          r.seq,
        ]);
        await this.#upsert(GPU_TABLE, gpu);
        await this.#upsert(EFA_TABLE, efa);
        await this.#upsert(EVENT_TABLE, events);
        await c.run('COMMIT');
      } catch (error) {
        await c.run('ROLLBACK').catch(() => undefined);
        throw new StoreUnavailableError(
          'write',
          'expected DuckDB to store the batch, it failed; nothing of the batch was stored, retry it',
          { cause: error },
        );
      }
      return { written: rows.gpu.length + rows.efa.length + rows.events.length, rejected: [] };
    });
  }

  /**
   * Sums the ledger per GPU over windows with `from ≤ time < to`.
   *
   * @param query - the time range
   * @returns one row per instance+GPU: ledger sums, GPU-hour-weighted efficiency over the measured
   *   windows, `efficiency_source` (`sm_active`, `gpu_util`, `mixed` or `none`), the latest window's
   *   price and price source, `processes_unknown`, and the latest team/job; ordered by `wasted_usd`
   *   desc, then instance id, then GPU index
   * @throws {StoreQueryError} when the range is invalid or empty
   */
  queryWaste(query: WasteQuery): Promise<WasteReportRow[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) return Promise.reject(new StoreQueryError(problem));
    return this.#serial(async () => {
      const rows = await this.#rows(WASTE_SQL, [query.from.toISOString(), query.to.toISOString()]);
      return rows.map((r) => wasteRowFromText((c) => r[c])).sort(compareWasteRows);
    });
  }

  /**
   * Sums the ledger per group over windows with `from ≤ time < to`.
   *
   * @param query - the range and the grouping
   * @returns one row per group, most wasted first, the unknown group (no team, no diagnosis) last on a tie
   * @throws {StoreQueryError} when the range is invalid
   */
  queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) return Promise.reject(new StoreQueryError(problem));
    return this.#serial(async () => {
      const rows = await this.#rows(wasteGroupSql(GPU_RANGE, query.by), [
        query.from.toISOString(),
        query.to.toISOString(),
      ]);
      return rows.map((r) => wasteGroupRowFrom((c) => r[c])).sort(compareWasteGroups);
    });
  }

  /**
   * The GPU windows of one instance with `from ≤ time < to`, newest first (then by GPU index).
   *
   * @param query - instance, range, `limit` (default 1000)
   * @returns the windows as written
   * @throws {StoreQueryError} when the range or the limit is invalid
   */
  recentWindows(query: RecentWindowsQuery): Promise<StoredGpuWindow[]> {
    const problem = wasteRangeProblem(query.from, query.to) ?? limitProblem(query.limit);
    if (problem !== undefined) return Promise.reject(new StoreQueryError(problem));
    return this.#serial(async () => {
      const rows = await this.#rows(
        `SELECT * FROM ${GPU_RANGE} AS w WHERE instance_id = ? ORDER BY "time" DESC, gpu_index LIMIT ?`,
        [
          query.from.toISOString(),
          query.to.toISOString(),
          query.instance_id,
          query.limit ?? DEFAULT_RECENT_LIMIT,
        ],
      );
      return rows.map((r) => gpuWindowFrom((c) => r[c]));
    });
  }

  /**
   * When each instance last sent a GPU window with `from ≤ time < to`.
   *
   * @param query - the range
   * @returns one entry per instance, by instance id
   * @throws {StoreQueryError} when the range is invalid
   */
  lastSeen(query: WasteQuery): Promise<LastSeen[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) return Promise.reject(new StoreQueryError(problem));
    return this.#serial(async () => {
      const rows = await this.#rows(lastSeenSql(GPU_RANGE), [
        query.from.toISOString(),
        query.to.toISOString(),
      ]);
      return rows.map((r) => lastSeenFrom((c) => r[c]));
    });
  }

  /**
   * Reads every row of a table, for tests, the CLI and debugging: timestamps as ISO 8601 strings
   * (UTC; ms precision, but `events.time` with 6 fractional digits, as events are keyed to the µs), integers as numbers, NULL as `null`, `efa_windows.deltas` as an object.
   *
   * @param table - one of {@link DUCKDB_TABLES}
   * @returns the rows, ordered by their key columns
   * @throws {StoreQueryError} when `table` is not one of the store's tables
   */
  readAll(table: DuckDbTable): Promise<Record<string, unknown>[]> {
    if (!(DUCKDB_TABLES as readonly string[]).includes(table)) {
      return Promise.reject(
        new StoreQueryError(`Expected a table of ${DUCKDB_TABLES.join(', ')}, got \`${String(table)}\`.`),
      );
    }
    return this.#serial(async () => {
      if (table === 'efa_windows') {
        const rows = await this.#rows(
          'SELECT * EXCLUDE (deltas), CAST(deltas AS JSON)::VARCHAR AS deltas FROM efa_windows ORDER BY ALL',
        );
        return rows.map((r) => ({ ...r, deltas: JSON.parse(r.deltas as string) as unknown }));
      }
      if (table === 'events') {
        return this.#rows(
          "SELECT * REPLACE (strftime(time, '%Y-%m-%dT%H:%M:%S.%fZ') AS time) FROM events ORDER BY instance_id, kind, gpu_slot, events.time",
        );
      }
      return this.#rows(`SELECT * FROM ${table} ORDER BY ALL`);
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's replace/quarantine record, or undefined when none
   */
  getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#serial(async () => {
      const [r] = await this.#rows('SELECT * FROM remediations WHERE instance_id = ?', [instanceId]);
      return r === undefined ? undefined : toRemediation(r);
    });
  }

  /**
   * Records a replace/quarantine only if the instance has none yet.
   *
   * @param record - the remediation
   * @returns true when recorded; false when the instance already had one (kept unchanged)
   * @throws {TypeError} when `record.at` is not an ISO 8601 time
   */
  putRemediationIfAbsent(record: RemediationRecord): Promise<boolean> {
    const atMs = isoToMs(record.at, 'record.at');
    return this.#serial(async () => {
      const rows = await this.#rows(
        'INSERT INTO remediations VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (instance_id) DO NOTHING RETURNING instance_id',
        [record.instance_id, v(record.asg_name), record.action, record.at, atMs, record.rule],
      );
      return rows.length === 1;
    });
  }

  /**
   * @param asgName - Auto Scaling group name
   * @param since - inclusive lower bound on `at`
   * @returns the group's `replace` records with `at ≥ since`, oldest first
   */
  listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    return this.#serial(async () => {
      const rows = await this.#rows(
        "SELECT * FROM remediations WHERE asg_name = ? AND action = 'replace' AND at_ms >= ? ORDER BY at_ms, instance_id",
        [asgName, since.getTime()],
      );
      return rows.map(toRemediation);
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns gpuKey → since when broken (ISO 8601, as marked)
   */
  getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#serial(async () => {
      const rows = await this.#rows(
        'SELECT gpu_key, "at" FROM broken_gpus WHERE instance_id = ? ORDER BY gpu_key',
        [instanceId],
      );
      return new Map(rows.map((r) => [r.gpu_key as string, r.at as string]));
    });
  }

  /**
   * Marks a GPU broken from `at`; an existing earlier mark is kept.
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*` for the whole instance
   * @param at - ISO 8601
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  markBroken(instanceId: string, gpuKey: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    return this.#serial(async () => {
      await this.#connection.run(
        'INSERT INTO broken_gpus VALUES (?, ?, ?, ?) ON CONFLICT (instance_id, gpu_key) DO UPDATE SET "at" = excluded."at", at_ms = excluded.at_ms WHERE excluded.at_ms < broken_gpus.at_ms',
        [instanceId, gpuKey, at, atMs],
      );
    });
  }

  /**
   * Claims the right to send an alert now.
   *
   * @param alertId - stable alert id `rule:instance_id[:gpu]`
   * @param at - send time, ISO 8601
   * @param cooldownS - seconds that must have passed since the last send, ≥ 0
   * @returns true (and records `at`) when never sent or last sent at or before `at − cooldownS`; false otherwise
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  claimAlert(alertId: string, at: string, cooldownS: number): Promise<boolean> {
    const atMs = isoToMs(at, 'at');
    const cutoffMs = atMs - cooldownS * 1000;
    return this.#serial(async () => {
      const rows = await this.#rows(
        'INSERT INTO alert_claims VALUES (?, ?, ?) ON CONFLICT (alert_id) DO UPDATE SET "at" = excluded."at", at_ms = excluded.at_ms WHERE alert_claims.at_ms <= ? RETURNING alert_id',
        [alertId, at, atMs, cutoffMs],
      );
      return rows.length === 1;
    });
  }

  /**
   * Waits for the operations under way, then closes the connection and the database; later calls
   * reject with {@link StoreUnavailableError}. Closing twice is fine.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#queue;
    this.#connection.closeSync();
    this.#instance.closeSync();
  }
}

/** A `remediations` row → record. */
function toRemediation(r: Record<string, unknown>): RemediationRecord {
  return {
    instance_id: r.instance_id as string,
    ...(r.asg_name != null ? { asg_name: r.asg_name as string } : {}),
    action: r.action as RemediationRecord['action'],
    at: r.at as string,
    rule: r.rule as string,
  };
}
