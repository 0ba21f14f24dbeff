import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';

type Item = Record<string, AttributeValue>;

/**
 * A mocked DynamoDBClient holding items in memory and evaluating the few expressions the state
 * store uses: `attribute_not_exists(pk)`, optionally `OR #at > :v` / `OR #at <= :v` (numbers); deletes
 * with `attribute_exists(pk)` or `#at = :v`;
 * key conditions `pk = :p AND sk >= :since` and `pk = :p AND begins_with(sk, :b)`. Anything else
 * throws, so a changed expression fails the tests instead of passing silently.
 *
 * @returns the client and its items by `pk\u0000sk`
 */
export function fakeDynamoDb(): { client: DynamoDBClient; items: Map<string, Item> } {
  const client = new DynamoDBClient({ region: 'us-east-1' });
  const mock = mockClient(client);
  const items = new Map<string, Item>();
  const key = (i: Item): string => `${i.pk?.S}\u0000${i.sk?.S}`;

  mock
    .on(PutItemCommand)
    .callsFake(
      (input: {
        Item: Item;
        ConditionExpression?: string;
        ExpressionAttributeNames?: Record<string, string>;
        ExpressionAttributeValues?: Item;
      }) => {
        const existing = items.get(key(input.Item));
        const cond = input.ConditionExpression;
        if (cond !== undefined && existing !== undefined) {
          const m = /^attribute_not_exists\(pk\)(?: OR (#\w+) (>|<=) (:\w+))?$/.exec(cond);
          if (m === null) throw new Error(`fake DynamoDB: unsupported condition ${cond}`);
          let ok = false;
          if (m[1] !== undefined) {
            const attr = input.ExpressionAttributeNames?.[m[1]] ?? '';
            const stored = Number(existing[attr]?.N);
            const value = Number(input.ExpressionAttributeValues?.[m[3] ?? '']?.N);
            ok = m[2] === '>' ? stored > value : stored <= value;
          }
          if (!ok)
            throw new ConditionalCheckFailedException({
              message: 'The conditional request failed',
              $metadata: {},
            });
        }
        items.set(key(input.Item), input.Item);
        return {};
      },
    );

  mock
    .on(DeleteItemCommand)
    .callsFake(
      (input: {
        Key: Item;
        ConditionExpression?: string;
        ExpressionAttributeNames?: Record<string, string>;
        ExpressionAttributeValues?: Item;
      }) => {
        const existing = items.get(key(input.Key));
        const cond = input.ConditionExpression;
        if (cond !== undefined) {
          let ok: boolean;
          const eq = /^(#\w+) = (:\w+)$/.exec(cond);
          if (cond === 'attribute_exists(pk)') ok = existing !== undefined;
          else if (eq !== null) {
            const attr = input.ExpressionAttributeNames?.[eq[1] ?? ''] ?? '';
            ok =
              existing !== undefined &&
              existing[attr]?.N === input.ExpressionAttributeValues?.[eq[2] ?? '']?.N;
          } else throw new Error(`fake DynamoDB: unsupported delete condition ${cond}`);
          if (!ok)
            throw new ConditionalCheckFailedException({
              message: 'The conditional request failed',
              $metadata: {},
            });
        }
        items.delete(key(input.Key));
        return {};
      },
    );

  mock.on(GetItemCommand).callsFake((input: { Key: Item }) => {
    const item = items.get(key(input.Key));
    return item === undefined ? {} : { Item: item };
  });

  mock
    .on(QueryCommand)
    .callsFake((input: { KeyConditionExpression: string; ExpressionAttributeValues: Item }) => {
      const v = unmarshall(input.ExpressionAttributeValues) as Record<string, string>;
      let match: (pk: string, sk: string) => boolean;
      if (input.KeyConditionExpression === 'pk = :p AND sk >= :since')
        match = (pk, sk) => pk === v[':p'] && sk >= (v[':since'] ?? '');
      else if (input.KeyConditionExpression === 'pk = :p AND begins_with(sk, :b)')
        match = (pk, sk) => pk === v[':p'] && sk.startsWith(v[':b'] ?? '');
      else throw new Error(`fake DynamoDB: unsupported key condition ${input.KeyConditionExpression}`);
      const found = [...items.values()]
        .filter((i) => match(i.pk?.S ?? '', i.sk?.S ?? ''))
        .sort((a, b) => ((a.sk?.S ?? '') < (b.sk?.S ?? '') ? -1 : 1));
      return { Items: found };
    });
  return { client, items };
}
