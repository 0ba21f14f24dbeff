import { AthenaCurReads, curTableRef } from '../adapters/athena-cur-reads';
import { STORE_VARIABLE } from '../domain/lambda-environment';
import { IngestConfigError, requiredEnv } from './environment';
import { lazily } from './lazy';

/** The CUR variables a function reads (`CUR_DATABASE`, `CUR_TABLE`; both optional, both or neither). */
export interface CurVariables {
  readonly CUR_DATABASE: string | undefined;
  readonly CUR_TABLE: string | undefined;
}

/**
 * The reads priced from a Cost and Usage Report 2.0 when the environment names its Glue table
 * (`CUR_DATABASE`, `CUR_TABLE`), through the Athena store's workgroup; the Athena SDK is loaded on
 * first use. Used by the report Lambda (`CurPricedReads`) and the fleet evaluator
 * (`CurPricedFleetReads`).
 *
 * @param vars - the function's CUR variables
 * @param env - the environment (the Athena store's variables are read from it)
 * @returns the reads, or `undefined` when neither variable is set
 * @throws {IngestConfigError} when only one of `CUR_DATABASE`/`CUR_TABLE` is set, the store is not
 *   Athena, or an Athena store variable is missing
 * @throws {StoreQueryError} when `CUR_DATABASE` or `CUR_TABLE` is not a Glue name
 */
export function curReadsFromEnvironment(
  vars: CurVariables,
  env: NodeJS.ProcessEnv,
): AthenaCurReads | undefined {
  const database = vars.CUR_DATABASE;
  const table = vars.CUR_TABLE;
  if (database === undefined && table === undefined) return undefined;
  if (database === undefined || table === undefined) {
    throw new IngestConfigError(
      `Expected CUR_DATABASE and CUR_TABLE together (the Glue table of a CUR 2.0 export), got only ${database === undefined ? 'CUR_TABLE' : 'CUR_DATABASE'}`,
    );
  }
  if (requiredEnv(env, STORE_VARIABLE) !== 'athena') {
    throw new IngestConfigError(
      `Expected STORE=athena with CUR_DATABASE (the CUR is read through Athena), got STORE=${env[STORE_VARIABLE]}`,
    );
  }
  const athenaDatabase = requiredEnv(env, 'ATHENA_DATABASE');
  const workGroup = requiredEnv(env, 'ATHENA_WORKGROUP');
  const streams = {
    gpu_windows: requiredEnv(env, 'FIREHOSE_GPU_STREAM'),
    efa_windows: requiredEnv(env, 'FIREHOSE_EFA_STREAM'),
    events: requiredEnv(env, 'FIREHOSE_EVENTS_STREAM'),
  };
  const athena = lazily(async () =>
    (await import('./make-athena-store')).makeAthenaStore(
      { streams, database: athenaDatabase, workGroup },
      {},
    ),
  );
  return new AthenaCurReads({
    query: async (sql) => (await athena()).query(sql),
    gpuTable: `"${athenaDatabase}"."gpu_windows"`,
    curTable: curTableRef(database, table),
  });
}
