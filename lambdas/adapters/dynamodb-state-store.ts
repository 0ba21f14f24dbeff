import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  FiringAlert,
  InstanceState,
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
  ScopeFault,
  StateStore,
} from '../domain/ports';
import { DynamoDbAlertState } from './dynamodb-alert-state';
import { DynamoDbGpuMarks } from './dynamodb-gpu-marks';
import { DynamoDbIncidents } from './dynamodb-incidents';
import { DynamoDbRemediationState } from './dynamodb-remediation-state';
import { DynamoDbStateTable } from './dynamodb-state-table';

/** Options of {@link DynamoDbStateStore}. */
export interface DynamoDbStateStoreOptions {
  /** The DynamoDB client (the Lambda's region and role). */
  readonly client: DynamoDBClient;
  /** Table with string keys `pk` (partition) and `sk` (sort), TTL attribute `expires_at` (epoch s). */
  readonly tableName: string;
}

/**
 * The remediation/alert state on one DynamoDB table (docs/design.md §6, §8), with conditional writes so
 * two Lambdas never replace the same instance or send the same alert twice.
 *
 * Items (`pk`, `sk`):
 * - `instance#<id>`, `remediation`: the one replace/quarantine of an instance (written only if absent);
 * - `instance#<id>`, `reboot`: the instance's last reboot (reserved, then confirmed);
 * - `budget#<scope>`, `slot#<n>`: a taken budget slot (scopes `asg#<group>`, `fleet`,
 *   `reboot#asg#<group>`, `reboot#fleet`), TTL one budget window;
 * - `storm#<scope>`, `fault#<instance id>`: an instance's last fault in an incident scope
 *   (`asg#<group>`, `fleet`), TTL one storm window and an hour;
 * - `asg#<group>`, `<ISO at>#<instance id>`: group history for the rate limit, TTL 7 days;
 * - `instance#<id>`, `broken#<gpuKey>`: since when a GPU is broken (earliest kept);
 * - `alert#<id>`, `last_sent`: last send of an alert (claimed when older than the cooldown),
 *   TTL one day after its cooldown ends;
 * - `alert#<id>`, `lease`: the lease of the invocation publishing it now (publish-then-record), TTL one
 *   day after it lapses;
 * - `instance#<id>`, `firing#<alert id>`: a window alert that fired and has not resolved;
 * - `instance#<id>`, `idle#<gpuKey>`: since when a GPU is idle with no process (earliest kept).
 * Times are kept as given (`at`, returned unchanged) and as epoch ms (`at_ms`, compared).
 *
 * The work is split by concern: {@link DynamoDbGpuMarks} (broken and idle marks, the instance read),
 * {@link DynamoDbRemediationState} (records, reservations, budgets, group history) and
 * {@link DynamoDbAlertState} (sends, leases, firing records) and {@link DynamoDbIncidents} (faults
 * per incident scope), on one {@link DynamoDbStateTable}.
 */
export class DynamoDbStateStore implements StateStore {
  readonly #marks: DynamoDbGpuMarks;
  readonly #remediations: DynamoDbRemediationState;
  readonly #alerts: DynamoDbAlertState;
  readonly #incidents: DynamoDbIncidents;

  /** @param options - client and table name */
  constructor(options: DynamoDbStateStoreOptions) {
    const table = new DynamoDbStateTable(options.client, options.tableName);
    this.#marks = new DynamoDbGpuMarks(table);
    this.#remediations = new DynamoDbRemediationState(table);
    this.#alerts = new DynamoDbAlertState(table);
    this.#incidents = new DynamoDbIncidents(table);
  }

  /** {@inheritDoc DynamoDbGpuMarks.getInstanceState} */
  getInstanceState(instanceId: string): Promise<InstanceState> {
    return this.#marks.getInstanceState(instanceId);
  }

