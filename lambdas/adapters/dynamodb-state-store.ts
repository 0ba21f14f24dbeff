import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DeleteItemCommandInput,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  type PutItemCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { StoreUnavailableError } from '../domain/port-errors';
import type {
  FiringAlert,
  InstanceState,
  RemediationRecord,
  RemediationReservation,
  RemediationReservationRequest,
  StateStore,
} from '../domain/ports';
import { GROUP_HISTORY_TTL_S } from './constants';
import { toFiringAlert } from './firing-alert';
import { isoToMs } from './iso-time';
import {
  type BudgetSlot,
  budgetedGroup,
  budgetScopes,
  FLEET_SCOPE,
  groupScope,
  leaseIdFor,
  pickBudgetSlot,
  reservationTimes,
} from './remediation-budget';

/** Options of {@link DynamoDbStateStore}. */
export interface DynamoDbStateStoreOptions {
  readonly client: DynamoDBClient;
  /** Table with string keys `pk` (partition) and `sk` (sort), TTL attribute `expires_at` (epoch s). */
  readonly tableName: string;
}

/** Seconds an alert claim is kept after its cooldown ends (then TTL deletes it; a missing claim is claimable). */
const ALERT_CLAIM_TTL_MARGIN_S = 24 * 3600;

/**
 * Most optimistic tries of one reservation: each lost race means another invocation took a slot,
 * so after `groupLimit + fleetLimit` losses the budget is spent; the rest absorbs transaction conflicts.
 */
const RESERVATION_EXTRA_ATTEMPTS = 4;

/** True for DynamoDB's failed-condition answer (the SDK's class, which matches its copies too). */
function isConditionFailed(error: unknown): boolean {
  return error instanceof ConditionalCheckFailedException;
}

