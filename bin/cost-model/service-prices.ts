/**
 * The AWS list prices the cost model uses (us-east-1, USD, first pricing tier, no free tier): the
 * one home of these numbers; `gpu-sentinel cost-model` prints them with their sources. AWS facts
 * around them are in docs/aws.md. "Secondary" marks a rate read from a third-party page or an
 * archived copy, not re-confirmed on the AWS pricing page: check them for your region and date.
 */

/** One metered price. */
export interface ServicePrice {
  /** USD per `unit`. */
  readonly usd: number;
  /** What one unit is. */
  readonly unit: string;
  /** Where the number comes from. */
  readonly source: string;
}

/** The meters of the deployed pipeline, keyed by service and meter. */
export const SERVICE_PRICES = {
  apiGatewayRestRequest: {
    usd: 3.5 / 1e6,
    unit: 'REST API request (first 333 M per month)',
    source: 'Amazon API Gateway pricing page (secondary)',
  },
  apiGatewayHttpRequest: {
    usd: 1.0 / 1e6,
    unit: 'HTTP API request (first 300 M per month, 512 KB steps)',
    source: 'Amazon API Gateway pricing page (secondary)',
  },
  lambdaArmGbSecond: {
    usd: 0.0000133334,
    unit: 'GB-second of an arm64 function (first 7.5 billion per month)',
    source: 'AWS Lambda pricing page (secondary)',
  },
  lambdaRequest: { usd: 0.2 / 1e6, unit: 'Lambda request', source: 'AWS Lambda pricing page (secondary)' },
  firehoseIngestGb: {
    usd: 0.029,
    unit: 'GB of Direct PUT ingestion, each record rounded up to 5 KB (first 500 TB)',
    source: 'Amazon Data Firehose pricing page (not re-confirmed)',
  },
  firehoseConversionGb: {
    usd: 0.018,
    unit: 'GB converted JSON → Parquet, same 5 KB steps',
    source: 'Amazon Data Firehose pricing page (not re-confirmed)',
  },
  s3StandardGbMonth: {
    usd: 0.023,
    unit: 'GB-month of S3 Standard (first 50 TB)',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  s3StandardIaGbMonth: {
    usd: 0.0125,
    unit: 'GB-month of S3 Standard-IA (≥ 30 days, ≥ 128 KiB per object)',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  s3GlacierIrGbMonth: {
    usd: 0.004,
    unit: 'GB-month of S3 Glacier Instant Retrieval (≥ 90 days, ≥ 128 KiB per object)',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  s3GlacierIrTransitionRequest: {
    usd: 0.02 / 1000,
    unit: 'S3 lifecycle transition to Glacier Instant Retrieval',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  s3GlacierIrRetrievalGb: {
    usd: 0.03,
    unit: 'GB retrieved from S3 Glacier Instant Retrieval',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  s3TransitionRequest: {
    usd: 0.01 / 1000,
    unit: 'S3 lifecycle transition to Standard-IA',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  s3PutRequest: {
    usd: 0.005 / 1000,
    unit: 'S3 PUT request (one per Firehose file)',
    source: 'Amazon S3 pricing page (not re-confirmed)',
  },
  athenaTbScanned: {
    usd: 5,
    unit: 'TB scanned by Athena (10 MB minimum per query)',
    source: 'Amazon Athena pricing page (not re-confirmed)',
  },
  timestreamWrite: {
    usd: 0.5 / 1e6,
    unit: 'Timestream 1 KiB write unit',
    source: 'Amazon Timestream pricing page, archived copy (secondary)',
  },
  timestreamMemoryGbHour: {
    usd: 0.036,
    unit: 'GB-hour in the Timestream memory store',
    source: 'Amazon Timestream pricing page, archived copy (secondary)',
  },
  timestreamMagneticGbMonth: {
    usd: 0.03,
    unit: 'GB-month in the Timestream magnetic store',
    source: 'Amazon Timestream pricing page, archived copy (secondary)',
  },
  dynamodbReadRequestUnit: {
    usd: 0.125 / 1e6,
    unit: 'DynamoDB on-demand read request unit (4 KB strongly consistent)',
    source: 'Amazon DynamoDB pricing page, on-demand after the November 2024 cut (secondary)',
  },
  dynamodbWriteRequestUnit: {
    usd: 0.625 / 1e6,
    unit: 'DynamoDB on-demand write request unit (1 KB)',
    source: 'Amazon DynamoDB pricing page, on-demand after the November 2024 cut (secondary)',
  },
  snsPublish: {
    usd: 0.5 / 1e6,
    unit: 'SNS standard publish (64 KB chunk)',
    source: 'Amazon SNS pricing page (secondary)',
  },
  cloudwatchCustomMetricMonth: {
    usd: 0.3,
    unit: 'custom metric-month (first 10,000; one per name and dimension values)',
    source: 'Amazon CloudWatch pricing page (secondary)',
  },
  cloudwatchLogsIngestGb: {
    usd: 0.5,
    unit: 'GB of CloudWatch Logs ingestion (function logs, EMF, API access logs)',
    source: 'Amazon CloudWatch pricing page (secondary)',
  },
  cloudwatchLogsStorageGbMonth: {
    usd: 0.03,
    unit: 'GB-month of CloudWatch Logs storage (compressed; the log groups keep 30 days)',
    source: 'Amazon CloudWatch pricing page (secondary)',
  },
  cloudwatchPutMetricDataRequest: {
    usd: 0.01 / 1000,
    unit: 'CloudWatch PutMetricData request (the fleet evaluator, one per run)',
    source: 'Amazon CloudWatch pricing page, API requests (secondary; docs/aws.md)',
  },
  cloudwatchAlarmMetric: {
    usd: 0.1,
    unit: 'standard-resolution alarm metric-month (one per metric an alarm reads)',
    source: 'Amazon CloudWatch pricing page, alarms (secondary)',
  },
  cloudwatchDashboardMonth: {
    usd: 3,
    unit: 'dashboard-month (beyond the first 3 of an account)',
    source: 'Amazon CloudWatch pricing page, dashboards (secondary)',
  },
  kmsKeyMonth: {
    usd: 1,
    unit: 'customer-managed KMS key-month',
    source: 'AWS KMS pricing page, https://aws.amazon.com/kms/pricing/ (read 2026-11-27)',
  },
  kmsRotationMonth: {
    usd: 1,
    unit: 'rotated backing key-month ($1 each for the first two yearly rotations, then no more: $2 per rotated key at steady state)',
    source:
      'AWS KMS pricing page, https://aws.amazon.com/kms/pricing/ (read 2026-11-27), rotation capped since April 2024',
  },
  kmsRequest: {
    usd: 0.03 / 10_000,
    unit: 'KMS symmetric request (beyond 20,000 free a month)',
    source: 'AWS KMS pricing page, https://aws.amazon.com/kms/pricing/ (read 2026-11-27)',
  },
  xrayTraceRecorded: {
    usd: 5 / 1e6,
    unit: 'X-Ray trace recorded (beyond 100,000 free a month)',
    source: 'AWS X-Ray pricing page (secondary)',
  },
  schedulerInvocation: {
    usd: 1 / 1e6,
    unit: 'EventBridge Scheduler invocation (beyond 14 million free a month)',
    source: 'Amazon EventBridge pricing page, Scheduler (secondary)',
  },
  glueRequest: {
    usd: 1 / 1e6,
    unit: 'Glue Data Catalog request (beyond 1 million free a month; Athena reads the table per query)',
    source: 'AWS Glue pricing page, Data Catalog (secondary)',
  },
} as const satisfies Readonly<Record<string, ServicePrice>>;

/** A meter of {@link SERVICE_PRICES}. */
export type PriceName = keyof typeof SERVICE_PRICES;
