import { Logger } from '@aws-lambda-powertools/logger';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { S3ReportFiles } from '../adapters/s3-report-files';
import { SnsReportNotifier } from '../adapters/sns-report-notifier';
import { curReadsFromEnvironment } from './cur-from-environment';
import { readFunctionVariables } from './environment';
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
 * Builds the production handler from the environment.
 * @throws {IngestConfigError} naming the missing variable (the store's too), or a CUR table without the Athena store
 * @throws {StoreQueryError} when `CUR_DATABASE` or `CUR_TABLE` is not a Glue name
 */
export function reportHandlerFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown) => Promise<ReportRunResult> {
  const vars = readFunctionVariables('report', env);
  const logger = new Logger({ serviceName: vars.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-report' });
  const cur = curReadsFromEnvironment(vars, env);
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
