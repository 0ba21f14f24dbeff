import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  DOUBLE,
  type DuckDBConnection,
  DuckDBInstance,
  type DuckDBType,
  type DuckDBValue,
} from '@duckdb/node-api';
import { toFiringAlert } from '../adapters/firing-alert';
import { isoToMs } from '../adapters/iso-time';
import {
  budgetedGroup,
  budgetScopes,
  leaseIdFor,
  pickBudgetSlot,
  reservationTimes,
} from '../adapters/remediation-budget';
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
import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
} from '../domain/measure-types';
import { StoreQueryError, StoreUnavailableError } from '../domain/port-errors';
import type {
  FiringAlert,
  InstanceState,
  LastSeen,
  RecentWindowsQuery,
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
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
  'remediation_slots',
] as const;
/** One of {@link DUCKDB_TABLES}. */
export type DuckDbTable = (typeof DUCKDB_TABLES)[number];

/** One upsertable table: columns, key, parameter casts. */
interface UpsertTable {
  readonly name: 'gpu_windows' | 'efa_windows' | 'events';
  readonly columns: readonly string[];
  readonly key: readonly string[];
  readonly casts: Readonly<Record<string, string>>;
  /**
   * Parameter types by column where the value's JS type does not say it: a DOUBLE column's value
   * is bound as DOUBLE even when it is a whole number (the driver would bind 1e21 as an int64 and fail).
   */
  readonly types?: Readonly<Record<string, DuckDBType>>;
}