  /** {@inheritDoc DynamoDbGpuMarks.getBrokenSince} */
  getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#marks.getBrokenSince(instanceId);
  }

  /** {@inheritDoc DynamoDbGpuMarks.markBroken} */
  markBroken(instanceId: string, gpuKey: string, at: string): Promise<void> {
    return this.#marks.markBroken(instanceId, gpuKey, at);
  }

  /** {@inheritDoc DynamoDbGpuMarks.getIdleSince} */
  getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#marks.getIdleSince(instanceId);
  }

  /** {@inheritDoc DynamoDbGpuMarks.markIdle} */
  markIdle(instanceId: string, gpuKey: string, at: string): Promise<void> {
    return this.#marks.markIdle(instanceId, gpuKey, at);
  }

  /** {@inheritDoc DynamoDbGpuMarks.clearIdle} */
  clearIdle(instanceId: string, gpuKey: string): Promise<void> {
    return this.#marks.clearIdle(instanceId, gpuKey);
  }

  /** {@inheritDoc DynamoDbRemediationState.getRemediation} */
  getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#remediations.getRemediation(instanceId);
  }

  /** {@inheritDoc DynamoDbRemediationState.putRemediationIfAbsent} */
  putRemediationIfAbsent(record: RemediationRecord): Promise<boolean> {
    return this.#remediations.putRemediationIfAbsent(record);
  }

  /** {@inheritDoc DynamoDbIncidents.recordFault} */
  recordFault(scope: string, instanceId: string, at: string, windowS: number): Promise<ScopeFault[]> {
    return this.#incidents.recordFault(scope, instanceId, at, windowS);
  }

  /** {@inheritDoc DynamoDbRemediationState.getLastReboot} */
  getLastReboot(instanceId: string): Promise<RemediationRecord | undefined> {
    return this.#remediations.getLastReboot(instanceId);
  }

  /** {@inheritDoc DynamoDbRemediationState.reserveRemediation} */
  reserveRemediation(request: RemediationReservationRequest): Promise<RemediationReservation> {
    return this.#remediations.reserveRemediation(request);
  }

  /** {@inheritDoc DynamoDbRemediationState.confirmRemediation} */
  confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#remediations.confirmRemediation(record, leaseId);
  }

  /** {@inheritDoc DynamoDbRemediationState.releaseRemediation} */
  releaseRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    return this.#remediations.releaseRemediation(record, leaseId);
  }

  /** {@inheritDoc DynamoDbRemediationState.listRemediations} */
  listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    return this.#remediations.listRemediations(asgName, since);
  }

  /** {@inheritDoc DynamoDbAlertState.leaseAlert} */
  leaseAlert(alertId: string, at: string, cooldownS: number, leaseS: number): Promise<boolean> {
    return this.#alerts.leaseAlert(alertId, at, cooldownS, leaseS);
  }

  /** {@inheritDoc DynamoDbAlertState.confirmAlert} */
  confirmAlert(alertId: string, at: string, cooldownS: number): Promise<void> {
    return this.#alerts.confirmAlert(alertId, at, cooldownS);
  }

  /** {@inheritDoc DynamoDbAlertState.releaseAlertLease} */
  releaseAlertLease(alertId: string, at: string): Promise<void> {
    return this.#alerts.releaseAlertLease(alertId, at);
  }

  /** {@inheritDoc DynamoDbAlertState.claimAlert} */
  claimAlert(alertId: string, at: string, cooldownS: number): Promise<boolean> {
    return this.#alerts.claimAlert(alertId, at, cooldownS);
  }

  /** {@inheritDoc DynamoDbAlertState.releaseAlert} */
  releaseAlert(alertId: string, at: string): Promise<void> {
    return this.#alerts.releaseAlert(alertId, at);
  }

  /** {@inheritDoc DynamoDbAlertState.listFiringAlerts} */
  listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    return this.#alerts.listFiringAlerts(instanceId);
  }

  /** {@inheritDoc DynamoDbAlertState.putFiringAlert} */
  putFiringAlert(alert: FiringAlert): Promise<void> {
    return this.#alerts.putFiringAlert(alert);
  }

  /** {@inheritDoc DynamoDbAlertState.takeFiringAlert} */
  takeFiringAlert(instanceId: string, alertId: string): Promise<boolean> {
    return this.#alerts.takeFiringAlert(instanceId, alertId);
  }
}
