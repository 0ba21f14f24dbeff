import { marshall } from '@aws-sdk/util-dynamodb';
import type { PendingRemediation } from '../domain/ports';
import type { Finding } from '../domain/types';
import type { DynamoDbStateTable } from './dynamodb-state-table';
import { isoToMs } from './iso-time';

/**
 * How long a pending item outlives its due time before DynamoDB's TTL removes it, s: a notice whose
 * instance stopped sending is garbage after a day (the item is read only by the instance's batches).
 */
const PENDING_TTL_SLACK_S = 86_400;

/** The key of an instance's pending item, marshalled. */
function pendingKey(instanceId: string) {
  return marshall({ pk: `instance#${instanceId}`, sk: 'pending' });
}

/**
 * The grace-period part of the DynamoDB state store: an instance's announced, not yet carried out
 * reboot or replacement (`instance#<id>`, `pending`, with the finding as JSON and a TTL a day after
 * it is due). See `DynamoDbStateStore` for the layout.
 */
export class DynamoDbPendingRemediation {
  readonly #table: DynamoDbStateTable;

  /** @param table - the state table */
  constructor(table: DynamoDbStateTable) {
    this.#table = table;
  }

  /**
   * One strongly consistent `GetItem`.
   * @param instanceId - EC2 instance id
   * @returns the pending remediation, or undefined
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async getPendingRemediation(instanceId: string): Promise<PendingRemediation | undefined> {
    const item = await this.#table.get(pendingKey(instanceId), 'GetItem pending');
    if (item === undefined) return undefined;
    return {
      instance_id: item.instance_id as string,
      action: item.action as PendingRemediation['action'],
      finding: JSON.parse(item.finding as string) as Finding,
      decided_at: item.decided_at as string,
      due_at: item.due_at as string,
      last_fault_at: item.last_fault_at as string,
    };
  }

  /**
   * A conditional `PutItem`: `attribute_not_exists(pk) OR decided_at = :d`.
   * @param pending - the pending remediation
   * @returns false when another notice is pending
   * @throws {TypeError} when a time is not ISO 8601 (nothing written)
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async putPendingRemediation(pending: PendingRemediation): Promise<boolean> {
    isoToMs(pending.decided_at, 'decided_at');
    const dueMs = isoToMs(pending.due_at, 'due_at');
    isoToMs(pending.last_fault_at, 'last_fault_at');
    return this.#table.putIf(
      {
        Item: marshall({
          pk: `instance#${pending.instance_id}`,
          sk: 'pending',
          instance_id: pending.instance_id,
          action: pending.action,
          finding: JSON.stringify(pending.finding),
          decided_at: pending.decided_at,
          due_at: pending.due_at,
          last_fault_at: pending.last_fault_at,
          expires_at: Math.ceil(dueMs / 1000) + PENDING_TTL_SLACK_S,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR decided_at = :d',
        ExpressionAttributeValues: marshall({ ':d': pending.decided_at }),
      },
      'PutItem pending',
    );
  }

  /**
   * A conditional `DeleteItem`: `decided_at = :d`.
   * @param instanceId - EC2 instance id
   * @param decidedAt - the notice's time
   * @returns true for the one caller that removed it
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  takePendingRemediation(instanceId: string, decidedAt: string): Promise<boolean> {
    return this.#table.deleteIf(
      {
        Key: pendingKey(instanceId),
        ConditionExpression: 'decided_at = :d',
        ExpressionAttributeValues: marshall({ ':d': decidedAt }),
      },
      'DeleteItem pending',
    );
  }
}
