import { LEDGER_FIELD_NAMES } from '../domain/measure-types';
import { StoreQueryError, StoreUnavailableError } from '../domain/port-errors';
import type {
  FiringAlert,
  InstanceState,
  LastSeen,
  NodeJobMeans,
  PendingRemediation,
  RecentWindowsQuery,
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
  ScopeFault,
  StateStore,
  StoredGpuWindow,
  StoreWriteResult,
  TelemetryStore,
  WasteGroupQuery,
  WasteGroupRow,
  WasteQuery,
} from '../domain/ports';
import { GPU_WINDOW_KEY_COLUMNS } from '../domain/store-columns';
import type { StoreRows, WasteReportRow } from '../domain/types';
import { DuckDbSession } from './duckdb-session';
import { DuckDbStateStore } from './duckdb-state-store';
import { DuckDbTelemetryStore } from './duckdb-telemetry-store';

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

/**
 * The embedded local store (docs/design.md §4, §12): one DuckDB file holding both ports, the
 * telemetry tables ({@link DuckDbTelemetryStore}) and the remediation/alert state
 * ({@link DuckDbStateStore}), on one connection where every operation runs after the earlier ones
 * settled. Pass the same store as `store` and `state`.
 *
 * @example
 * const store = await DuckDbStore.open('.gpu-sentinel/store.duckdb');
 * await store.write(rows);
 * const report = await store.queryWaste({ from, to });
 * await store.close();
 */
export class DuckDbStore implements TelemetryStore, StateStore {
  readonly #db: DuckDbSession;
  readonly #telemetry: DuckDbTelemetryStore;
  readonly #state: DuckDbStateStore;

  private constructor(db: DuckDbSession) {
    this.#db = db;
    this.#telemetry = new DuckDbTelemetryStore(db);
    this.#state = new DuckDbStateStore(db);
  }

  /**
   * Opens (or creates) a store: creates the parent directories and the tables when missing.
   *
   * @param path - database file path, or `:memory:` for a store that lives as long as the object
   * @returns the open store
   * @throws {StoreUnavailableError} when the file cannot be created or opened (e.g. locked by another process)
   */
  static async open(path: string): Promise<DuckDbStore> {
    return new DuckDbStore(await DuckDbSession.open(path));
  }

  /** The store's DuckDB session, for local read extensions (the CUR price overlay, `duckdb-cur.ts`). */
  get session(): DuckDbSession {
    return this.#db;
  }