const GPU_TABLE: UpsertTable = {
  name: 'gpu_windows',
  columns: GPU_WINDOW_COLUMNS,
  key: TELEMETRY_TABLE_KEYS.gpu_windows,
  casts: { time: '::TIMESTAMPTZ', start: '::TIMESTAMPTZ' },
  types: Object.fromEntries(
    [
      ...GPU_METRIC_NAMES.filter((n) => GPU_METRIC_TYPES[n] === 'DOUBLE'),
      ...LEDGER_FIELD_NAMES.filter((n) => LEDGER_MEASURE_TYPES[n] === 'DOUBLE'),
    ].map((n) => [n, DOUBLE]),
  ),
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
 * The embedded local store (docs/design.md §4, §12) on DuckDB: the telemetry tables `gpu_windows`,
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
    const rowTypes = table.columns.map((c) => table.types?.[c]);
    for (let i = 0; i < unique.length; i += ROWS_PER_STATEMENT) {
      const chunk = unique.slice(i, i + ROWS_PER_STATEMENT);
      await this.#connection.run(
        upsertSql(table.name, table.columns, table.key, table.casts, chunk.length),
        chunk.flat(),
        chunk.flatMap(() => rowTypes) as DuckDBType[],
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
            v(r.namespace),
            v(r.pod),
            v(r.container),
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
      const [r] = await this.#rows(
        "SELECT * FROM remediations WHERE instance_id = ? AND coalesce(state, 'done') = 'done'",
        [instanceId],
      );
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
        'INSERT INTO remediations (instance_id, asg_name, action, "at", at_ms, rule, state) VALUES (?, ?, ?, ?, ?, ?, \'done\') ON CONFLICT (instance_id) DO NOTHING RETURNING instance_id',
        [record.instance_id, v(record.asg_name), record.action, record.at, atMs, record.rule],
      );
      return rows.length === 1;
    });
  }

  /**
   * Reserves a remediation in one DuckDB transaction (every operation of this store runs one at a
   * time, so the read of the instance and the budget slots and the writes are one atomic step):
   * refused when the instance has a `done` record or a live `pending` lease, or when the group's or
   * the fleet's slots taken after `at − windowS` reach their limit; else the record is written
   * `pending` until `at + leaseS` and, for a budgeted replacement, one slot of each scope is taken.
   *
   * @param request - see {@link RemediationReservationRequest}
   * @returns granted with the lease id, or refused and why (with used/limit for a budget)
   * @throws {StoreUnavailableError} when DuckDB fails (rolled back: nothing reserved)
   * @throws {TypeError} when `request.record.at` is not an ISO 8601 time
   */
  reserveRemediation(request: RemediationReservationRequest): Promise<RemediationReservation> {
    const { record } = request;
    const { atMs, leaseUntilMs, cutoffMs } = reservationTimes(record, request.leaseS, request.budget);
    const spend = budgetedGroup(record, request.budget);
    const leaseId = leaseIdFor(record);
    return this.#serial(async () => {
      const c = this.#connection;
      await c.run('BEGIN TRANSACTION');
      try {
        const answer = await (async (): Promise<RemediationReservation> => {
          const [held] = await this.#rows(
            "SELECT coalesce(state, 'done') AS state, lease_until_ms FROM remediations WHERE instance_id = ?",
            [record.instance_id],
          );
          if (held?.state === 'done') return { granted: false, reason: 'remediated' };
          if (held !== undefined && Number(held.lease_until_ms) > atMs) {
            return { granted: false, reason: 'in_progress' };
          }
          const taken: [string, number][] = [];
          if (spend !== undefined) {
            for (const { scope, limit, refusal } of budgetScopes(spend)) {
              const slots = await this.#rows('SELECT slot, at_ms FROM remediation_slots WHERE scope = ?', [
                scope,
              ]);
              const pick = pickBudgetSlot(
                slots.map((r) => ({ slot: r.slot as number, at_ms: r.at_ms as number })),
                limit,
                cutoffMs,
              );
              if (pick.free === undefined) return { granted: false, reason: refusal, used: pick.used, limit };
              taken.push([scope, pick.free]);
            }
          }
          await c.run(
            `INSERT OR REPLACE INTO remediations (instance_id, asg_name, action, "at", at_ms, rule, state, lease_id, lease_until_ms)
             VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
            [
              record.instance_id,
              v(record.asg_name),
              record.action,
              record.at,
              atMs,
              record.rule,
              leaseId,
              leaseUntilMs,
            ],
          );
          for (const [scope, slot] of taken) {
            await c.run('INSERT OR REPLACE INTO remediation_slots VALUES (?, ?, ?, ?, ?)', [
              scope,
              slot,
              record.instance_id,
              leaseId,
              atMs,
            ]);
          }
          return { granted: true, leaseId };
        })();
        await c.run('COMMIT');
        return answer;
      } catch (error) {
        await c.run('ROLLBACK').catch(() => undefined);
        throw new StoreUnavailableError(
          'reserveRemediation',
          'expected DuckDB to reserve the remediation, it failed; nothing was reserved, retry it',
          { cause: error },
        );
      }
    });
  }

  /**
   * Confirms a reservation: its record becomes `done` (what {@link getRemediation} returns).
   *
   * @param record - the reserved remediation
   * @param leaseId - the lease id the reservation granted
   * @throws {StoreUnavailableError} when DuckDB fails
   */
  confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#serial(async () => {
      await this.#run(
        'confirmRemediation',
        "UPDATE remediations SET state = 'done', lease_until_ms = NULL WHERE instance_id = ? AND lease_id = ? AND state = 'pending'",
        [record.instance_id, leaseId],
      );
    });
  }

  /**
   * Releases a reservation: its pending record and its budget slots are deleted (only if still held
   * under `leaseId`).
   *
   * @param record - the reserved remediation
   * @param leaseId - the lease id the reservation granted
   * @throws {StoreUnavailableError} when DuckDB fails
   */
  releaseRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#serial(async () => {
      await this.#run(
        'releaseRemediation',
        "DELETE FROM remediations WHERE instance_id = ? AND lease_id = ? AND state = 'pending'",
        [record.instance_id, leaseId],
      );
      await this.#run('releaseRemediation', 'DELETE FROM remediation_slots WHERE lease_id = ?', [leaseId]);
    });
  }

  /** Runs one statement, turning a DuckDB failure into {@link StoreUnavailableError}. */
  async #run(operation: string, sql: string, params: DuckDBValue[]): Promise<void> {
    try {
      await this.#connection.run(sql, params);
    } catch (error) {
      throw new StoreUnavailableError(operation, 'expected DuckDB to answer, it failed; retry later', {
        cause: error,
      });
    }
  }

  /**
   * @param asgName - Auto Scaling group name
   * @param since - inclusive lower bound on `at`
   * @returns the group's `replace` records with `at ≥ since`, oldest first
   */
  listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    return this.#serial(async () => {
      const rows = await this.#rows(
        "SELECT * FROM remediations WHERE asg_name = ? AND action = 'replace' AND coalesce(state, 'done') = 'done' AND at_ms >= ? ORDER BY at_ms, instance_id",
        [asgName, since.getTime()],
      );
      return rows.map(toRemediation);
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's broken marks, idle marks and firing alerts (the three reads below)
   */
  async getInstanceState(instanceId: string): Promise<InstanceState> {
    const [broken, idle, firing] = await Promise.all([
      this.getBrokenSince(instanceId),
      this.getIdleSince(instanceId),
      this.listFiringAlerts(instanceId),
    ]);
    return { broken, idle, firing };
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
   * Gives back an alert claim: deletes it only if it is still the one made at `at`.
   *
   * @param alertId - stable alert id
   * @param at - the claim's time, ISO 8601, as given to {@link claimAlert}
   * @throws {StoreUnavailableError} when DuckDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  releaseAlert(alertId: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    return this.#serial(() =>
      this.#run('releaseAlert', 'DELETE FROM alert_claims WHERE alert_id = ? AND at_ms = ?', [alertId, atMs]),
    );
  }

  /**
   * Leases the right to send an alert (publish-then-record, step 1). Operations run one at a time, so
   * the check and the write are atomic.
   *
   * @param alertId - stable alert id
   * @param at - send time, ISO 8601
   * @param cooldownS - seconds that must have passed since the last confirmed send, ≥ 0
   * @param leaseS - a lease older than this is abandoned (its holder crashed) and may be taken, s
   * @returns true when leased; false while in cooldown or while another lease is held
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  leaseAlert(alertId: string, at: string, cooldownS: number, leaseS: number): Promise<boolean> {
    const atMs = isoToMs(at, 'at');
    return this.#serial(async () => {
      const [sent] = await this.#rows('SELECT at_ms FROM alert_claims WHERE alert_id = ?', [alertId]);
      if (sent !== undefined && Number(sent.at_ms) > atMs - cooldownS * 1000) return false;
      const [lease] = await this.#rows('SELECT lease_ms FROM alert_leases WHERE alert_id = ?', [alertId]);
      if (lease !== undefined && Number(lease.lease_ms) > atMs - leaseS * 1000) return false;
      await this.#connection.run(
        'INSERT INTO alert_leases VALUES (?, ?) ON CONFLICT (alert_id) DO UPDATE SET lease_ms = excluded.lease_ms',
        [alertId, atMs],
      );
      return true;
    });
  }

  /**
   * Records a send at `at` and frees the lease taken at `at` (publish-then-record, step 2).
   *
   * @param alertId - stable alert id
   * @param at - the lease's time, ISO 8601
   * @param _cooldownS - unused here (no TTL in the local store)
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  confirmAlert(alertId: string, at: string, _cooldownS: number): Promise<void> {
    const atMs = isoToMs(at, 'at');
    return this.#serial(async () => {
      await this.#connection.run(
        'INSERT INTO alert_claims VALUES (?, ?, ?) ON CONFLICT (alert_id) DO UPDATE SET "at" = excluded."at", at_ms = excluded.at_ms',
        [alertId, at, atMs],
      );
      await this.#connection.run('DELETE FROM alert_leases WHERE alert_id = ? AND lease_ms = ?', [
        alertId,
        atMs,
      ]);
    });
  }

  /**
   * Frees the lease taken at `at` without recording a send (the publish failed).
   *
   * @param alertId - stable alert id
   * @param at - the lease's time, ISO 8601
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  releaseAlertLease(alertId: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    return this.#serial(async () => {
      await this.#connection.run('DELETE FROM alert_leases WHERE alert_id = ? AND lease_ms = ?', [
        alertId,
        atMs,
      ]);
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's firing window alerts, by alert id
   */
  listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    return this.#serial(async () => {
      const rows = await this.#rows('SELECT * FROM firing_alerts WHERE instance_id = ? ORDER BY alert_id', [
        instanceId,
      ]);
      return rows.map(toFiringAlert);
    });
  }

  /**
   * Records an alert as firing; an existing record is kept (its earlier `since`).
   *
   * @param alert - the firing record
   */
  putFiringAlert(alert: FiringAlert): Promise<void> {
    return this.#serial(async () => {
      await this.#connection.run(
        'INSERT INTO firing_alerts VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (instance_id, alert_id) DO NOTHING',
        [
          alert.instance_id,
          alert.alert_id,
          alert.rule,
          alert.severity,
          alert.instance_type,
          alert.since,
          alert.summary,
        ],
      );
    });
  }

  /**
   * Removes a firing record once.
   *
   * @param instanceId - EC2 instance id
   * @param alertId - stable alert id
   * @returns true when this call removed it; false when it was not there
   */
  takeFiringAlert(instanceId: string, alertId: string): Promise<boolean> {
    return this.#serial(async () => {
      const rows = await this.#rows(
        'DELETE FROM firing_alerts WHERE instance_id = ? AND alert_id = ? RETURNING alert_id',
        [instanceId, alertId],
      );
      return rows.length === 1;
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns gpuKey → idle since (ISO 8601, as marked)
   */
  getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#serial(async () => {
      const rows = await this.#rows(
        'SELECT gpu_key, "at" FROM idle_gpus WHERE instance_id = ? ORDER BY gpu_key',
        [instanceId],
      );
      return new Map(rows.map((r) => [r.gpu_key as string, r.at as string]));
    });
  }

  /**
   * Marks a GPU idle from `at`; an existing earlier mark is kept.
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*`
   * @param at - ISO 8601
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  markIdle(instanceId: string, gpuKey: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    return this.#serial(async () => {
      await this.#connection.run(
        'INSERT INTO idle_gpus VALUES (?, ?, ?, ?) ON CONFLICT (instance_id, gpu_key) DO UPDATE SET "at" = excluded."at", at_ms = excluded.at_ms WHERE excluded.at_ms < idle_gpus.at_ms',
        [instanceId, gpuKey, at, atMs],
      );
    });
  }

  /**
   * Clears a GPU's idle mark.
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*`
   */
  clearIdle(instanceId: string, gpuKey: string): Promise<void> {
    return this.#serial(async () => {
      await this.#connection.run('DELETE FROM idle_gpus WHERE instance_id = ? AND gpu_key = ?', [
        instanceId,
        gpuKey,
      ]);
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
