/**
 * A value made on first use and shared by every later use: how the Lambdas load an adapter module
 * and its AWS SDK client only when a request needs it, so module init (the cold start) parses
 * and evaluates only what every request needs.
 *
 * A failed make is not remembered: the next use tries again (a throttled credentials fetch or a
 * transient error during the first request must not break the warm Lambda for good).
 *
 * @typeParam T - what `make` resolves to
 * @param make - builds the value, typically `await import(…)` of the adapter and its client
 * @returns a function answering the same promise on every call once `make` succeeded
 * @example
 * const sns = lazily(async () => new (await import('@aws-sdk/client-sns')).SNSClient({}));
 * await (await sns()).send(command);
 */
export function lazily<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    made ??= make().catch((error: unknown) => {
      made = undefined;
      throw error;
    });
    return made;
  };
}
