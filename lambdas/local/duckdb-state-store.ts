import { toFiringAlert } from '../adapters/firing-alert';
import { isoToMs } from '../adapters/iso-time';
import {
  budgetedGroup,
  budgetScopes,
  leaseIdFor,
  pickBudgetSlot,
  reservationTimes,
} from '../adapters/remediation-budget';
import type {
  FiringAlert,
  InstanceState,
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
  ScopeFault,
  StateStore,
} from '../domain/ports';
import { type DuckDbSession, sqlValue as v } from './duckdb-session';

/** The table of a record: `reboots` (the last reboot per instance) or `remediations` (replace/quarantine). */
function tableOf(action: RemediationRecord['action']): 'reboots' | 'remediations' {
  return action === 'reboot' ? 'reboots' : 'remediations';
}

/**
 * The state port of the local store (docs/design.md §6, §8) on DuckDB: remediation records and
 * budget slots, broken and idle marks, alert claims, leases and firing records, on a session it
 * shares with the telemetry port (`DuckDbStore` opens both). Every operation runs after the earlier
 * ones settled, so each check-then-write is atomic, as DynamoDB's conditional writes are.
 */
export class DuckDbStateStore implements StateStore {
  readonly #db: DuckDbSession;

  /** @param db - the open session */
  constructor(db: DuckDbSession) {
    this.#db = db;
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's replace/quarantine record, or undefined when none
   */
  getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#db.serial(async () => {
      const [r] = await this.#db.rows(
        "SELECT * FROM remediations WHERE instance_id = ? AND coalesce(state, 'done') = 'done'",
        [instanceId],
      );
      return r === undefined ? undefined : toRemediation(r);
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's last confirmed reboot, or undefined when none
   */
  getLastReboot(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#db.serial(async () => {
      const [r] = await this.#db.rows("SELECT * FROM reboots WHERE instance_id = ? AND state = 'done'", [
        instanceId,
      ]);
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
        'INSERT INTO remediations (instance_id, asg_name, action, "at", at_ms, rule, state) VALUES (?, ?, ?, ?, ?, ?, \'done\') ON CONFLICT (instance_id) DO NOTHING RETURNING instance_id',
        [record.instance_id, v(record.asg_name), record.action, record.at, atMs, record.rule],
      );
      return rows.length === 1;
    });
  }

  /**
   * Reserves a remediation in one DuckDB transaction (every operation of this store runs one at a
   * time, so the read of the instance and the budget slots and the writes are one atomic step):
   * refused when the instance has a `done` record (a reboot: younger than `repeatAfterS`, in table
   * `reboots`) or a live `pending` lease, or when the group's or
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
    const failure = 'expected DuckDB to reserve the remediation, it failed; nothing was reserved, retry it';
    return this.#db.serial(() =>
      this.#db.transaction('reserveRemediation', failure, async (): Promise<RemediationReservation> => {
        const table = tableOf(record.action);
        const [held] = await this.#db.rows(
          `SELECT coalesce(state, 'done') AS state, lease_until_ms, at_ms FROM ${table} WHERE instance_id = ?`,
          [record.instance_id],
        );
        const repeatCutoffMs = atMs - (request.repeatAfterS ?? 0) * 1000;
        const stale = record.action === 'reboot' && Number(held?.at_ms) <= repeatCutoffMs;
        if (held?.state === 'done' && !stale) return { granted: false, reason: 'remediated' };
        if (held?.state === 'pending' && Number(held.lease_until_ms) > atMs) {
          return { granted: false, reason: 'in_progress' };
        }
        const taken: [string, number][] = [];
        if (spend !== undefined) {
          for (const { scope, limit, refusal } of budgetScopes(spend)) {
            const slots = await this.#db.rows('SELECT slot, at_ms FROM remediation_slots WHERE scope = ?', [
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
        await this.#db.exec(
          `INSERT OR REPLACE INTO ${table} (instance_id, asg_name, action, "at", at_ms, rule, state, lease_id, lease_until_ms)
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
          await this.#db.exec('INSERT OR REPLACE INTO remediation_slots VALUES (?, ?, ?, ?, ?)', [
            scope,
            slot,
            record.instance_id,
            leaseId,
            atMs,
          ]);
        }
        return { granted: true, leaseId };
      }),
    );
  }

  /**
   * Confirms a reservation: its record becomes `done` (what {@link getRemediation} returns).
   *
   * @param record - the reserved remediation
   * @param leaseId - the lease id the reservation granted
   * @throws {StoreUnavailableError} when DuckDB fails
   */
  confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#db.serial(async () => {
      await this.#db.run(
        'confirmRemediation',
        `UPDATE ${tableOf(record.action)} SET state = 'done', lease_until_ms = NULL WHERE instance_id = ? AND lease_id = ? AND state = 'pending'`,
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
    return this.#db.serial(async () => {
      await this.#db.run(
        'releaseRemediation',
        `DELETE FROM ${tableOf(record.action)} WHERE instance_id = ? AND lease_id = ? AND state = 'pending'`,
        [record.instance_id, leaseId],
      );
      await this.#db.run('releaseRemediation', 'DELETE FROM remediation_slots WHERE lease_id = ?', [leaseId]);
    });
  }

  /**
   * Keeps the instance's latest fault in the scope (a late batch never moves it back), then reads
   * the scope back.
   *
   * @param scope - the incident scope (`asg#<group>` or `fleet`)
   * @param instanceId - EC2 instance id
   * @param at - the fault's time, ISO 8601
   * @param windowS - how far back a fault counts, s > 0
   * @returns the scope's instances whose last fault is in `(at − windowS, at]`, oldest first
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  recordFault(scope: string, instanceId: string, at: string, windowS: number): Promise<ScopeFault[]> {
    const atMs = isoToMs(at, 'at');
    return this.#db.serial(async () => {
      await this.#db.run(
        'recordFault',
        `INSERT INTO scope_faults VALUES (?, ?, ?, ?) ON CONFLICT (scope, instance_id)
           DO UPDATE SET "at" = excluded."at", at_ms = excluded.at_ms WHERE excluded.at_ms > scope_faults.at_ms`,
        [scope, instanceId, at, atMs],
      );
      const rows = await this.#db.rows(
        'SELECT instance_id, "at" FROM scope_faults WHERE scope = ? AND at_ms > ? AND at_ms <= ? ORDER BY at_ms, instance_id',
        [scope, atMs - windowS * 1000, atMs],
      );
      return rows.map((r) => ({ instance_id: r.instance_id as string, at: r.at as string }));
    });
  }

  /**
   * @param asgName - Auto Scaling group name
   * @param since - inclusive lower bound on `at`
   * @returns the group's `replace` records with `at ≥ since`, oldest first
   */
  listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
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
    return this.#db.serial(async () => {
      await this.#db.exec(
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
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
    return this.#db.serial(() =>
      this.#db.run('releaseAlert', 'DELETE FROM alert_claims WHERE alert_id = ? AND at_ms = ?', [
        alertId,
        atMs,
      ]),
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
    return this.#db.serial(async () => {
      const [sent] = await this.#db.rows('SELECT at_ms FROM alert_claims WHERE alert_id = ?', [alertId]);
      if (sent !== undefined && Number(sent.at_ms) > atMs - cooldownS * 1000) return false;
      const [lease] = await this.#db.rows('SELECT lease_ms FROM alert_leases WHERE alert_id = ?', [alertId]);
      if (lease !== undefined && Number(lease.lease_ms) > atMs - leaseS * 1000) return false;
      await this.#db.exec(
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
    return this.#db.serial(async () => {
      await this.#db.exec(
        'INSERT INTO alert_claims VALUES (?, ?, ?) ON CONFLICT (alert_id) DO UPDATE SET "at" = excluded."at", at_ms = excluded.at_ms',
        [alertId, at, atMs],
      );
      await this.#db.exec('DELETE FROM alert_leases WHERE alert_id = ? AND lease_ms = ?', [alertId, atMs]);
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
    return this.#db.serial(async () => {
      await this.#db.exec('DELETE FROM alert_leases WHERE alert_id = ? AND lease_ms = ?', [alertId, atMs]);
    });
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's firing window alerts, by alert id
   */
  listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
        'SELECT * FROM firing_alerts WHERE instance_id = ? ORDER BY alert_id',
        [instanceId],
      );
      return rows.map(toFiringAlert);
    });
  }

  /**
   * Records an alert as firing; an existing record is kept (its earlier `since`).
   *
   * @param alert - the firing record
   */
  putFiringAlert(alert: FiringAlert): Promise<void> {
    return this.#db.serial(async () => {
      await this.#db.exec(
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
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
    return this.#db.serial(async () => {
      const rows = await this.#db.rows(
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
    return this.#db.serial(async () => {
      await this.#db.exec(
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
    return this.#db.serial(async () => {
      await this.#db.exec('DELETE FROM idle_gpus WHERE instance_id = ? AND gpu_key = ?', [
        instanceId,
        gpuKey,
      ]);
    });
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