  /**
   * Opens an existing store read-only (reports): creates, upgrades and writes nothing, and checks
   * that the file is a gpu-sentinel store whose `gpu_windows` has the columns the reads name.
   *
   * @param path - the store file `gpu-sentinel local --db` wrote
   * @returns the open store; its writes fail with {@link StoreUnavailableError}
   * @throws {StoreUnavailableError} naming the file when it is not a DuckDB database, has no
   *   `gpu_windows` table, or lacks columns a newer gpu-sentinel added (open it once with
   *   `gpu-sentinel local --db` to upgrade it)
   */
  static async openReadOnly(path: string): Promise<DuckDbStore> {
    const db = await DuckDbSession.open(path, { readOnly: true });
    const operation = `open ${path} read-only`;
    try {
      const rows = await db.serial(() =>
        db.rows(
          "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = 'gpu_windows'",
        ),
      );
      const present = new Set(rows.map((r) => String(r.column_name)));
      if (present.size === 0) {
        throw new StoreUnavailableError(
          operation,
          `expected a gpu-sentinel store, and ${path} is a DuckDB database without a gpu_windows table; name the file \`gpu-sentinel local --db\` wrote`,
        );
      }
      const missing = [...GPU_WINDOW_KEY_COLUMNS, ...LEDGER_FIELD_NAMES].filter((c) => !present.has(c));
      if (missing.length > 0) {
        throw new StoreUnavailableError(
          operation,
          `expected gpu_windows to have the columns the report reads, and ${path} lacks ${missing.join(', ')} (written by an older gpu-sentinel); open it once with \`gpu-sentinel local --db ${path}\` to upgrade it`,
        );
      }
    } catch (error) {
      await db.close();
      throw error;
    }
    return new DuckDbStore(db);
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
    return this.#db.serial(async () => {
      if (table === 'efa_windows') {
        const rows = await this.#db.rows(
          'SELECT * EXCLUDE (deltas), CAST(deltas AS JSON)::VARCHAR AS deltas FROM efa_windows ORDER BY ALL',
        );
        return rows.map((r) => ({ ...r, deltas: JSON.parse(r.deltas as string) as unknown }));
      }
      if (table === 'events') {
        return this.#db.rows(
          "SELECT * REPLACE (strftime(time, '%Y-%m-%dT%H:%M:%S.%fZ') AS time) FROM events ORDER BY instance_id, kind, gpu_slot, events.time",
        );
      }
      return this.#db.rows(`SELECT * FROM ${table} ORDER BY ALL`);
    });
  }

  /** {@inheritDoc DuckDbTelemetryStore.write} */
  write(rows: StoreRows): Promise<StoreWriteResult> {
    return this.#telemetry.write(rows);
  }

  /** {@inheritDoc DuckDbTelemetryStore.queryWaste} */
  queryWaste(query: WasteQuery): Promise<WasteReportRow[]> {
    return this.#telemetry.queryWaste(query);
  }

  /** {@inheritDoc DuckDbTelemetryStore.queryWasteBy} */
  queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]> {
    return this.#telemetry.queryWasteBy(query);
  }

  /** {@inheritDoc DuckDbTelemetryStore.recentWindows} */
  recentWindows(query: RecentWindowsQuery): Promise<StoredGpuWindow[]> {
    return this.#telemetry.recentWindows(query);
  }

  /** {@inheritDoc DuckDbTelemetryStore.nodeJobMeans} */
  nodeJobMeans(query: WasteQuery): Promise<NodeJobMeans[]> {
    return this.#telemetry.nodeJobMeans(query);
  }

  /** {@inheritDoc DuckDbTelemetryStore.lastSeen} */
  lastSeen(query: WasteQuery): Promise<LastSeen[]> {
    return this.#telemetry.lastSeen(query);
  }

  /** {@inheritDoc DuckDbStateStore.getRemediation} */
  getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#state.getRemediation(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.putRemediationIfAbsent} */
  putRemediationIfAbsent(record: RemediationRecord): Promise<boolean> {
    return this.#state.putRemediationIfAbsent(record);
  }

  /** {@inheritDoc DuckDbStateStore.recordFault} */
  recordFault(scope: string, instanceId: string, at: string, windowS: number): Promise<ScopeFault[]> {
    return this.#state.recordFault(scope, instanceId, at, windowS);
  }

  /** {@inheritDoc DuckDbStateStore.getPendingRemediation} */
  getPendingRemediation(instanceId: string): Promise<PendingRemediation | undefined> {
    return this.#state.getPendingRemediation(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.putPendingRemediation} */
  putPendingRemediation(pending: PendingRemediation): Promise<boolean> {
    return this.#state.putPendingRemediation(pending);
  }

  /** {@inheritDoc DuckDbStateStore.takePendingRemediation} */
  takePendingRemediation(instanceId: string, decidedAt: string): Promise<boolean> {
    return this.#state.takePendingRemediation(instanceId, decidedAt);
  }

  /** {@inheritDoc DuckDbStateStore.getLastReboot} */
  getLastReboot(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#state.getLastReboot(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.reserveRemediation} */
  reserveRemediation(request: RemediationReservationRequest): Promise<RemediationReservation> {
    return this.#state.reserveRemediation(request);
  }

  /** {@inheritDoc DuckDbStateStore.confirmRemediation} */
  confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#state.confirmRemediation(record, leaseId);
  }

  /** {@inheritDoc DuckDbStateStore.releaseRemediation} */
  releaseRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#state.releaseRemediation(record, leaseId);
  }

  /** {@inheritDoc DuckDbStateStore.listRemediations} */
  listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    return this.#state.listRemediations(asgName, since);
  }

  /** {@inheritDoc DuckDbStateStore.getInstanceState} */
  getInstanceState(instanceId: string): Promise<InstanceState> {
    return this.#state.getInstanceState(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.getBrokenSince} */
  getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#state.getBrokenSince(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.markBroken} */
  markBroken(instanceId: string, gpuKey: string, at: string): Promise<void> {
    return this.#state.markBroken(instanceId, gpuKey, at);
  }

  /** {@inheritDoc DuckDbStateStore.claimAlert} */
  claimAlert(alertId: string, at: string, cooldownS: number): Promise<boolean> {
    return this.#state.claimAlert(alertId, at, cooldownS);
  }

  /** {@inheritDoc DuckDbStateStore.releaseAlert} */
  releaseAlert(alertId: string, at: string): Promise<void> {
    return this.#state.releaseAlert(alertId, at);
  }

  /** {@inheritDoc DuckDbStateStore.leaseAlert} */
  leaseAlert(alertId: string, at: string, cooldownS: number, leaseS: number): Promise<boolean> {
    return this.#state.leaseAlert(alertId, at, cooldownS, leaseS);
  }

  /** {@inheritDoc DuckDbStateStore.confirmAlert} */
  confirmAlert(alertId: string, at: string, _cooldownS: number): Promise<void> {
    return this.#state.confirmAlert(alertId, at, _cooldownS);
  }

  /** {@inheritDoc DuckDbStateStore.releaseAlertLease} */
  releaseAlertLease(alertId: string, at: string): Promise<void> {
    return this.#state.releaseAlertLease(alertId, at);
  }

  /** {@inheritDoc DuckDbStateStore.listFiringAlerts} */
  listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    return this.#state.listFiringAlerts(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.putFiringAlert} */
  putFiringAlert(alert: FiringAlert): Promise<void> {
    return this.#state.putFiringAlert(alert);
  }

  /** {@inheritDoc DuckDbStateStore.takeFiringAlert} */
  takeFiringAlert(instanceId: string, alertId: string): Promise<boolean> {
    return this.#state.takeFiringAlert(instanceId, alertId);
  }

  /** {@inheritDoc DuckDbStateStore.getIdleSince} */
  getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#state.getIdleSince(instanceId);
  }

  /** {@inheritDoc DuckDbStateStore.markIdle} */
  markIdle(instanceId: string, gpuKey: string, at: string): Promise<void> {
    return this.#state.markIdle(instanceId, gpuKey, at);
  }

  /** {@inheritDoc DuckDbStateStore.clearIdle} */
  clearIdle(instanceId: string, gpuKey: string): Promise<void> {
    return this.#state.clearIdle(instanceId, gpuKey);
  }

  /**
   * Waits for the operations under way, then closes the connection and the database; later calls
   * reject with {@link StoreUnavailableError}. Closing twice is fine.
   */
  close(): Promise<void> {
    return this.#db.close();
  }
}
