import {
  COMMON_VARIABLES,
  type HandlerVariables,
  LAMBDA_VARIABLES,
  type LambdaName,
  type LambdaVariable,
} from '../domain/lambda-environment';

/** Thrown at cold start when an environment variable the CDK stack sets is missing or malformed. */
export class IngestConfigError extends Error {
  override readonly name = 'IngestConfigError';
}

/**
 * @param env - the environment
 * @param name - variable name (one of `lambdas/domain/lambda-environment.ts`)
 * @returns its value
 * @throws {IngestConfigError} naming the variable when it is missing or empty
 */
export function requiredEnv(env: NodeJS.ProcessEnv, name: LambdaVariable): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new IngestConfigError(`Expected environment variable ${name} (set by the CDK stack), got nothing`);
  }
  return value;
}

/** What handler `F` reads: its own variables and the common ones (the store's are read by `storeFromEnvironment`). */
export type FunctionVariables<F extends LambdaName> = HandlerVariables<(typeof LAMBDA_VARIABLES)[F]> &
  HandlerVariables<typeof COMMON_VARIABLES>;

/**
 * Reads function `F`'s variables once, as `lambdas/domain/lambda-environment.ts` lists them: every
 * `required` one must be there, `optional` and `reserved` ones are `undefined` when unset; `runtime`
 * ones are left to Node.js.
 *
 * @param name - the function, e.g. `ingest`
 * @param env - the environment
 * @returns the values by variable name
 * @throws {IngestConfigError} naming the first `required` variable that is missing or empty
 */
export function readFunctionVariables<F extends LambdaName>(
  name: F,
  env: NodeJS.ProcessEnv,
): FunctionVariables<F> {
  const values: Record<string, string | undefined> = {};
  const table: Readonly<Record<string, string>> = { ...COMMON_VARIABLES, ...LAMBDA_VARIABLES[name] };
  for (const [variable, use] of Object.entries(table)) {
    if (use === 'required') values[variable] = requiredEnv(env, variable as LambdaVariable);
    else if (use === 'optional' || use === 'reserved') values[variable] = env[variable];
  }
  return values as FunctionVariables<F>;
}
