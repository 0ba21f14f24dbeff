import { DOUBLE, type DuckDBType, type DuckDBValue } from '@duckdb/node-api';
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
} from '../adapters/store-reads';
import {
  compareWasteRows,
  WASTE_AGGREGATES_SQL,
  WASTE_SLICE_SQL,
  wasteRangeProblem,
  wasteRowFromText,
} from '../adapters/waste-aggregates';
import { epochMicros } from '../contract';
import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
} from '../domain/measure-types';
import { StoreQueryError } from '../domain/port-errors';
import type {
  LastSeen,
  NodeJobMeans,
  RecentWindowsQuery,
  StoredGpuWindow,
  StoreWriteResult,
  TelemetryStore,
  WasteGroupQuery,
  WasteGroupRow,
  WasteQuery,
} from '../domain/ports';
import { gpuInstanceSlot, TELEMETRY_TABLE_KEYS } from '../domain/store-columns';
import type { StoreRows, WasteReportRow } from '../domain/types';
import { EFA_WINDOW_COLUMNS, EVENT_COLUMNS, GPU_WINDOW_COLUMNS, upsertSql } from './duckdb-schema';
import { type DuckDbSession, sqlValue as v } from './duckdb-session';

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

const WASTE_SQL = `SELECT instance_id, gpu_index, ${WASTE_SLICE_SQL},
  ${WASTE_AGGREGATES_SQL}
FROM ${GPU_RANGE} AS w
GROUP BY instance_id, gpu_index, gpu_instance_slot`;

/**
 * The telemetry port of the local store (docs/design.md §4, §12) on DuckDB: the tables `gpu_windows`,
 * `efa_windows`, `events` with the Timestream column names, on a session it shares with the state
 * port (`DuckDbStore` opens both).
 *
 * Writes are upserts keyed like Timestream records (dimensions + time) keeping the row with the
 * higher `seq`, so a retried batch is stored once and a newer batch replaces; one batch is one
 * transaction (nothing half-written).
 */
export class DuckDbTelemetryStore implements TelemetryStore {
  readonly #db: DuckDbSession;

  /** @param db - the open session */
  constructor(db: DuckDbSession) {
    this.#db = db;
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
      await this.#db.exec(
        upsertSql(table.name, table.columns, table.key, table.casts, chunk.length),
        chunk.flat(),
        chunk.flatMap(() => rowTypes) as DuckDBType[],
      );
    }
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
    const failure =
      'expected DuckDB to store the batch, it failed; nothing of the batch was stored, retry it';
    return this.#db.serial(() =>
      this.#db.transaction('write', failure, async () => {
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
            v(r.gpu_instance_id),
            v(r.gpu_instance_profile),
            gpuInstanceSlot(r),
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
        return { written: rows.gpu.length + rows.efa.length + rows.events.length, rejected: [] };
      }),
    );
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(WASTE_SQL, [query.from.toISOString(), query.to.toISOString()]);
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(wasteGroupSql(GPU_RANGE, query.by), [
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
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
   * Per instance and job, the straggler metric means of the GPU windows with `from ≤ time < to`.
   *
   * @param query - the range
   * @returns one entry per instance and job, by instance id then job
   * @throws {StoreQueryError} when the range is invalid
   */
  nodeJobMeans(query: WasteQuery): Promise<NodeJobMeans[]> {
    const problem = wasteRangeProblem(query.from, query.to);
    if (problem !== undefined) return Promise.reject(new StoreQueryError(problem));
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(nodeJobMeansSql(GPU_RANGE), [
        query.from.toISOString(),
        query.to.toISOString(),
      ]);
      return rows.map((r) => nodeJobMeansFrom((c) => r[c]));
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(lastSeenSql(GPU_RANGE), [
        query.from.toISOString(),
        query.to.toISOString(),
      ]);
      return rows.map((r) => lastSeenFrom((c) => r[c]));
    });
  }
}
