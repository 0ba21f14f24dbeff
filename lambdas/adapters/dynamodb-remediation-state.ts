import {
  type AttributeValue,
  TransactionCanceledException,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { StoreUnavailableError } from '../domain/port-errors';
import type {
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
} from '../domain/ports';
import { GROUP_HISTORY_TTL_S } from './constants';
import type { DynamoDbStateTable } from './dynamodb-state-table';
import { isoToMs } from './iso-time';
import {
  type BudgetSlot,
  budgetedGroup,
  budgetScopes,
  leaseIdFor,
  pickBudgetSlot,
  reservationTimes,
  scopesOf,
} from './remediation-budget';

/**
 * Most optimistic tries of one reservation: each lost race means another invocation took a slot,
 * so after `groupLimit + fleetLimit` losses the budget is spent; the rest absorbs transaction conflicts.
 */
const RESERVATION_EXTRA_ATTEMPTS = 4;

/** The sort key of a record's item: `reboot` for a reboot, else `remediation`. */
function sortKeyOf(action: RemediationRecord['action']): string {
  return action === 'reboot' ? 'reboot' : 'remediation';
}

/** The key of a record's item, marshalled. */
function recordKey(instanceId: string, action: RemediationRecord['action']): Record<string, AttributeValue> {
  return marshall({ pk: `instance#${instanceId}`, sk: sortKeyOf(action) });
}

/**
 * The `instance#<id>`, `remediation` (or `reboot`) item of a record, with the reservation fields
 * given; a reboot item also keeps `at_ms` (its repeat condition compares it).
 */
function remediationItem(
  record: RemediationRecord,
  reservation: Record<string, string | number>,
): Record<string, AttributeValue> {
  return marshall(
    {
      pk: `instance#${record.instance_id}`,
      sk: sortKeyOf(record.action),
      ...(record.action === 'reboot' ? { at_ms: isoToMs(record.at, 'record.at') } : {}),
      instance_id: record.instance_id,
      asg_name: record.asg_name,
      action: record.action,
      at: record.at,
      rule: record.rule,
      ...reservation,
    },
    { removeUndefinedValues: true },
  );
}

/** An item → remediation record. */
function toRecord(item: Record<string, unknown>): RemediationRecord {
  return {
    instance_id: item.instance_id as string,
    ...(typeof item.asg_name === 'string' ? { asg_name: item.asg_name } : {}),
    action: item.action as RemediationRecord['action'],
    at: item.at as string,
    rule: item.rule as string,
  };
}

/**
 * The remediation part of the DynamoDB state store: the one replace/quarantine of an instance
 * (`instance#<id>`, `remediation`), reserved within the group and fleet budgets (`budget#<scope>`,
 * `slot#<n>`) in one conditional transaction, and the group history the rate limit reads
 * (`asg#<group>`, `<ISO at>#<instance id>`). See `DynamoDbStateStore` for the table's item layout.
 */
export class DynamoDbRemediationState {
  readonly #table: DynamoDbStateTable;

  /** @param table - the state table */
  constructor(table: DynamoDbStateTable) {
    this.#table = table;
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's replace/quarantine record (strongly consistent read), or undefined
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    const item = await this.#table.get(
      marshall({ pk: `instance#${instanceId}`, sk: 'remediation' }),
      'GetItem',
    );
    if (item === undefined) return undefined;
    return item.state === 'pending' ? undefined : toRecord(item);
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's last confirmed reboot (`instance#<id>`, `reboot`; strongly consistent
   *   read), or undefined
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async getLastReboot(instanceId: string): Promise<RemediationRecord | undefined> {
    const item = await this.#table.get(recordKey(instanceId, 'reboot'), 'GetItem reboot');
    if (item === undefined || item.state !== 'done') return undefined;
    return toRecord(item);
  }

  /**
   * Records a remediation if the instance has none (`attribute_not_exists(pk)`), then, when it has
   * a group, the group-history item (TTL 7 days) that {@link listRemediations} reads.
   *
   * @param record - the remediation
   * @returns true when recorded; false when one already existed (ConditionalCheckFailed)
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `record.at` is not an ISO 8601 time
   */
  async putRemediationIfAbsent(record: RemediationRecord): Promise<boolean> {
    isoToMs(record.at, 'record.at');
    const fields = {
      instance_id: record.instance_id,
      asg_name: record.asg_name,
      action: record.action,
      at: record.at,
      rule: record.rule,
    };
    const won = await this.#table.putIf(
      {
        Item: marshall(
          { pk: `instance#${record.instance_id}`, sk: 'remediation', ...fields },
          { removeUndefinedValues: true },
        ),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
      'PutItem remediation',
    );
    if (won && record.asg_name !== undefined) await this.#putGroupHistory(record);
    return won;
  }

  /**
   * Reserves a remediation with one `TransactWriteItems` of conditional puts, all or nothing:
   * - `instance#<id>`, `remediation`: `state = pending`, `lease_id`, `lease_until_ms`, on condition
   *   `attribute_not_exists(pk) OR (#state = :pending AND #lease_until < :at)` (no record, or an
   *   expired lease);
   *   (a `reboot` is the `instance#<id>`, `reboot` item instead, also taken over when it is a `done`
   *   reboot at or before `at − repeatAfterS`);
   * - for a budgeted replacement, `budget#asg#<group>` and `budget#fleet`, `slot#<n>` (the lowest
   *   free slot below the limit, read just before with a consistent query), on condition
   *   `attribute_not_exists(pk) OR #at <= :cutoff` (free, or taken before the window), TTL one
   *   window after `at` (a reboot: `budget#reboot#asg#<group>` when in a group, and `budget#reboot#fleet`).
   * A lost race on a slot (another invocation took it between the read and the write) reads the
   * slots again and retries; so concurrent reservations never take more slots than the limit.
   * Every transaction carries a `ClientRequestToken` (see `transactionToken`), and a cancellation
   * whose instance item is pending under this reservation's own lease id (`<instance>@<at>`) is our
   * own commit whose answer was lost: granted, not `in_progress`, so no slot is stranded.
   *
   * @param request - see {@link RemediationReservationRequest}
   * @returns granted with the lease id, or refused and why
   * @throws {StoreUnavailableError} when DynamoDB fails, or the reservation kept losing races
   * @throws {TypeError} when `request.record.at` is not an ISO 8601 time
   */
  async reserveRemediation(request: RemediationReservationRequest): Promise<RemediationReservation> {
    const { record } = request;
    const { atMs, leaseUntilMs, cutoffMs } = reservationTimes(record, request.leaseS, request.budget);
    const spend = budgetedGroup(record, request.budget);
    const leaseId = leaseIdFor(record);
    const attempts =
      (spend === undefined ? 0 : spend.budget.groupLimit + spend.budget.fleetLimit) +
      RESERVATION_EXTRA_ATTEMPTS;
    const reboot = record.action === 'reboot';
    const repeatCutoffMs = atMs - (request.repeatAfterS ?? 0) * 1000;
    const instanceItem: TransactWriteItem = {
      Put: {
        TableName: this.#table.name,
        Item: remediationItem(record, { state: 'pending', lease_id: leaseId, lease_until_ms: leaseUntilMs }),
        ...(reboot
          ? {
              ConditionExpression:
                'attribute_not_exists(pk) OR (#state = :pending AND #lease_until < :at) OR (#state = :done AND #at <= :repeat)',
              ExpressionAttributeNames: {
                '#state': 'state',
                '#lease_until': 'lease_until_ms',
                '#at': 'at_ms',
              },
              ExpressionAttributeValues: marshall({
                ':pending': 'pending',
                ':at': atMs,
                ':done': 'done',
                ':repeat': repeatCutoffMs,
              }),
            }
          : {
              ConditionExpression: 'attribute_not_exists(pk) OR (#state = :pending AND #lease_until < :at)',
              ExpressionAttributeNames: { '#state': 'state', '#lease_until': 'lease_until_ms' },
              ExpressionAttributeValues: marshall({ ':pending': 'pending', ':at': atMs }),
            }),
      },
    };
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      const items: TransactWriteItem[] = [instanceItem];
      if (spend !== undefined) {
        for (const { scope, limit, refusal } of budgetScopes(spend)) {
          const pick = pickBudgetSlot(await this.#slots(scope), limit, cutoffMs);
          if (pick.free === undefined) return { granted: false, reason: refusal, used: pick.used, limit };
          items.push({
            Put: {
              TableName: this.#table.name,
              Item: marshall({
                pk: `budget#${scope}`,
                sk: `slot#${pick.free}`,
                slot: pick.free,
                instance_id: record.instance_id,
                lease_id: leaseId,
                at_ms: atMs,
                expires_at: Math.ceil(atMs / 1000) + spend.budget.windowS,
              }),
              ConditionExpression: 'attribute_not_exists(pk) OR #at <= :cutoff',
              ExpressionAttributeNames: { '#at': 'at_ms' },
              ExpressionAttributeValues: marshall({ ':cutoff': cutoffMs }),
            },
          });
        }
      }
      try {
        await this.#table.transact(items);
        return { granted: true, leaseId };
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) {
          throw this.#table.unavailable('TransactWriteItems reservation', error);
        }
        const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
        if (codes[0] === 'ConditionalCheckFailed') {
          const item = await this.#table.get(
            recordKey(record.instance_id, record.action),
            'GetItem remediation',
          );
          if (item === undefined) continue;
          // Our own lease: a retry of a transaction that committed (its answer was lost) is
          // cancelled by the items it wrote itself. The slots were taken with it (all or nothing).
          if (item.state === 'pending' && item.lease_id === leaseId) return { granted: true, leaseId };
          if (item.state !== 'pending') {
            if (!reboot || Number(item.at_ms) > repeatCutoffMs)
              return { granted: false, reason: 'remediated' };
            continue;
          }
          if (Number(item.lease_until_ms) > atMs) return { granted: false, reason: 'in_progress' };
        }
        // A slot was taken (or a conflicting transaction ran) between the read and the write: read again.
      }
    }
    throw new StoreUnavailableError(
      `TransactWriteItems reservation ${this.#table.name}`,
      `expected a reservation within ${attempts} attempt(s), every one lost a race; retry the batch`,
    );
  }

  /**
   * Confirms a reservation: the instance's record becomes `done` (condition `#lease = :lease`, so a
   * lease another invocation took over is left alone), then the group-history item of a replacement.
   *
   * @param record - the reserved remediation
   * @param leaseId - the lease id the reservation granted
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async confirmRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    const confirmed = await this.#table.putIf(
      {
        Item: remediationItem(record, { state: 'done', lease_id: leaseId }),
        ConditionExpression: '#lease = :lease',
        ExpressionAttributeNames: { '#lease': 'lease_id' },
        ExpressionAttributeValues: marshall({ ':lease': leaseId }),
      },
      'PutItem remediation confirm',
    );
    if (confirmed && record.asg_name !== undefined && record.action !== 'reboot')
      await this.#putGroupHistory(record);
  }

  /**
   * Releases a reservation: deletes the pending record and the budget slots held under `leaseId`
   * (each on condition `#lease = :lease`; one no longer held is left alone).
   *
   * @param record - the reserved remediation
   * @param leaseId - the lease id the reservation granted
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async releaseRemediation(record: RemediationRecord, leaseId: string): Promise<void> {
    const held = {
      ConditionExpression: '#lease = :lease',
      ExpressionAttributeNames: { '#lease': 'lease_id' },
      ExpressionAttributeValues: marshall({ ':lease': leaseId }),
    };
    await this.#table.deleteIf(
      { Key: recordKey(record.instance_id, record.action), ...held },
      'DeleteItem remediation',
    );
    for (const scope of scopesOf(record.action, record.asg_name)) {
      for (const slot of await this.#slots(scope)) {
        await this.#table.deleteIf(
          { Key: marshall({ pk: `budget#${scope}`, sk: `slot#${slot.slot}` }), ...held },
          'DeleteItem budget slot',
        );
      }
    }
  }

  /**
   * @param asgName - Auto Scaling group name
   * @param since - inclusive lower bound (at most 7 days back: older history expires)
   * @returns the group's `replace` records since `since`, oldest first
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    const items = await this.#table.query(
      {
        KeyConditionExpression: 'pk = :p AND sk >= :since',
        ExpressionAttributeValues: marshall({ ':p': `asg#${asgName}`, ':since': since.toISOString() }),
        ConsistentRead: true,
      },
      'Query group history',
    );
    return items.filter((i) => i.action === 'replace').map(toRecord);
  }

  /** The taken slots of one budget scope (strongly consistent). */
  async #slots(scope: string): Promise<BudgetSlot[]> {
    const items = await this.#table.query(
      {
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
        ExpressionAttributeValues: marshall({ ':p': `budget#${scope}`, ':b': 'slot#' }),
        ConsistentRead: true,
      },
      'Query budget slots',
    );
    return items.map((i) => ({ slot: i.slot as number, at_ms: i.at_ms as number }));
  }

  /** Writes the group-history item of a remediation in a group (TTL 7 days), read by {@link listRemediations}. */
  async #putGroupHistory(record: RemediationRecord): Promise<void> {
    const atMs = isoToMs(record.at, 'record.at');
    await this.#table.put(
      marshall({
        pk: `asg#${record.asg_name}`,
        sk: `${new Date(atMs).toISOString()}#${record.instance_id}`,
        instance_id: record.instance_id,
        asg_name: record.asg_name,
        action: record.action,
        at: record.at,
        rule: record.rule,
        expires_at: Math.floor(atMs / 1000) + GROUP_HISTORY_TTL_S,
      }),
      'PutItem group history',
    );
  }
}
