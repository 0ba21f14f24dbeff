import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DynamoDbStateStore } from '../../../lambdas/adapters/dynamodb-state-store';
import { StoreUnavailableError } from '../../../lambdas/domain/port-errors';
import type { RemediationRecord } from '../../../lambdas/domain/ports';
import { describeStateStoreContract } from '../state-conformance';
import { expectValidAwsInputs } from './aws-model';
import { fakeDynamoDb } from './dynamodb-fake';

const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

const record: RemediationRecord = {
  instance_id: 'i-0abc',
  asg_name: 'p5-train',
  action: 'replace',
  at: '2026-03-10T12:00:06Z',
  rule: 'xid_fatal',
};

describe('DynamoDbStateStore', () => {
  const client = new DynamoDBClient({ region: 'us-east-1' });
  const mock = mockClient(client);
  let store: DynamoDbStateStore;

  afterEach(() => {
    expectValidAwsInputs(mock, 'dynamodb');
  });

  beforeEach(() => {
    mock.reset();
    mock.on(PutItemCommand).resolves({});
    store = new DynamoDbStateStore({ client, tableName: 'gpu-sentinel-state' });
  });

  it('records a remediation only if absent, then the group history item with a 7-day TTL', async () => {
    // Act
    const won = await store.putRemediationIfAbsent(record);

    // Assess
    expect(won).toBe(true);
    expect(mock.commandCalls(PutItemCommand).map((c) => c.args[0].input)).toEqual([
      {
        TableName: 'gpu-sentinel-state',
        Item: marshall({
          pk: 'instance#i-0abc',
          sk: 'remediation',
          instance_id: 'i-0abc',
          asg_name: 'p5-train',
          action: 'replace',
          at: '2026-03-10T12:00:06Z',
          rule: 'xid_fatal',
        }),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
      {
        TableName: 'gpu-sentinel-state',
        Item: marshall({
          pk: 'asg#p5-train',
          sk: '2026-03-10T12:00:06.000Z#i-0abc',
          instance_id: 'i-0abc',
          asg_name: 'p5-train',
          action: 'replace',
          at: '2026-03-10T12:00:06Z',
          rule: 'xid_fatal',
          expires_at: 1773144006 + 604800,
        }),
      },
    ]);
  });

  it('returns false and writes no history when the instance already has a remediation', async () => {
    // Prepare
    mock.on(PutItemCommand).rejectsOnce(conditionFailed());

    // Act
    const won = await store.putRemediationIfAbsent(record);

    // Assess
    expect(won).toBe(false);
    expect(mock.commandCalls(PutItemCommand)).toHaveLength(1);
  });

  it('writes no group history for a remediation outside a group', async () => {
    // Act
    await store.putRemediationIfAbsent({
      instance_id: 'i-0def',
      action: 'quarantine',
      at: '2026-03-10T12:00:06Z',
      rule: 'gpu_lost',
    });

    // Assess
    expect(mock.commandCalls(PutItemCommand).map((c) => c.args[0].input.Item)).toEqual([
      marshall({
        pk: 'instance#i-0def',
        sk: 'remediation',
        instance_id: 'i-0def',
        action: 'quarantine',
        at: '2026-03-10T12:00:06Z',
        rule: 'gpu_lost',
      }),
    ]);
  });

  it('reads a remediation with a consistent read', async () => {
    // Prepare
    mock
      .on(GetItemCommand)
      .resolves({ Item: marshall({ pk: 'instance#i-0abc', sk: 'remediation', ...record }) });

    // Act
    const found = await store.getRemediation('i-0abc');

    // Assess
    expect(mock.commandCalls(GetItemCommand)[0]!.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      Key: marshall({ pk: 'instance#i-0abc', sk: 'remediation' }),
      ConsistentRead: true,
    });
    expect(found).toEqual(record);
  });

  it('returns undefined for an instance never remediated', async () => {
    // Prepare
    mock.on(GetItemCommand).resolves({});

    // Act / Assess
    expect(await store.getRemediation('i-0abc')).toBeUndefined();
  });

  it('lists the group replacements since a time over every page', async () => {
    // Prepare
    const item = (id: string, action: string) =>
      marshall({
        pk: 'asg#p5-train',
        sk: `2026-03-10T12:00:06.000Z#${id}`,
        ...record,
        instance_id: id,
        action,
      });
    mock
      .on(QueryCommand)
      .resolvesOnce({
        Items: [item('i-1', 'replace')],
        LastEvaluatedKey: marshall({ pk: 'asg#p5-train', sk: 'k' }),
      })
      .resolvesOnce({ Items: [item('i-2', 'replace'), item('i-3', 'quarantine')] });

    // Act
    const list = await store.listRemediations('p5-train', new Date('2026-03-10T11:00:00Z'));

    // Assess
    const inputs = mock.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(inputs[0]).toEqual({
      TableName: 'gpu-sentinel-state',
      KeyConditionExpression: 'pk = :p AND sk >= :since',
      ExpressionAttributeValues: marshall({ ':p': 'asg#p5-train', ':since': '2026-03-10T11:00:00.000Z' }),
      ConsistentRead: true,
    });
    expect(inputs[1]?.ExclusiveStartKey).toEqual(marshall({ pk: 'asg#p5-train', sk: 'k' }));
    expect(list.map((r) => r.instance_id)).toEqual(['i-1', 'i-2']);
  });

  it('marks a GPU broken keeping the earliest time', async () => {
    // Act
    await store.markBroken('i-0abc', '3', '2026-03-10T12:00:05.250Z');

    // Assess
    expect(mock.commandCalls(PutItemCommand)[0]!.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      Item: marshall({
        pk: 'instance#i-0abc',
        sk: 'broken#3',
        instance_id: 'i-0abc',
        gpu_key: '3',
        at: '2026-03-10T12:00:05.250Z',
        at_ms: 1773144005250,
      }),
      ConditionExpression: 'attribute_not_exists(pk) OR #at > :at',
      ExpressionAttributeNames: { '#at': 'at_ms' },
      ExpressionAttributeValues: marshall({ ':at': 1773144005250 }),
    });
  });

  it('accepts a failed condition when an earlier broken mark exists', async () => {
    // Prepare
    mock.on(PutItemCommand).rejects(conditionFailed());

    // Act / Assess
    await expect(store.markBroken('i-0abc', '3', '2026-03-10T12:00:05.250Z')).resolves.toBeUndefined();
  });

  it('reads the broken GPUs of an instance', async () => {
    // Prepare
    mock.on(QueryCommand).resolves({
      Items: [
        marshall({
          pk: 'instance#i-0abc',
          sk: 'broken#3',
          gpu_key: '3',
          at: '2026-03-10T12:00:05.250Z',
          at_ms: 1,
        }),
        marshall({
          pk: 'instance#i-0abc',
          sk: 'broken#*',
          gpu_key: '*',
          at: '2026-03-10T12:01:00Z',
          at_ms: 2,
        }),
      ],
    });

    // Act
    const broken = await store.getBrokenSince('i-0abc');

    // Assess
    expect(mock.commandCalls(QueryCommand)[0]!.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
      ExpressionAttributeValues: marshall({ ':p': 'instance#i-0abc', ':b': 'broken#' }),
      ConsistentRead: true,
    });
    expect(new Map(broken)).toEqual(
      new Map([
        ['3', '2026-03-10T12:00:05.250Z'],
        ['*', '2026-03-10T12:01:00Z'],
      ]),
    );
  });

  it.each([
    { case: 'the condition holds', reply: 'ok', expected: true },
    { case: 'the condition fails', reply: 'failed', expected: false },
  ])('claims an alert with a cooldown condition: $case', async ({ reply, expected }) => {
    // Prepare
    if (reply === 'failed') mock.on(PutItemCommand).rejects(conditionFailed());

    // Act
    const claimed = await store.claimAlert('xid_fatal:i-0abc:3', '2026-03-10T12:00:00Z', 1800);

    // Assess
    expect(claimed).toBe(expected);
    expect(mock.commandCalls(PutItemCommand)[0]!.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      Item: marshall({
        pk: 'alert#xid_fatal:i-0abc:3',
        sk: 'last_sent',
        at: '2026-03-10T12:00:00Z',
        at_ms: 1773144000000,
        expires_at: 1773144000 + 1800 + 86400,
      }),
      ConditionExpression: 'attribute_not_exists(pk) OR #at <= :cutoff',
      ExpressionAttributeNames: { '#at': 'at_ms' },
      ExpressionAttributeValues: marshall({ ':cutoff': 1773144000000 - 1_800_000 }),
    });
  });

  it.each([
    { op: 'putRemediationIfAbsent', call: (s: DynamoDbStateStore) => s.putRemediationIfAbsent(record) },
    { op: 'claimAlert', call: (s: DynamoDbStateStore) => s.claimAlert('a', '2026-03-10T12:00:00Z', 60) },
    { op: 'getBrokenSince', call: (s: DynamoDbStateStore) => s.getBrokenSince('i-0abc') },
    { op: 'getRemediation', call: (s: DynamoDbStateStore) => s.getRemediation('i-0abc') },
  ])('throws StoreUnavailableError from $op when DynamoDB fails', async ({ call }) => {
    // Prepare
    const cause = Object.assign(new Error('Rate exceeded'), {
      name: 'ProvisionedThroughputExceededException',
    });
    mock.on(PutItemCommand).rejects(cause);
    mock.on(QueryCommand).rejects(cause);
    mock.on(GetItemCommand).rejects(cause);

    // Act
    const result = call(store);

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(result).rejects.toMatchObject({ cause });
  });

  it('reserves a replacement with one transaction: the pending record and a group and a fleet slot, each conditional', async () => {
    // Prepare
    mock.on(QueryCommand).resolves({ Items: [] });
    mock.on(TransactWriteItemsCommand).resolves({});

    // Act
    const granted = await store.reserveRemediation({
      record,
      budget: { groupLimit: 2, fleetLimit: 10, windowS: 3600 },
      leaseS: 900,
    });

    // Assess
    const atMs = 1773144006000;
    const slot = (pk: string) => ({
      Put: {
        TableName: 'gpu-sentinel-state',
        Item: marshall({
          pk,
          sk: 'slot#0',
          slot: 0,
          instance_id: 'i-0abc',
          lease_id: 'i-0abc@2026-03-10T12:00:06Z',
          at_ms: atMs,
          expires_at: 1773144006 + 3600,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR #at <= :cutoff',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':cutoff': atMs - 3_600_000 }),
      },
    });
    expect(granted).toEqual({ granted: true, leaseId: 'i-0abc@2026-03-10T12:00:06Z' });
    expect(mock.commandCalls(QueryCommand).map((c) => c.args[0].input.ExpressionAttributeValues)).toEqual([
      marshall({ ':p': 'budget#asg#p5-train', ':b': 'slot#' }),
      marshall({ ':p': 'budget#fleet', ':b': 'slot#' }),
    ]);
    expect(mock.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input).toEqual({
      TransactItems: [
        {
          Put: {
            TableName: 'gpu-sentinel-state',
            Item: marshall({
              pk: 'instance#i-0abc',
              sk: 'remediation',
              instance_id: 'i-0abc',
              asg_name: 'p5-train',
              action: 'replace',
              at: '2026-03-10T12:00:06Z',
              rule: 'xid_fatal',
              state: 'pending',
              lease_id: 'i-0abc@2026-03-10T12:00:06Z',
              lease_until_ms: atMs + 900_000,
            }),
            ConditionExpression: 'attribute_not_exists(pk) OR (#state = :pending AND #lease_until < :at)',
            ExpressionAttributeNames: { '#state': 'state', '#lease_until': 'lease_until_ms' },
            ExpressionAttributeValues: marshall({ ':pending': 'pending', ':at': atMs }),
          },
        },
        slot('budget#asg#p5-train'),
        slot('budget#fleet'),
      ],
      ClientRequestToken: expect.stringMatching(/^[0-9a-f]{36}$/),
    });
  });

  it('gives one decision one ClientRequestToken, and another decision another', async () => {
    // Prepare
    mock.on(QueryCommand).resolves({ Items: [] });
    mock.on(TransactWriteItemsCommand).resolves({});
    const request = { record, budget: { groupLimit: 2, fleetLimit: 10, windowS: 3600 }, leaseS: 900 };

    // Act
    await store.reserveRemediation(request);
    await store.reserveRemediation(request);
    await store.reserveRemediation({ ...request, record: { ...record, at: '2026-03-10T12:00:26Z' } });

    // Assess
    const tokens = mock
      .commandCalls(TransactWriteItemsCommand)
      .map((c) => c.args[0].input.ClientRequestToken);
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[2]).not.toBe(tokens[0]);
  });

  it('takes a cancellation by the lease it wrote itself for its own commit, not another invocation', async () => {
    // Prepare: the transaction committed, its answer was lost, the retry was cancelled by our own items
    mock.on(QueryCommand).resolves({ Items: [] });
    mock.on(TransactWriteItemsCommand).rejects(
      new TransactionCanceledException({
        message:
          'Transaction cancelled [ConditionalCheckFailed, ConditionalCheckFailed, ConditionalCheckFailed]',
        $metadata: {},
        CancellationReasons: [
          { Code: 'ConditionalCheckFailed' },
          { Code: 'ConditionalCheckFailed' },
          { Code: 'ConditionalCheckFailed' },
        ],
      }),
    );
    const pending = (leaseId: string) =>
      marshall({
        pk: 'instance#i-0abc',
        sk: 'remediation',
        state: 'pending',
        lease_id: leaseId,
        lease_until_ms: 1773144906000,
      });
    const request = { record, budget: { groupLimit: 2, fleetLimit: 10, windowS: 3600 }, leaseS: 900 };

    // Act
    mock.on(GetItemCommand).resolves({ Item: pending('i-0abc@2026-03-10T12:00:06Z') });
    const ours = await store.reserveRemediation(request);
    mock.on(GetItemCommand).resolves({ Item: pending('i-0abc@2026-03-10T12:00:01Z') });
    const theirs = await store.reserveRemediation(request);

    // Assess
    expect(ours).toEqual({ granted: true, leaseId: 'i-0abc@2026-03-10T12:00:06Z' });
    expect(theirs).toEqual({ granted: false, reason: 'in_progress' });
  });

  it('records a fault in an incident scope, keeping the latest, and reads the scope back within the window', async () => {
    // Prepare
    mock.on(QueryCommand).resolves({
      Items: [
        marshall({
          pk: 'storm#asg#p5-train',
          sk: 'fault#i-0abc',
          instance_id: 'i-0abc',
          at: '2026-03-10T12:00:06Z',
          at_ms: 1773144006000,
        }),
        marshall({
          pk: 'storm#asg#p5-train',
          sk: 'fault#i-0old',
          instance_id: 'i-0old',
          at: '2026-03-10T11:50:06Z',
          at_ms: 1773143406000,
        }),
      ],
    });

    // Act
    const members = await store.recordFault('asg#p5-train', 'i-0abc', '2026-03-10T12:00:06Z', 600);

    // Assess
    expect(members).toEqual([{ instance_id: 'i-0abc', at: '2026-03-10T12:00:06Z' }]);
    expect(mock.commandCalls(PutItemCommand)[0]!.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      Item: marshall({
        pk: 'storm#asg#p5-train',
        sk: 'fault#i-0abc',
        instance_id: 'i-0abc',
        at: '2026-03-10T12:00:06Z',
        at_ms: 1773144006000,
        expires_at: 1773144006 + 600 + 3600,
      }),
      ConditionExpression: 'attribute_not_exists(pk) OR #at < :at',
      ExpressionAttributeNames: { '#at': 'at_ms' },
      ExpressionAttributeValues: marshall({ ':at': 1773144006000 }),
    });
    expect(mock.commandCalls(QueryCommand)[0]!.args[0].input).toMatchObject({
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :b)',
      ConsistentRead: true,
    });
  });

  it('gives back an alert claim only if it is still the one made at that time', async () => {
    // Prepare
    mock.on(DeleteItemCommand).resolves({});

    // Act
    await store.releaseAlert('escalation:i-0abc', '2026-03-10T12:00:00Z');

    // Assess
    expect(mock.commandCalls(DeleteItemCommand)[0]!.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      Key: marshall({ pk: 'alert#escalation:i-0abc', sk: 'last_sent' }),
      ConditionExpression: '#at = :at',
      ExpressionAttributeNames: { '#at': 'at_ms' },
      ExpressionAttributeValues: marshall({ ':at': 1773144000000 }),
    });
  });

  it('refuses a time that is not ISO 8601', async () => {
    // Act / Assess
    await expect(store.claimAlert('a', 'yesterday', 60)).rejects.toThrow(TypeError);
    expect(mock.calls()).toHaveLength(0);
  });

  it('leases, confirms and frees an alert with the documented items and conditions', async () => {
    // Prepare: 2026-03-10T12:00:00Z = 1773144000 s
    mock.on(GetItemCommand).resolves({});
    mock.on(DeleteItemCommand).resolves({});

    // Act
    const leased = await store.leaseAlert('tensor_idle:i-0abc', '2026-03-10T12:00:00.000Z', 3600, 120);
    await store.confirmAlert('tensor_idle:i-0abc', '2026-03-10T12:00:00.000Z', 3600);

    // Assess
    expect(leased).toBe(true);
    expect(mock.commandCalls(PutItemCommand).map((c) => c.args[0].input)).toEqual([
      {
        TableName: 'gpu-sentinel-state',
        Item: marshall({
          pk: 'alert#tensor_idle:i-0abc',
          sk: 'lease',
          at: '2026-03-10T12:00:00.000Z',
          at_ms: 1773144000000,
          expires_at: 1773144000 + 120 + 86400,
        }),
        ConditionExpression: 'attribute_not_exists(pk) OR #at <= :expired',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':expired': 1773144000000 - 120_000 }),
      },
      {
        TableName: 'gpu-sentinel-state',
        Item: marshall({
          pk: 'alert#tensor_idle:i-0abc',
          sk: 'last_sent',
          at: '2026-03-10T12:00:00.000Z',
          at_ms: 1773144000000,
          expires_at: 1773144000 + 3600 + 86400,
        }),
      },
    ]);
    expect(mock.commandCalls(GetItemCommand)[0]?.args[0].input).toEqual({
      TableName: 'gpu-sentinel-state',
      Key: marshall({ pk: 'alert#tensor_idle:i-0abc', sk: 'last_sent' }),
      ConsistentRead: true,
    });
    expect(mock.commandCalls(DeleteItemCommand).map((c) => c.args[0].input)).toEqual([
      {
        TableName: 'gpu-sentinel-state',
        Key: marshall({ pk: 'alert#tensor_idle:i-0abc', sk: 'lease' }),
        ConditionExpression: '#at = :at',
        ExpressionAttributeNames: { '#at': 'at_ms' },
        ExpressionAttributeValues: marshall({ ':at': 1773144000000 }),
      },
    ]);
  });

  it('frees the lease again when the last send is within the cooldown', async () => {
    // Prepare: sent 10 min ago
    mock.on(GetItemCommand).resolves({ Item: marshall({ at_ms: 1773144000000 - 600_000 }) });
    mock.on(DeleteItemCommand).resolves({});

    // Act
    const leased = await store.leaseAlert('tensor_idle:i-0abc', '2026-03-10T12:00:00.000Z', 3600, 120);

    // Assess
    expect(leased).toBe(false);
    expect(mock.commandCalls(DeleteItemCommand)).toHaveLength(1);
  });

  it('throws StoreUnavailableError when the lease cannot be written', async () => {
    // Prepare
    mock.on(PutItemCommand).rejects(new Error('ProvisionedThroughputExceededException'));

    // Act / Assess
    await expect(store.leaseAlert('x:i-0abc', '2026-03-10T12:00:00.000Z', 3600, 120)).rejects.toBeInstanceOf(
      StoreUnavailableError,
    );
  });
});

describeStateStoreContract('DynamoDbStateStore (fake DynamoDB)', async () => ({
  store: new DynamoDbStateStore({ client: fakeDynamoDb().client, tableName: 'gpu-sentinel-state' }),
}));

describeStateStoreContract('DynamoDbStateStore (fake DynamoDB, 2–20 ms per request)', async () => ({
  store: new DynamoDbStateStore({
    client: fakeDynamoDb({ latencyMs: () => 2 + Math.random() * 18 }).client,
    tableName: 'gpu-sentinel-state',
  }),
}));
