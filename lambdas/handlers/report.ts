import { Logger } from '@aws-lambda-powertools/logger';
import { S3Client } from '@aws-sdk/client-s3';
import { SNSClient } from '@aws-sdk/client-sns';
import { TimestreamQueryClient } from '@aws-sdk/client-timestream-query';
import { TimestreamWriteClient } from '@aws-sdk/client-timestream-write';
import { S3ReportFiles } from '../adapters/s3-report-files';
import { SnsReportNotifier } from '../adapters/sns-report-notifier';
import { TimestreamStore } from '../adapters/timestream-store';
import { queryTimestreamWasteSeries } from '../adapters/timestream-waste-series';
import { createReportHandler, type ReportRunResult } from './report-handler';

/**
 * The report Lambda (EventBridge Scheduler: daily, weekly, monthly; input `{ "period": … }`). Reads
 * its settings from the environment the CDK stack sets (lib/report-function.ts) once per cold start
 * and delegates to {@link createReportHandler}.
 *
 * Environment: `TIMESTREAM_DATABASE`, `TIMESTREAM_GPU_TABLE`, `REPORTS_BUCKET`, `REPORTS_KEY_ARN`,
 * `TOPIC_REPORTS_ARN`.
 */

/** Thrown at cold start when a required environment variable is missing. */
export class ReportConfigError extends Error {
  override readonly name = 'ReportConfigError';
}

function required(env: NodeJS.ProcessEnv, name: string): string {
  const value = env[name];
  if (value === undefined || value === '') {
    throw new ReportConfigError(`Expected environment variable ${name} (set by the CDK stack), got nothing`);
  }
  return value;
}

/**
 * Builds the production handler from the environment.
 * @throws {ReportConfigError} naming the missing variable
 */
export function reportHandlerFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): (event: unknown) => Promise<ReportRunResult> {
  const logger = new Logger({ serviceName: env.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-report' });
  const database = required(env, 'TIMESTREAM_DATABASE');
  const gpuTable = required(env, 'TIMESTREAM_GPU_TABLE');
  const queryClient = new TimestreamQueryClient({});
  const store = new TimestreamStore({
    client: new TimestreamWriteClient({}),
    queryClient,
    database,
    tables: { gpu: gpuTable },
  });
  return createReportHandler({
    store: {
      queryWaste: (q) => store.queryWaste(q),
      queryWasteSeries: (q) => queryTimestreamWasteSeries(queryClient, database, gpuTable, q),
    },
    files: new S3ReportFiles({
      client: new S3Client({}),
      bucket: required(env, 'REPORTS_BUCKET'),
      kmsKeyArn: required(env, 'REPORTS_KEY_ARN'),
    }),
    notifier: new SnsReportNotifier({
      client: new SNSClient({}),
      topicArn: required(env, 'TOPIC_REPORTS_ARN'),
    }),
    log: {
      info: (message, data) => logger.info(message, data ?? {}),
      warn: (message, data) => logger.warn(message, data ?? {}),
      error: (message, data) => logger.error(message, data ?? {}),
    },
  });
}

let cached: ((event: unknown) => Promise<ReportRunResult>) | undefined;

/** The Lambda entry point (`handler` in the CDK stack). */
export async function handler(event: unknown): Promise<ReportRunResult> {
  cached ??= reportHandlerFromEnvironment();
  return cached(event);
}
