import { createHash } from 'node:crypto';
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
  type TransactWriteItem,
  TransactWriteItemsCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { StoreUnavailableError } from '../domain/port-errors';

/** True for DynamoDB's failed-condition answer (the SDK's class, which matches its copies too). */
function isConditionFailed(error: unknown): boolean {
  return error instanceof ConditionalCheckFailedException;
}

/**
 * The idempotency token of a transaction: the first 36 hex digits of the SHA-256 of its items
 * (botocore's `ClientRequestToken`: a string of 1–36 characters). Deterministic per decision (the
 * items carry the instance, the action, the lease id `<instance>@<at>` and the budget slots), so a
 * retry of the same request reuses it, and a request with other items never does (DynamoDB answers
 * `IdempotentParameterMismatchException` to one token reused with other items).
 *
 * @param items - the transaction's items
 * @returns 36 lowercase hex digits
 */
export function transactionToken(items: readonly TransactWriteItem[]): string {
  return createHash('sha256').update(JSON.stringify(items)).digest('hex').slice(0, 36);
}

/**
 * The state table as the state store's parts use it (`DynamoDbStateStore`): one client, one table
 * with string keys `pk` and `sk`, and every failure but a failed condition turned into
 * {@link StoreUnavailableError} naming the operation and the table.
 */
export class DynamoDbStateTable {
  readonly #client: DynamoDBClient;
  /** The table name. */
  readonly name: string;

  /**
   * @param client - the DynamoDB client
   * @param name - the table (keys `pk`, `sk`; TTL attribute `expires_at`, epoch s)
   */
  constructor(client: DynamoDBClient, name: string) {
    this.#client = client;
    this.name = name;
  }

  /**
   * A conditional put.
   * @param input - the put, without the table name
   * @param operation - named in the error
   * @returns true when written, false when the condition failed
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  putIf(input: Omit<PutItemCommandInput, 'TableName'>, operation: string): Promise<boolean> {
    return this.#conditional(
      () => this.#client.send(new PutItemCommand({ TableName: this.name, ...input })),
      operation,
    );
  }

  /**
   * A conditional (or plain) delete.
   * @param input - the delete, without the table name
   * @param operation - named in the error
   * @returns true when deleted, false when the condition failed (nothing to delete)
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  deleteIf(input: Omit<DeleteItemCommandInput, 'TableName'>, operation: string): Promise<boolean> {
    return this.#conditional(
      () => this.#client.send(new DeleteItemCommand({ TableName: this.name, ...input })),
      operation,
    );
  }

  /**
   * An unconditional put.
   * @param item - the item
   * @param operation - named in the error
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async put(item: Record<string, AttributeValue>, operation: string): Promise<void> {
    try {
      await this.#client.send(new PutItemCommand({ TableName: this.name, Item: item }));
    } catch (error) {
      throw this.unavailable(operation, error);
    }
  }

  /**
   * A strongly consistent read of one item.
   * @param key - its `pk` and `sk`, marshalled
   * @param operation - named in the error
   * @returns the item, unmarshalled, or undefined when there is none
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async get(
    key: Record<string, AttributeValue>,
    operation: string,
  ): Promise<Record<string, unknown> | undefined> {
    try {
      const out = await this.#client.send(
        new GetItemCommand({ TableName: this.name, Key: key, ConsistentRead: true }),
      );
      return out.Item === undefined ? undefined : unmarshall(out.Item);
    } catch (error) {
      throw this.unavailable(operation, error);
    }
  }

  /**
   * A query over every page.
   * @param input - the query, without the table name
   * @param operation - named in the error
   * @returns every item, unmarshalled, in sort key order
   * @throws {StoreUnavailableError} when DynamoDB fails
   */
  async query(
    input: Omit<QueryCommandInput, 'TableName'>,
    operation: string,
  ): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let start: QueryCommandInput['ExclusiveStartKey'];
    do {
      try {
        const out = await this.#client.send(
          new QueryCommand({
            TableName: this.name,
            ...input,
            ...(start ? { ExclusiveStartKey: start } : {}),
          }),
        );
        for (const item of out.Items ?? []) items.push(unmarshall(item));
        start = out.LastEvaluatedKey;
      } catch (error) {
        throw this.unavailable(operation, error);
      }
    } while (start);
    return items;
  }

  /**
   * A `TransactWriteItems` call with a `ClientRequestToken` ({@link transactionToken} of the items),
   * so a retry of a committed request (the SDK's own retry after a lost answer, or ours) is answered
   * as a success by DynamoDB instead of being cancelled by the items it already wrote (the token is
   * idempotent for 10 minutes, per the TransactWriteItems API reference). The SDK's error is passed
   * through as it comes (the caller reads a `TransactionCanceledException`'s reasons).
   * @param items - the transaction's items (each names the table)
   */
  async transact(items: TransactWriteItem[]): Promise<void> {
    await this.#client.send(
      new TransactWriteItemsCommand({ TransactItems: items, ClientRequestToken: transactionToken(items) }),
    );
  }

  /**
   * The error of a failed call.
   * @param operation - what was asked, e.g. `PutItem alert lease`
   * @param error - the SDK's error (the cause)
   * @returns the error to throw
   */
  unavailable(operation: string, error: unknown): StoreUnavailableError {
    return new StoreUnavailableError(
      `${operation} ${this.name}`,
      'expected DynamoDB to answer, it failed; retry later',
      { cause: error },
    );
  }

  /** Runs a conditional write: true when done, false when its condition failed, else unavailable. */
  async #conditional(write: () => Promise<unknown>, operation: string): Promise<boolean> {
    try {
      await write();
      return true;
    } catch (error) {
      if (isConditionFailed(error)) return false;
      throw this.unavailable(operation, error);
    }
  }
}
