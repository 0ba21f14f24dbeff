import {
  type AttributeValue,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';

type Item = Record<string, AttributeValue>;

/** The expression parts of a conditional write, as the SDK sends them. */
interface Conditional {
  readonly ConditionExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
  readonly ExpressionAttributeValues?: Item;
}

/** Options of {@link fakeDynamoDb}. */
export interface FakeDynamoDbOptions {
  /**
   * Delay before each request is evaluated, ms (a network round trip). Each request's condition is
   * checked and its write applied atomically after the delay, as DynamoDB does per item (and per
   * transaction), so concurrent read-then-write callers interleave as they would against AWS.
   * @default no delay
   */
  readonly latencyMs?: () => number;
  /**
   * How many committed `TransactWriteItems` lose their answer on the way back (a timeout or a reset
   * connection after DynamoDB committed). The SDK retries such a request with the same input, so
   * the fake then evaluates the same request again and answers with that retry's outcome: with a
   * `ClientRequestToken` seen before (within its 10 minutes) and the same items, DynamoDB answers
   * success without evaluating; without one, the retry is judged against the items it wrote.
   * @default 0
   */
  readonly loseTransactAnswers?: number;
  /**
   * Whether `ClientRequestToken` is honoured (false: as an emulator that ignores it, or a retry
   * after the token's 10 minutes, so the caller must recognise its own lease instead).
   * @default true
   */
  readonly honourTokens?: boolean;
}

const OPERATORS = ['<=', '>=', '<>', '=', '<', '>'] as const;

/**
 * Evaluates a DynamoDB condition expression against an item (absent = `undefined`): `OR`, `AND`,
 * parentheses, `attribute_not_exists(a)`, `attribute_exists(a)` and the comparators `= <> < <= > >=`
 * on numbers (`N`) and strings (`S`); a comparison with a missing attribute is false, as in
 * DynamoDB. Anything else throws, so an expression the fake does not understand fails the test.
 */
function evaluate(input: Conditional, item: Item | undefined): boolean {
  const text = input.ConditionExpression;
  if (text === undefined) return true;
  const tokens = text.match(/\(|\)|<=|>=|<>|=|<|>|[#:]?[A-Za-z_][A-Za-z0-9_]*/g) ?? [];
  let at = 0;
  const peek = (): string | undefined => tokens[at];
  const next = (): string => {
    const t = tokens[at++];
    if (t === undefined) throw new Error(`fake DynamoDB: unexpected end of condition ${text}`);
    return t;
  };
  const attr = (name: string): string =>
    name.startsWith('#') ? (input.ExpressionAttributeNames?.[name] ?? '') : name;
  const operand = (name: string): AttributeValue | undefined =>
    name.startsWith(':') ? input.ExpressionAttributeValues?.[name] : item?.[attr(name)];
  const compare = (a: AttributeValue | undefined, op: string, b: AttributeValue | undefined): boolean => {
    if (a === undefined || b === undefined) return false;
    const x: number | string | undefined = a.N !== undefined ? Number(a.N) : a.S;
    const y: number | string | undefined = b.N !== undefined ? Number(b.N) : b.S;
    if (x === undefined || y === undefined || typeof x !== typeof y) return false;
    switch (op) {
      case '=':
        return x === y;
      case '<>':
        return x !== y;
      case '<':
        return x < y;
      case '<=':
        return x <= y;
      case '>':
        return x > y;
      default:
        return x >= y;
    }
  };
  const factor = (): boolean => {
    const t = next();
    if (t === '(') {
      const v = or();
      if (next() !== ')') throw new Error(`fake DynamoDB: unbalanced condition ${text}`);
      return v;
    }
    if (t === 'attribute_not_exists' || t === 'attribute_exists') {
      next();
      const name = attr(next());
      next();
      const exists = item?.[name] !== undefined;
      return t === 'attribute_exists' ? exists : !exists;
    }
    const op = next();
    if (!(OPERATORS as readonly string[]).includes(op))
      throw new Error(`fake DynamoDB: unsupported condition ${text}`);
    return compare(operand(t), op, operand(next()));
  };
  const and = (): boolean => {
    let v = factor();
    while (peek() === 'AND') {
      next();
      v = factor() && v;
    }
    return v;
  };
  const or = (): boolean => {
    let v = and();
    while (peek() === 'OR') {
      next();
      v = and() || v;
    }
    return v;
  };
  const result = or();
  if (at !== tokens.length) throw new Error(`fake DynamoDB: unsupported condition ${text}`);
  return result;
}

/**
 * A mocked DynamoDBClient holding items in memory with DynamoDB's write semantics: conditional
 * `PutItem` / `DeleteItem` (failed condition → `ConditionalCheckFailedException`), `GetItem`,
 * `Query` with the key conditions `pk = :p AND sk >= :since` and `pk = :p AND begins_with(sk, :b)`,
 * and `TransactWriteItems` (all conditions checked, then all writes applied, or none: a failed
 * condition cancels the whole transaction with `TransactionCanceledException` and one
 * `CancellationReasons` entry per item; two operations on one item are a `ValidationException`;
 * a `ClientRequestToken` seen with the same items answers success without evaluating, with other
 * items `IdempotentParameterMismatchException`).
 * Anything else throws, so a changed expression fails the tests instead of passing silently.
 *
 * @param options - see {@link FakeDynamoDbOptions}
 * @returns the client and its items by `pk\u0000sk`
 */
export function fakeDynamoDb(options: FakeDynamoDbOptions = {}): {
  client: DynamoDBClient;
  items: Map<string, Item>;
} {
  const client = new DynamoDBClient({ region: 'us-east-1' });
  const mock = mockClient(client);
  const items = new Map<string, Item>();
  const key = (i: Item): string => `${i.pk?.S}\u0000${i.sk?.S}`;
  const delay = async (): Promise<void> => {
    const ms = options.latencyMs?.() ?? 0;
    if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
  };
  const conditionFailed = () =>
    new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

  mock.on(PutItemCommand).callsFake(async (input: Conditional & { Item: Item }) => {
    await delay();
    if (!evaluate(input, items.get(key(input.Item)))) throw conditionFailed();
    items.set(key(input.Item), input.Item);
    return {};
  });

  mock.on(DeleteItemCommand).callsFake(async (input: Conditional & { Key: Item }) => {
    await delay();
    if (!evaluate(input, items.get(key(input.Key)))) throw conditionFailed();
    items.delete(key(input.Key));
    return {};
  });

  mock.on(GetItemCommand).callsFake(async (input: { Key: Item }) => {
    await delay();
    const item = items.get(key(input.Key));
    return item === undefined ? {} : { Item: item };
  });

  type TransactInput = {
    TransactItems: { Put?: Conditional & { Item: Item }; Delete?: Conditional & { Key: Item } }[];
    ClientRequestToken?: string;
  };
  // ClientRequestToken → the items it committed (DynamoDB keeps a token 10 minutes; a test is shorter).
  const tokens = new Map<string, string>();
  let answersToLose = options.loseTransactAnswers ?? 0;
  const transact = (input: TransactInput): void => {
    const body = JSON.stringify(input.TransactItems);
    const honour = options.honourTokens ?? true;
    if (honour && input.ClientRequestToken !== undefined && tokens.has(input.ClientRequestToken)) {
      if (tokens.get(input.ClientRequestToken) === body) return;
      throw Object.assign(new Error('Request with the same client token has different parameters'), {
        name: 'IdempotentParameterMismatchException',
      });
    }
    const ops = input.TransactItems.map((t) => {
      if (t.Put !== undefined) return { k: key(t.Put.Item), cond: t.Put, put: t.Put.Item };
      if (t.Delete !== undefined) return { k: key(t.Delete.Key), cond: t.Delete, put: undefined };
      throw new Error('fake DynamoDB: only Put and Delete are modelled in TransactWriteItems');
    });
    if (new Set(ops.map((o) => o.k)).size !== ops.length) {
      throw Object.assign(new Error('Transaction request cannot include multiple operations on one item'), {
        name: 'ValidationException',
      });
    }
    const codes = ops.map((o) => (evaluate(o.cond, items.get(o.k)) ? 'None' : 'ConditionalCheckFailed'));
    if (codes.some((c) => c !== 'None')) {
      throw new TransactionCanceledException({
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}]`,
        $metadata: {},
        CancellationReasons: codes.map((Code) => ({ Code })),
      });
    }
    for (const o of ops) {
      if (o.put === undefined) items.delete(o.k);
      else items.set(o.k, o.put);
    }
    if (input.ClientRequestToken !== undefined) tokens.set(input.ClientRequestToken, body);
  };

  mock.on(TransactWriteItemsCommand).callsFake(async (input: TransactInput) => {
    await delay();
    transact(input);
    if (answersToLose > 0) {
      // Committed, but the answer is lost: the SDK sends the same request again.
      answersToLose -= 1;
      await delay();
      transact(input);
    }
    return {};
  });

  mock
    .on(QueryCommand)
    .callsFake(async (input: { KeyConditionExpression: string; ExpressionAttributeValues: Item }) => {
      await delay();
      const v = unmarshall(input.ExpressionAttributeValues) as Record<string, string>;
      let match: (pk: string, sk: string) => boolean;
      if (input.KeyConditionExpression === 'pk = :p') match = (pk) => pk === v[':p'];
      else if (input.KeyConditionExpression === 'pk = :p AND sk >= :since')
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
