import { marshall } from '@aws-sdk/util-dynamodb';
import type { ScopeFault } from '../domain/ports';
import type { DynamoDbStateTable } from './dynamodb-state-table';
import { isoToMs } from './iso-time';

/** How long a fault item outlives its window before DynamoDB's TTL removes it, s (reads filter by time anyway). */
const FAULT_TTL_SLACK_S = 3600;

/**
 * The incident part of the DynamoDB state store: the last fault of each instance in an incident
 * scope (`storm#<scope>`, `fault#<instance id>`, with `at`, `at_ms` and a TTL one window and an
 * hour after it), which the storm judgement reads back. See `DynamoDbStateStore` for the layout.
 */
export class DynamoDbIncidents {
  readonly #table: DynamoDbStateTable;

  /** @param table - the state table */
  constructor(table: DynamoDbStateTable) {
    this.#table = table;
  }

  /**
   * Puts the instance's fault (condition: none yet, or an older one: a late batch never moves it
   * back), then one strongly consistent `Query` of the scope.
   *
   * @param scope - the incident scope (`asg#<group>` or `fleet`)
   * @param instanceId - EC2 instance id
   * @param at - the fault's time, ISO 8601
   * @param windowS - how far back a fault counts, s > 0
   * @returns the scope's instances whose last fault is in `(at − windowS, at]`, oldest first
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async recordFault(scope: string, instanceId: string, at: string, windowS: number): Promise<ScopeFault[]> {
    const atMs = isoToMs(at, 'at');
    await this.#table.putIf(
      {
        Item: marshall({
          pk: `storm#${scope}`,
          sk: `fault#${instanceId}`,
          instance_id: instanceId,
          at,
          at_ms: atMs,
          expires_at: Math.ceil(atMs / 1000) + windowS + FAULT_TTL_SLACK_S,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR #at < :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': atMs }),
      },
      'PutItem fault',
    );
    const items = await this.#table.query(
      {
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
        ExpressionAttributeValues: marshall({ ':p': `storm#${scope}`, ':b': 'fault#' }),
        ConsistentRead: true,
      },
      'Query incident',
    );
    const cutoffMs = atMs - windowS * 1000;
    return items
      .filter((i) => Number(i.at_ms) > cutoffMs && Number(i.at_ms) <= atMs)
      .sort(
        (a, b) =>
          Number(a.at_ms) - Number(b.at_ms) || String(a.instance_id).localeCompare(String(b.instance_id)),
      )
      .map((i) => ({ instance_id: i.instance_id as string, at: i.at as string }));
  }
}