/** The `instance#<id>`, `remediation` item of a record, with the reservation fields given. */
function remediationItem(
  record: RemediationRecord,
  reservation: Record<string, string | number>,
): Record<string, AttributeValue> {
  return marshall(
    {
      pk: `instance#${record.instance_id}`,
      sk: 'remediation',
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
 * The remediation/alert state on one DynamoDB table (docs/design.md §6, §8), with conditional writes so
 * two Lambdas never replace the same instance or send the same alert twice.
 *
 * Items (`pk`, `sk`):
 * - `instance#<id>`, `remediation`: the one replace/quarantine of an instance (written only if absent);
 * - `asg#<group>`, `<ISO at>#<instance id>`: group history for the rate limit, TTL 7 days;
 * - `instance#<id>`, `broken#<gpuKey>`: since when a GPU is broken (earliest kept);
 * - `alert#<id>`, `last_sent`: last send of an alert (claimed when older than the cooldown),
 *   TTL one day after its cooldown ends;
 * - `alert#<id>`, `lease`: the lease of the invocation publishing it now (publish-then-record), TTL one
 *   day after it lapses;
 * - `instance#<id>`, `firing#<alert id>`: a window alert that fired and has not resolved;
 * - `instance#<id>`, `idle#<gpuKey>`: since when a GPU is idle with no process (earliest kept).
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
  #putIf(input: Omit<PutItemCommandInput, 'TableName'>, operation: string): Promise<boolean> {
    return this.#conditional(
      () => this.#client.send(new PutItemCommand({ TableName: this.#table, ...input })),
      operation,
    );
  }

  /** Sends a conditional delete; false when the condition failed (nothing to delete). */
  #deleteIf(input: Omit<DeleteItemCommandInput, 'TableName'>, operation: string): Promise<boolean> {
    return this.#conditional(
      () => this.#client.send(new DeleteItemCommand({ TableName: this.#table, ...input })),
      operation,
    );
  }

  /** Runs a conditional write: true when done, false when its condition failed, else unavailable. */
  async #conditional(write: () => Promise<unknown>, operation: string): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw this.#unavailable(operation, error);
    }
  }

  /** The taken slots of one budget scope (strongly consistent). */
  async #slots(scope: string): Promise<BudgetSlot[]> {
    const items = await this.#query(
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
    try {
      await this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: marshall({
            pk: `asg#${record.asg_name}`,
            sk: `${new Date(atMs).toISOString()}#${record.instance_id}`,
            instance_id: record.instance_id,
            asg_name: record.asg_name,
            action: record.action,
            at: record.at,
            rule: record.rule,
            expires_at: Math.floor(atMs / 1000) + GROUP_HISTORY_TTL_S,
          }),
        }),
      );
    } catch (error) {
      throw this.#unavailable('PutItem group history', error);
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
      if (out.Item === undefined) return undefined;
      const item = unmarshall(out.Item);
      return item.state === 'pending' ? undefined : toRecord(item);
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
    isoToMs(record.at, 'record.at');
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
    if (won && record.asg_name !== undefined) await this.#putGroupHistory(record);
    return won;
  }

  /**
   * Reserves a remediation with one `TransactWriteItems` of conditional puts, all or nothing:
   * - `instance#<id>`, `remediation`: `state = pending`, `lease_id`, `lease_until_ms`, on condition
   *   `attribute_not_exists(pk) OR (#state = :pending AND #lease_until < :at)` (no record, or an
   *   expired lease);
   * - for a budgeted replacement, `budget#asg#<group>` and `budget#fleet`, `slot#<n>` (the lowest
   *   free slot below the limit, read just before with a consistent query), on condition
   *   `attribute_not_exists(pk) OR #at <= :cutoff` (free, or taken before the window), TTL one
   *   window after `at`.
   * A lost race on a slot (another invocation took it between the read and the write) reads the
   * slots again and retries; so concurrent reservations never take more slots than the limit.
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
    const instanceItem: TransactWriteItem = {
      Put: {
        TableName: this.#table,
        Item: remediationItem(record, { state: 'pending', lease_id: leaseId, lease_until_ms: leaseUntilMs }),
        ConditionExpression: 'attribute_not_exists(pk) OR (#state = :pending AND #lease_until < :at)',
        ExpressionAttributeNames: { '#state': 'state', '#lease_until': 'lease_until_ms' },
        ExpressionAttributeValues: marshall({ ':pending': 'pending', ':at': atMs }),
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
              TableName: this.#table,
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
        await this.#client.send(new TransactWriteItemsCommand({ TransactItems: items }));
        return { granted: true, leaseId };
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) {
          throw this.#unavailable('TransactWriteItems reservation', error);
        }
        const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
        if (codes[0] === 'ConditionalCheckFailed') {
          const held = await this.#client
            .send(
              new GetItemCommand({
                TableName: this.#table,
                Key: marshall({ pk: `instance#${record.instance_id}`, sk: 'remediation' }),
                ConsistentRead: true,
              }),
            )
            .catch((cause: unknown) => {
              throw this.#unavailable('GetItem remediation', cause);
            });
          const item = held.Item === undefined ? undefined : unmarshall(held.Item);
          if (item === undefined) continue;
          if (item.state !== 'pending') return { granted: false, reason: 'remediated' };
          if (Number(item.lease_until_ms) > atMs) return { granted: false, reason: 'in_progress' };
        }
        // A slot was taken (or a conflicting transaction ran) between the read and the write: read again.
      }
    }
    throw new StoreUnavailableError(
      `TransactWriteItems reservation ${this.#table}`,
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
    const confirmed = await this.#putIf(
      {
        Item: remediationItem(record, { state: 'done', lease_id: leaseId }),
        ConditionExpression: '#lease = :lease',
        ExpressionAttributeNames: { '#lease': 'lease_id' },
        ExpressionAttributeValues: marshall({ ':lease': leaseId }),
      },
      'PutItem remediation confirm',
    );
    if (confirmed && record.asg_name !== undefined) await this.#putGroupHistory(record);
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
    await this.#deleteIf(
      { Key: marshall({ pk: `instance#${record.instance_id}`, sk: 'remediation' }), ...held },
      'DeleteItem remediation',
    );
    if (record.action !== 'replace' || record.asg_name === undefined) return;
    for (const scope of [groupScope(record.asg_name), FLEET_SCOPE]) {
      for (const slot of await this.#slots(scope)) {
        await this.#deleteIf(
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
   * The instance's broken marks, idle marks and firing alerts in one strongly consistent `Query` of
   * its partition (`pk = instance#<id>`; the `remediation` item, if any, is skipped): one read per
   * batch instead of three.
   *
   * @param instanceId - EC2 instance id
   * @returns the marks by gpuKey and the firing alerts, in sort key order
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async getInstanceState(instanceId: string): Promise<InstanceState> {
    const items = await this.#query(
      {
        KeyConditionExpression: 'pk = :p',
        ExpressionAttributeValues: marshall({ ':p': `instance#${instanceId}` }),
        ConsistentRead: true,
      },
      'Query instance',
    );
    const broken = new Map<string, string>();
    const idle = new Map<string, string>();
    const firing: FiringAlert[] = [];
    for (const item of items) {
      const sk = item.sk as string;
      if (sk.startsWith('broken#')) broken.set(item.gpu_key as string, item.at as string);
      else if (sk.startsWith('idle#')) idle.set(item.gpu_key as string, item.at as string);
      else if (sk.startsWith('firing#')) firing.push(toFiringAlert(item));
    }
    return { broken, idle, firing };
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns gpuKey → since when broken (ISO 8601, as marked)
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  getBrokenSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#gpuMarks(instanceId, 'broken');
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
  markBroken(instanceId: string, gpuKey: string, at: string): Promise<void> {
    return this.#markGpu(instanceId, 'broken', gpuKey, at);
  }

  /** Reads an instance's per-GPU marks of one kind (`broken`, `idle`): gpuKey → ISO 8601. */
  async #gpuMarks(instanceId: string, kind: 'broken' | 'idle'): Promise<ReadonlyMap<string, string>> {
    const items = await this.#query(
      {
        KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
        ExpressionAttributeValues: marshall({ ':p': `instance#${instanceId}`, ':b': `${kind}#` }),
        ConsistentRead: true,
      },
      `Query ${kind}`,
    );
    return new Map(items.map((i) => [i.gpu_key as string, i.at as string]));
  }

  /** Puts a per-GPU mark, keeping an earlier one (`attribute_not_exists(pk) OR #at > :at` on `at_ms`). */
  async #markGpu(instanceId: string, kind: 'broken' | 'idle', gpuKey: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    await this.#putIf(
      {
        Item: marshall({
          pk: `instance#${instanceId}`,
          sk: `${kind}#${gpuKey}`,
          instance_id: instanceId,
          gpu_key: gpuKey,
          at,
          at_ms: atMs,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR #at > :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': atMs }),
      },
      `PutItem ${kind}`,
    );
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
    const leased = await this.#putIf(
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
      const out = await this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: marshall({ pk: `alert#${alertId}`, sk: 'last_sent' }),
          ConsistentRead: true,
        }),
      );
      lastMs = out.Item === undefined ? undefined : Number(unmarshall(out.Item).at_ms);
    } catch (error) {
      await this.releaseAlertLease(alertId, at);
      throw this.#unavailable('GetItem alert last send', error);
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
    const item = alertItem(alertId, 'last_sent', at, cooldownS);
    try {
      await this.#client.send(new PutItemCommand({ TableName: this.#table, Item: item }));
    } catch (error) {
      throw this.#unavailable('PutItem alert send', error);
    }
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
    await this.#deleteIf(
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
   * @param instanceId - EC2 instance id
   * @returns the instance's firing window alerts, by alert id
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async listFiringAlerts(instanceId: string): Promise<FiringAlert[]> {
    const items = await this.#query(
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
    await this.#putIf(
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
    return this.#deleteIf(
      {
        Key: marshall({ pk: `instance#${instanceId}`, sk: `firing#${alertId}` }),
        ConditionExpression: 'attribute_exists(pk)',
      },
      'DeleteItem firing',
    );
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns gpuKey → idle since (ISO 8601, as marked)
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#gpuMarks(instanceId, 'idle');
  }

  /**
   * Marks a GPU idle from `at`, keeping an earlier mark (`attribute_not_exists(pk) OR #at > :at`).
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*`
   * @param at - ISO 8601
   * @throws {StoreUnavailableError} when DynamoDB fails
   * @throws {TypeError} when `at` is not an ISO 8601 time
   */
  markIdle(instanceId: string, gpuKey: string, at: string): Promise<void> {
    return this.#markGpu(instanceId, 'idle', gpuKey, at);
  }

  /**
   * Clears a GPU's idle mark (an unconditional delete; none is fine).
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*`
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async clearIdle(instanceId: string, gpuKey: string): Promise<void> {
    await this.#deleteIf(
      { Key: marshall({ pk: `instance#${instanceId}`, sk: `idle#${gpuKey}` }) },
      'DeleteItem idle',
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
    await this.#deleteIf(
      {
        Key: marshall({ pk: `alert#${alertId}`, sk: 'last_sent' }),
        ConditionExpression: '#at = :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': atMs }),
      },
      'DeleteItem alert claim',
    );
  }
}
