import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type PutItemCommandInput,
  QueryCommand,
  type QueryCommandInput,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { RemediationRecord, StateStore } from '../domain/ports';
import { GROUP_HISTORY_TTL_S } from './constants';
import { StoreUnavailableError } from './errors';
import { isoToMs } from './iso-time';

/** Options of {@link DynamoDbStateStore}. */
export interface DynamoDbStateStoreOptions {
  readonly client: DynamoDBClient;
  /** Table with string keys `pk` (partition) and `sk` (sort), TTL attribute `expires_at` (epoch s). */
  readonly tableName: string;
}

/** Seconds an alert claim is kept after its cooldown ends (then TTL deletes it; a missing claim is claimable). */
const ALERT_CLAIM_TTL_MARGIN_S = 24 * 3600;

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
 * The remediation/alert state on one DynamoDB table (DESIGN §6, §8), with conditional writes so
 * two Lambdas never replace the same instance or send the same alert twice.
 *
 * Items (`pk`, `sk`):
 * - `instance#<id>`, `remediation`: the one replace/quarantine of an instance (written only if absent);
 * - `asg#<group>`, `<ISO at>#<instance id>`: group history for the rate limit, TTL 7 days;
 * - `instance#<id>`, `broken#<gpuKey>`: since when a GPU is broken (earliest kept);
 * - `alert#<id>`, `last_sent`: last send of an alert (claimed when older than the cooldown),
 *   TTL one day after its cooldown ends.
 * Times are kept as given (`at`, returned unchanged) and as epoch ms (`at_ms`, compared).
 */
export class DynamoDbStateStore implements StateStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  /** @param options - client and table name */
  constructor(options: DynamoDbStateStoreOptions) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  /** Sends a conditional put; false when the condition failed. */
  async #putIf(input: Omit<PutItemCommandInput, 'TableName'>, operation: string): Promise<boolean> {
    try {
      await this.#client.send(new PutItemCommand({ TableName: this.#table, ...input }));
      return true;
    } catch (error) {
      if (
        error instanceof ConditionalCheckFailedException ||
        (error as { name?: string })?.name === 'ConditionalCheckFailedException'
      ) {
        return false;
      }
      throw this.#unavailable(operation, error);
    }
  }

  /** Runs a query over every page. */
  async #query(
    input: Omit<QueryCommandInput, 'TableName'>,
    operation: string,
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let start: QueryCommandInput['ExclusiveStartKey'];
    do {
      try {
        const out = await this.#client.send(
          new QueryCommand({
            TableName: this.#table,
            ...input,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        for (const item of out.Items ?? []) items.push(unmarshall(item));
        start = out.LastEvaluatedKey;
      } catch (error) {
        throw this.#unavailable(operation, error);
      }
    } while (start);
    return items;
  }

  #unavailable(operation: string, error: unknown): StoreUnavailableError {
    return new StoreUnavailableError(
      `${operation} ${this.#table}`,
      'expected DynamoDB to answer, it failed; retry later',
      { cause: error },
    );
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns the instance's replace/quarantine record (strongly consistent read), or undefined
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async getRemediation(instanceId: string): Promise<RemediationRecord | undefined> {
    try {
      const out = await this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: marshall({ pk: `instance#${instanceId}`, sk: 'remediation' }),
          ConsistentRead: true,
        }),
      );
      return out.Item === undefined ? undefined : toRecord(unmarshall(out.Item));
    } catch (error) {
      throw this.#unavailable('GetItem', error);
    }
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
    const atMs = isoToMs(record.at, 'record.at');
    const fields = {
      instance_id: record.instance_id,
      asg_name: record.asg_name,
      action: record.action,
      at: record.at,
      rule: record.rule,
    };
    const won = await this.#putIf(
      {
        Item: marshall(
          { pk: `instance#${record.instance_id}`, sk: 'remediation', ...fields },
          { removeUndefinedValues: true },
        ),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
      'PutItem remediation',
    );
    if (won && record.asg_name !== undefined) {
      try {
        await this.#client.send(
          new PutItemCommand({
            TableName: this.#table,
            Item: marshall({
              pk: `asg#${record.asg_name}`,
              sk: `${new Date(atMs).toISOString()}#${record.instance_id}`,
              ...fields,
              expires_at: Math.floor(atMs / 1000) + GROUP_HISTORY_TTL_S,
            }),
          }),
        );
      } catch (error) {
        throw this.#unavailable('PutItem group history', error);
      }
    }
    return won;
  }

  /**
   * @param asgName - Auto Scaling group name
   * @param since - inclusive lower bound (at most 7 days back: older history expires)
   * @returns the group's `replace` records since `since`, oldest first
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async listRemediations(asgName: string, since: Date): Promise<RemediationRecord[]> {
    const items = await this.#query(
      {
        KeyConditionExpression: 'pk = :p AND sk >= :since',
        ExpressionAttributeValues: marshall({ ':p': `asg#${asgName}`, ':since': since.toISOString() }),
        ConsistentRead: true,
      },
      'Query group history',
    );
    return items.filter((i) => i.action === 'replace').map(toRecord);
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns gpuKey → since when broken (ISO 8601, as marked)
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    const items = await this.#query(
      {
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
        ExpressionAttributeValues: marshall({ ':p': `instance#${instanceId}`, ':b': 'broken#' }),
        ConsistentRead: true,
      },
      'Query broken',
    );
    return new Map(items.map((i) => [i.gpu_key as string, i.at as string]));
  }

  /**
   * Marks a GPU broken from `at`, keeping an earlier mark (`attribute_not_exists(pk) OR #at > :at`
   * on `at_ms`; a failed condition means an earlier mark exists, which is fine).
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*` for the whole instance
   * @param at - ISO 8601
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  async markBroken(instanceId: string, gpuKey: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    await this.#putIf(
      {
        Item: marshall({
          pk: `instance#${instanceId}`,
          sk: `broken#${gpuKey}`,
          instance_id: instanceId,
          gpu_key: gpuKey,
          at,
          at_ms: atMs,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR #at > :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': atMs }),
      },
      'PutItem broken',
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
    return this.#putIf(
      {
        Item: marshall({
          pk: `alert#${alertId}`,
          sk: 'last_sent',
          at,
          at_ms: atMs,
          expires_at: Math.ceil(atMs / 1000) + Math.ceil(cooldownS) + ALERT_CLAIM_TTL_MARGIN_S,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR #at <= :cutoff',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':cutoff': atMs - cooldownS * 1000 }),
      },
      'PutItem alert claim',
    );
  }
}
