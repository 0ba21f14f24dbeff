import type { DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

/**
 * What every AWS SDK v3 client a Lambda builds is given on top of the Lambda's environment
 * (region and credentials from `AWS_REGION` and the execution role when left out). In production
 * it is empty; a benchmark or a test passes a `requestHandler` answering canned service responses,
 * static `credentials` and a `region`, so the real clients serialise, sign and parse every call
 * without a network.
 *
 * The fields are the SDK's shared client settings (the same smithy types in every client's config).
 */
export type SdkClientConfig = Pick<DynamoDBClientConfig, 'region' | 'credentials' | 'requestHandler'>;

/** What {@link leanClient} needs of an SDK client. */
interface SdkClientLike {
  readonly middlewareStack: { remove(toRemove: string): boolean };
}

/**
 * Builds an SDK client for the Lambda hot path: `cacheMiddleware` (the middleware stack is resolved
 * once per command type, not on every call; nothing here changes it after the first request) and
 * without the SDK's `loggerMiddleware`, which runs the sensitive-data filters over every input and
 * output (a Firehose batch's records included) to hand them to a logger that is a no-op in Lambda.
 * Errors still reach the caller unchanged.
 *
 * @param make - builds the client from the settings it is given
 * @param sdk - {@link SdkClientConfig} of the Lambda
 * @returns the client
 * @example
 * const firehose = leanClient((config) => new FirehoseClient(config), sdk);
 */
export function leanClient<C extends SdkClientLike>(
  make: (config: SdkClientConfig & { readonly cacheMiddleware: boolean }) => C,
  sdk: SdkClientConfig,
): C {
  const client = make({ cacheMiddleware: true, ...sdk });
  client.middlewareStack.remove('loggerMiddleware');
  return client;
}
