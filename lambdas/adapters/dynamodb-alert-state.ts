import { marshall } from '@aws-sdk/util-dynamodb';
import type { FiringAlert } from '../domain/ports';
import type { DynamoDbStateTable } from './dynamodb-state-table';
import { toFiringAlert } from './firing-alert';
import { isoToMs } from './iso-time';

/** Seconds an alert claim is kept after its cooldown ends (then TTL deletes it; a missing claim is claimable). */
const ALERT_CLAIM_TTL_MARGIN_S = 24 * 3600;

/**
 * An alert item (`alert#<id>`, `last_sent` or `lease`) at `at`, with its time as given and in epoch ms,
 * kept by TTL one day after `holdS` (the cooldown or the lease) ends.
 */
function alertItem(alertId: string, sk: 'last_sent' | 'lease', at: string, holdS: number) {
  const atMs = isoToMs(at, 'at');
  return marshall({
    pk: `alert#${alertId}`,
    sk,
    at,
    at_ms: atMs,
    expires_at: Math.ceil(atMs / 1000) + Math.ceil(holdS) + ALERT_CLAIM_TTL_MARGIN_S,
  });
}

/**
 * The alert part of the DynamoDB state store: sends (`alert#<id>`, `last_sent`), leases
 * (`alert#<id>`, `lease`) and firing records (`instance#<id>`, `firing#<alert id>`), each guarded by
 * a conditional write so two Lambdas never send the same alert twice. See `DynamoDbStateStore` for
 * the table's item layout.
 */
export class DynamoDbAlertState {
  readonly #table: DynamoDbStateTable;

  /** @param table - the state table */
  constructor(table: DynamoDbStateTable) {
    this.#table = table;
  }

  /**
   * Leases an alert send: a conditional put of `alert#<id>`/`lease` (`attribute_not_exists(pk) OR #at <=
   * :expired`, a lease older than `leaseS` is abandoned), then a strongly consistent read of the last
   * send; within the cooldown the lease is freed again and the answer is false.
   *
   * @param alertId - stable alert id
   * @param at - send time, ISO 8601
   * @param cooldownS - seconds between sends of the same alert, ≥ 0
   * @param leaseS - seconds after which a lease is abandoned (longer than the Lambda timeout)
   * @returns true when this invocation holds the lease and the alert is due
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async leaseAlert(alertId: string, at: string, cooldownS: number, leaseS: number): Promise<boolean> {
    const atMs = isoToMs(at, 'at');
    const leased = await this.#table.putIf(
      {
        Item: alertItem(alertId, 'lease', at, leaseS),
        ConditionExpression: 'attribute_not_exists(pk) OR #at <= :expired',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':expired': atMs - leaseS * 1000 }),
      },
      'PutItem alert lease',
    );
    if (!leased) return false;
    let lastMs: number | undefined;
    try {
      const last = await this.#table.get(
        marshall({ pk: `alert#${alertId}`, sk: 'last_sent' }),
        'GetItem alert last send',
      );
      lastMs = last === undefined ? undefined : Number(last.at_ms);
    } catch (error) {
      await this.releaseAlertLease(alertId, at);
      throw error;
    }
    if (lastMs !== undefined && lastMs > atMs - cooldownS * 1000) {
      await this.releaseAlertLease(alertId, at);
      return false;
    }
    return true;
  }

  /**
   * Records the send (an unconditional put of `last_sent`: this invocation holds the lease), then frees
   * the lease taken at `at`.
   *
   * @param alertId - stable alert id
   * @param at - the lease's time, ISO 8601
   * @param cooldownS - the cooldown, s (for the TTL)
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async confirmAlert(alertId: string, at: string, cooldownS: number): Promise<void> {
    await this.#table.put(alertItem(alertId, 'last_sent', at, cooldownS), 'PutItem alert send');
    await this.releaseAlertLease(alertId, at);
  }

  /**
   * Frees the lease taken at `at` (`#at = :at`: a lease taken over by another invocation is left alone).
   *
   * @param alertId - stable alert id
   * @param at - the lease's time, ISO 8601
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async releaseAlertLease(alertId: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    await this.#table.deleteIf(
      {
        Key: marshall({ pk: `alert#${alertId}`, sk: 'lease' }),
        ConditionExpression: '#at = :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': atMs }),
      },
      'DeleteItem alert lease',
    );
  }

  /**
   * Claims an alert send (`attribute_not_exists(pk) OR #at <= :cutoff`, cutoff = at − cooldown).
   *
   * @param alertId - stable alert id
   * @param at - send time, ISO 8601
   * @param cooldownS - seconds between sends of the same alert, ≥ 0
   * @returns true (and records `at`) when never sent or last sent at or before the cutoff; false otherwise
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async claimAlert(alertId: string, at: string, cooldownS: number): Promise<boolean> {
    const atMs = isoToMs(at, 'at');
    return this.#table.putIf(
      {
        Item: alertItem(alertId, 'last_sent', at, cooldownS),
        ConditionExpression: 'attribute_not_exists(pk) OR #at <= :cutoff',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':cutoff': atMs - cooldownS * 1000 }),
      },
      'PutItem alert claim',
    );
  }

  /**
   * Gives back an alert claim: deletes `alert#<id>`, `last_sent` on condition `#at = :at` (the
   * claim made at `at`; a later one is kept, a failed condition is fine).
   *
   * @param alertId - stable alert id
   * @param at - the claim's time, ISO 8601, as given to {@link claimAlert}
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async releaseAlert(alertId: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    await this.#table.deleteIf(
      {
        Key: marshall({ pk: `alert#${alertId}`, sk: 'last_sent' }),
        ConditionExpression: '#at = :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': atMs }),
      },
      'DeleteItem alert claim',
    );
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's firing window alerts, by alert id
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    const items = await this.#table.query(
      {
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
        ExpressionAttributeValues: marshall({ ':p': `instance#${instanceId}`, ':b': 'firing#' }),
        ConsistentRead: true,
      },
      'Query firing',
    );
    return items.map(toFiringAlert);
  }

  /**
   * Records an alert as firing if it is not already (`attribute_not_exists(pk)`: the earlier `since` stays).
   *
   * @param alert - the firing record
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async putFiringAlert(alert: FiringAlert): Promise<void> {
    await this.#table.putIf(
      {
        Item: marshall({ pk: `instance#${alert.instance_id}`, sk: `firing#${alert.alert_id}`, ...alert }),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
      'PutItem firing',
    );
  }

  /**
   * Deletes a firing record if it exists (`attribute_exists(pk)`), so one invocation resolves it.
   *
   * @param instanceId - EC2 instance id
   * @param alertId - stable alert id
   * @returns true when this call deleted it
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  takeFiringAlert(instanceId: string, alertId: string): Promise<boolean> {
    return this.#table.deleteIf(
      {
        Key: marshall({ pk: `instance#${instanceId}`, sk: `firing#${alertId}` }),
        ConditionExpression: 'attribute_exists(pk)',
      },
      'DeleteItem firing',
    );
  }
}
