import { marshall } from '@aws-sdk/util-dynamodb';
import type { FiringAlert, InstanceState } from '../domain/ports';
import type { DynamoDbStateTable } from './dynamodb-state-table';
import { toFiringAlert } from './firing-alert';
import { isoToMs } from './iso-time';

/** The kinds of per-GPU mark an instance's partition holds. */
type MarkKind = 'broken' | 'idle';

/**
 * The per-GPU marks part of the DynamoDB state store: since when a GPU is broken
 * (`instance#<id>`, `broken#<gpuKey>`) or idle with no process (`idle#<gpuKey>`), the earliest time
 * kept, and the one read of an instance's partition a batch makes. See `DynamoDbStateStore` for the
 * table's item layout.
 */
export class DynamoDbGpuMarks {
  readonly #table: DynamoDbStateTable;

  /** @param table - the state table */
  constructor(table: DynamoDbStateTable) {
    this.#table = table;
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
    const items = await this.#table.query(
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
    return this.#marks(instanceId, 'broken');
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
    return this.#mark(instanceId, 'broken', gpuKey, at);
  }

  /**
   * @param instanceId - EC2 instance id
   * @returns gpuKey → idle since (ISO 8601, as marked)
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  getIdleSince(instanceId: string): Promise<ReadonlyMap<string, string>> {
    return this.#marks(instanceId, 'idle');
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
    return this.#mark(instanceId, 'idle', gpuKey, at);
  }

  /**
   * Clears a GPU's idle mark (an unconditional delete; none is fine).
   *
   * @param instanceId - EC2 instance id
   * @param gpuKey - GPU index, PCI bus id, or `*`
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async clearIdle(instanceId: string, gpuKey: string): Promise<void> {
    await this.#table.deleteIf(
      { Key: marshall({ pk: `instance#${instanceId}`, sk: `idle#${gpuKey}` }) },
      'DeleteItem idle',
    );
  }

  /** Reads an instance's per-GPU marks of one kind: gpuKey → ISO 8601. */
  async #marks(instanceId: string, kind: MarkKind): Promise<ReadonlyMap<string, string>> {
    const items = await this.#table.query(
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
  async #mark(instanceId: string, kind: MarkKind, gpuKey: string, at: string): Promise<void> {
    const atMs = isoToMs(at, 'at');
    await this.#table.putIf(
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
}
