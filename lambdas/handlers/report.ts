import { Logger } from '@aws-lambda-powertools/logger';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { AthenaCurReads, curTableRef } from '../adapters/athena-cur-reads';
import { S3ReportFiles } from '../adapters/s3-report-files';
import { SnsReportNotifier } from '../adapters/sns-report-notifier';
import type { CurPricedReads } from '../app/write-report';
import { STORE_VARIABLE } from '../domain/lambda-environment';
import { type FunctionVariables, IngestConfigError, readFunctionVariables, requiredEnv } from './environment';
import { lazily } from './lazy';
import { powertoolsLog } from './log';
import { createReportHandler, type ReportRunResult } from './report-handler';
import { storeFromEnvironment } from './store-from-environment';

/**
 * The report Lambda (EventBridge Scheduler: daily, weekly, monthly; input `{ "period": … }`). Reads
 * its settings from the environment the CDK stack sets (lib/finance-reports.ts) once per cold start
 * and delegates to {@link createReportHandler}.
 *
 * Environment (`LAMBDA_VARIABLES.report` in lambdas/domain/lambda-environment.ts): the store's (`STORE` and its settings, see `storeFromEnvironment`), `REPORTS_BUCKET`,
 * `REPORTS_KEY_ARN`, `TOPIC_REPORTS_ARN`; optionally `CUR_DATABASE` and `CUR_TABLE`, the Glue table
 * of a Cost and Usage Report 2.0 export the reports price instance-hours from (Athena store only).
 */

/**
 * The CUR-priced reads when the environment names a CUR table, through Athena (its SDK loaded on
 * first use).
 * @throws {IngestConfigError} when only one of `CUR_DATABASE`/`CUR_TABLE` is set, or the store is not Athena
 */
function curFromEnvironment(
  vars: FunctionVariables<'report'>,
  env: NodeJS.ProcessEnv,
): CurPricedReads | undefined {
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

/**
 * Builds the production handler from the environment.
 * @throws {IngestConfigError} naming the missing variable (the store's too), or a CUR table without the Athena store
 * @throws {StoreQueryError} when `CUR_DATABASE` or `CUR_TABLE` is not a Glue name
 */
export function reportHandlerFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown) => Promise<ReportRunResult> {
  const vars = readFunctionVariables('report', env);
  const logger = new Logger({ serviceName: vars.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-report' });
  const cur = curFromEnvironment(vars, env);
  return createReportHandler({
    store: storeFromEnvironment(env),
    ...(cur !== undefined ? { cur } : {}),
    files: new S3ReportFiles({
      client: new S3Client({}),
      bucket: vars.REPORTS_BUCKET,
      kmsKeyArn: vars.REPORTS_KEY_ARN,
    }),
    notifier: new SnsReportNotifier({
      client: new SNSClient({}),
      topicArn: vars.TOPIC_REPORTS_ARN,
    }),
    log: powertoolsLog(logger),
  });
}

let cached: ((event: unknown) => Promise<ReportRunResult>) | undefined;

/** The Lambda entry point (`handler` in the CDK stack). */
export async function handler(event: unknown): Promise<ReportRunResult> {
  cached ??= reportHandlerFromEnvironment();
  return cached(event);
}
