/** Thrown at cold start when an environment variable the CDK stack sets is missing or malformed. */
export class IngestConfigError extends Error {
  override readonly name = 'IngestConfigError';
}

/**
 * @param env - the environment
 * @param name - variable name
 * @returns its value
 * @throws {IngestConfigError} naming the variable when it is missing or empty
 */
export function requiredEnv(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new IngestConfigError(`Expected environment variable ${name} (set by the CDK stack), got nothing`);
  }
  return value;
}
