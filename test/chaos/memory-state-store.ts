import {
  budgetedGroup,
  budgetScopes,
  leaseIdFor,
  pickBudgetSlot,
  reservationTimes,
} from '../../lambdas/adapters/remediation-budget';
import type {
  FiringAlert,
  InstanceState,
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
  ScopeFault,
  StateStore,
} from '../../lambdas/domain/ports';

/** The map key of a record: a reboot is kept apart from the instance's replace/quarantine. */
function keyOf(instanceId: string, action: RemediationRecord['action']): string {
  return action === 'reboot' ? `${instanceId}#reboot` : instanceId;
}

interface Held {
  readonly record: RemediationRecord;
  state: 'pending' | 'done';
  readonly leaseId: string;
  readonly leaseUntilMs: number;
}

/**
 * A `StateStore` in memory for the fuzz runs, where thousands of batches must go through the real
 * handler quickly and the state adapter is not what is tested. It passes the same conformance
 * suite as the DynamoDB and DuckDB adapters (test/chaos/memory-state-store.test.ts), so the
 * handler sees the port's semantics, not a looser stand-in. Every method runs to completion
 * without awaiting, so each is atomic.
 */
export class MemoryStateStore implements StateStore {
  readonly remediations = new Map<string, Held>();
  readonly slots = new Map<string, { slot: number; at_ms: number; leaseId: string }[]>();
  readonly broken = new Map<string, Map<string, string>>();
  readonly claims = new Map<string, number>();
  readonly leases = new Map<string, number>();
  readonly firing = new Map<string, Map<string, FiringAlert>>();
  readonly idle = new Map<string, Map<string, string>>();
  readonly faults = new Map<string, Map<string, string>>();

  async recordFault(scope: string, instanceId: string, at: string, windowS: number): Promise<ScopeFault[]> {
    const faults = this.faults.get(scope) ?? new Map<string, string>();
    const seen = faults.get(instanceId);
    if (seen === undefined || Date.parse(seen) < Date.parse(at)) faults.set(instanceId, at);
    this.faults.set(scope, faults);
    const atMs = Date.parse(at);
    return [...faults]
      .filter(([, t]) => Date.parse(t) > atMs - windowS * 1000 && Date.parse(t) <= atMs)
      .sort(([a, t], [b, u]) => Date.parse(t) - Date.parse(u) || a.localeCompare(b))
      .map(([instance_id, t]) => ({ instance_id, at: t }));
  }

  async getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    const held = this.remediations.get(instanceId);
    return held?.state === 'done' ? held.record : undefined;
  }

  async getLastReboot(instanceId: string): Promise<RemediationRecord | undefined> {
    const held = this.remediations.get(keyOf(instanceId, 'reboot'));
    return held?.state === 'done' ? held.record : undefined;
  }

  async putRemediationIfAbsent(record: RemediationRecord): Promise<boolean> {
    if (this.remediations.has(record.instance_id)) return false;
    this.remediations.set(record.instance_id, { record, state: 'done', leaseId: '', leaseUntilMs: 0 });
    return true;
  }

  async reserveRemediation(request: RemediationReservationRequest): Promise<RemediationReservation> {
    const { record, budget } = request;
    const { atMs, leaseUntilMs, cutoffMs } = reservationTimes(record, request.leaseS, budget);
    const key = keyOf(record.instance_id, record.action);
    const held = this.remediations.get(key);
    const stale =
      record.action === 'reboot' &&
      Date.parse(held?.record.at ?? '') <= atMs - (request.repeatAfterS ?? 0) * 1000;
    if (held?.state === 'done' && !stale) return { granted: false, reason: 'remediated' };
    if (held?.state === 'pending' && held.leaseUntilMs > atMs)
      return { granted: false, reason: 'in_progress' };
    const leaseId = leaseIdFor(record);
    const taken: [string, number][] = [];
    const spend = budgetedGroup(record, budget);
    if (spend !== undefined) {
      for (const { scope, limit, refusal } of budgetScopes(spend)) {
        const pick = pickBudgetSlot(this.slots.get(scope) ?? [], limit, cutoffMs);
        if (pick.free === undefined) return { granted: false, reason: refusal, used: pick.used, limit };
        taken.push([scope, pick.free]);
      }
    }
    this.remediations.set(key, { record, state: 'pending', leaseId, leaseUntilMs });
    for (const [scope, slot] of taken) {
      const kept = (this.slots.get(scope) ?? []).filter((s) => s.slot !== slot);
      this.slots.set(scope, [...kept, { slot, at_ms: atMs, leaseId }]);
    }
    return { granted: true, leaseId };
  }

  async confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    const held = this.remediations.get(keyOf(record.instance_id, record.action));
    if (held?.leaseId === leaseId && held.state === 'pending') held.state = 'done';
  }

  async releaseRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    const key = keyOf(record.instance_id, record.action);
    const held = this.remediations.get(key);
    if (held?.leaseId === leaseId && held.state === 'pending') this.remediations.delete(key);
    for (const [scope, slots] of this.slots)
      this.slots.set(
        scope,
        slots.filter((s) => s.leaseId !== leaseId),
      );
  }

  async listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    return [...this.remediations.values()]
      .filter(
        (h) =>
          h.state === 'done' &&
          h.record.asg_name === asgName &&
          h.record.action === 'replace' &&
          Date.parse(h.record.at) >= since.getTime(),
      )
      .map((h) => h.record);
  }

  async getInstanceState(instanceId: string): Promise<InstanceState> {
    return {
      broken: await this.getBrokenSince(instanceId),
      idle: await this.getIdleSince(instanceId),
      firing: await this.listFiringAlerts(instanceId),
    };
  }

  async getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return new Map(this.broken.get(instanceId));
  }

  async markBroken(instanceId: string, gpuKey: string, at: string): Promise<void> {
    const marks = this.broken.get(instanceId) ?? new Map<string, string>();
    const seen = marks.get(gpuKey);
    if (seen === undefined || Date.parse(at) < Date.parse(seen)) marks.set(gpuKey, at);
    this.broken.set(instanceId, marks);
  }

  async claimAlert(alertId: string, at: string, cooldownS: number): Promise<boolean> {
    const atMs = Date.parse(at);
    const last = this.claims.get(alertId);
    if (last !== undefined && last > atMs - cooldownS * 1000) return false;
    this.claims.set(alertId, atMs);
    return true;
  }

  async releaseAlert(alertId: string, at: string): Promise<void> {
    if (this.claims.get(alertId) === Date.parse(at)) this.claims.delete(alertId);
  }

  async leaseAlert(alertId: string, at: string, cooldownS: number, leaseS: number): Promise<boolean> {
    const atMs = Date.parse(at);
    const sent = this.claims.get(alertId);
    if (sent !== undefined && sent > atMs - cooldownS * 1000) return false;
    const lease = this.leases.get(alertId);
    if (lease !== undefined && lease > atMs - leaseS * 1000) return false;
    this.leases.set(alertId, atMs);
    return true;
  }

  async confirmAlert(alertId: string, at: string, _cooldownS: number): Promise<void> {
    const atMs = Date.parse(at);
    this.claims.set(alertId, atMs);
    if (this.leases.get(alertId) === atMs) this.leases.delete(alertId);
  }

  async releaseAlertLease(alertId: string, at: string): Promise<void> {
    if (this.leases.get(alertId) === Date.parse(at)) this.leases.delete(alertId);
  }

  async listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    return [...(this.firing.get(instanceId)?.values() ?? [])].sort((a, b) =>
      a.alert_id < b.alert_id ? -1 : a.alert_id > b.alert_id ? 1 : 0,
    );
  }

  async putFiringAlert(alert: FiringAlert): Promise<void> {
    const alerts = this.firing.get(alert.instance_id) ?? new Map<string, FiringAlert>();
    if (!alerts.has(alert.alert_id)) alerts.set(alert.alert_id, alert);
    this.firing.set(alert.instance_id, alerts);
  }

  async takeFiringAlert(instanceId: string, alertId: string): Promise<boolean> {
    return this.firing.get(instanceId)?.delete(alertId) ?? false;
  }

  async getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return new Map(this.idle.get(instanceId));
  }

  async markIdle(instanceId: string, gpuKey: string, at: string): Promise<void> {
    const marks = this.idle.get(instanceId) ?? new Map<string, string>();
    const seen = marks.get(gpuKey);
    if (seen === undefined || Date.parse(at) < Date.parse(seen)) marks.set(gpuKey, at);
    this.idle.set(instanceId, marks);
  }

  async clearIdle(instanceId: string, gpuKey: string): Promise<void> {
    this.idle.get(instanceId)?.delete(gpuKey);
  }
}
