import { RESERVED_CONCURRENCY_RULE } from '../lib/constants';
import type { FinanceReportsCur } from '../lib/finance-reports';
import type { GpuSentinelStackProps } from '../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../lib/props-validation-error';

/** Where context values come from: a construct node (`app.node`), or anything with `tryGetContext`. */
export interface ContextSource {
  /** The value of context `key` (`-c key=value`, cdk.json `context`), `undefined` when unset. */
  tryGetContext(key: string): unknown;
}

/**
 * The stack props the CDK app takes from context (`npx cdk synth -c remediationMode=notify`), each
 * context key named as its prop: `store`, `databaseName`, `telemetryRetentionDays`,
 * `firehoseBufferIntervalSeconds`, `memoryRetentionHours`, `magneticRetentionDays`,
 * `remediationMode`, `remediationDelayS`, `organizationId`, `throttlingRateLimit`, `throttlingBurstLimit`, `webAclArn`,
 * `apiGatewayCloudWatchRole`, `requireInstanceCredentials` and `tracing` (`true|false`),
 * `ingestReservedConcurrency` (an integer ≥ 0), `priceOverridesUsdPerHour`, `priceRates` and
 * `alertEmails` (JSON), `agentRoleArns`, `metricsTeams` and `fleetRegions` (comma-separated or a
 * JSON list), `ingest5xxRateThreshold`, `wasteRatePercentThreshold`; `spotPriceHistory` (`true|false`);
 * and the CUR 2.0 export the reports and the fleet evaluator price from, `curDatabase`, `curTable` and `curBucket` (the
 * stack's `cur` prop, see {@link curFromContext}). Values are only converted
 * here (CLI context values arrive as strings); the stack validates them and fails synth with the
 * bad value. The stack is environment-agnostic unless `CDK_DEFAULT_ACCOUNT` and
 * `CDK_DEFAULT_REGION` are both set.
 *
 * @param context - the app's node
 * @param env - the process environment (`CDK_DEFAULT_ACCOUNT`, `CDK_DEFAULT_REGION`)
 * @returns the props; an unset key leaves its prop `undefined` (the stack's default)
 * @throws {PropsValidationError} when a `true|false` key is something else,
 *   `ingestReservedConcurrency` is not an integer ≥ 0 (the message says the account's Lambda
 *   concurrency quota must be ≥ N + 100), a JSON value does not parse, or the CUR keys are
 *   incomplete or not Glue/S3 names, naming the key
 */
export function stackPropsFromContext(context: ContextSource, env: NodeJS.ProcessEnv): GpuSentinelStackProps {
  const read = contextReader(context);
  const account = env.CDK_DEFAULT_ACCOUNT;
  const region = env.CDK_DEFAULT_REGION;
  return {
    env: account !== undefined && region !== undefined ? { account, region } : undefined,
    description: 'gpu-sentinel: GPU fleet telemetry ingest, waste ledger, alerts and remediation',
    store: read.string('store') as GpuSentinelStackProps['store'],
    telemetryRetentionDays: read.number('telemetryRetentionDays'),
    firehoseBufferIntervalSeconds: read.number('firehoseBufferIntervalSeconds'),
    databaseName: read.string('databaseName'),
    memoryRetentionHours: read.number('memoryRetentionHours'),
    magneticRetentionDays: read.number('magneticRetentionDays'),
    remediationMode: read.string('remediationMode') as GpuSentinelStackProps['remediationMode'],
    remediationDelayS: read.number('remediationDelayS'),
    organizationId: read.string('organizationId'),
    requireInstanceCredentials: read.boolean('requireInstanceCredentials'),
    throttlingRateLimit: read.number('throttlingRateLimit'),
    throttlingBurstLimit: read.number('throttlingBurstLimit'),
    webAclArn: read.string('webAclArn'),
    apiGatewayCloudWatchRole: read.boolean('apiGatewayCloudWatchRole'),
    tracing: read.boolean('tracing'),
    ingestReservedConcurrency: read.reservedConcurrency('ingestReservedConcurrency'),
    priceOverridesUsdPerHour: read.json('priceOverridesUsdPerHour'),
    priceRates: read.json('priceRates'),
    alertEmails: read.json('alertEmails'),
    agentRoleArns: read.list('agentRoleArns'),
    metricsTeams: read.list('metricsTeams'),
    ingest5xxRateThreshold: read.number('ingest5xxRateThreshold'),
    wasteRatePercentThreshold: read.number('wasteRatePercentThreshold'),
    fleetRegions: read.list('fleetRegions'),
    spotPriceHistory: read.boolean('spotPriceHistory'),
    cur: curFromContext(read),
  };
}

/** Glue names: lower-case letters, digits and `_`, 1–255 characters (Athena: "Name tables, databases and columns"). */
const GLUE_NAME = /^[a-z0-9_]{1,255}$/;

/** S3 general purpose bucket names: 3–63 lower-case letters, digits, `.` and `-` (Amazon S3 "Bucket naming rules"). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * The CUR 2.0 export (AWS Data Exports) the report Lambda prices instance-hours from, and the fleet
 * evaluator its team waste: context `curDatabase` and `curTable` (the Glue database and table the
 * export's crawler or CloudFormation template creates) and `curBucket` (the S3 bucket the export
 * writes to, which Athena reads with each of the two Lambdas' roles). All three, or none.
 *
 * @param read - the context readers
 * @returns the stack's `cur` prop, `undefined` when none of the keys is set
 * @throws {PropsValidationError} naming the key: one of `curDatabase`/`curTable` without the other,
 *   `curBucket` missing when they are set (or set without them), a database or table that is not a
 *   Glue name (lower-case letters, digits, `_`), a bucket that is not an S3 bucket name
 */
function curFromContext(read: ReturnType<typeof contextReader>): FinanceReportsCur | undefined {
  const database = read.string('curDatabase');
  const table = read.string('curTable');
  const bucketName = read.string('curBucket');
  if (database === undefined && table === undefined && bucketName === undefined) return undefined;
  if (database === undefined)
    throw new PropsValidationError('curDatabase', 'set with `curTable` (both or neither)', database);
  if (table === undefined)
    throw new PropsValidationError('curTable', 'set with `curDatabase` (both or neither)', table);
  if (bucketName === undefined)
    throw new PropsValidationError(
      'curBucket',
      'the S3 bucket the CUR export writes to (Athena reads it with the report role)',
      bucketName,
    );
  for (const [key, value] of [
    ['curDatabase', database],
    ['curTable', table],
  ] as const) {
    if (!GLUE_NAME.test(value))
      throw new PropsValidationError(key, 'a Glue name of lower-case letters, digits and _ (1-255)', value);
  }
  if (!BUCKET_NAME.test(bucketName))
    throw new PropsValidationError('curBucket', 'an S3 bucket name', bucketName);
  return { database, table, bucketName };
}

/**
 * @param context - the app's node
 * @returns the stack name context `stackName` gives, `GpuSentinel` when unset
 */
export function stackNameFromContext(context: ContextSource): string {
  return contextReader(context).string('stackName') ?? 'GpuSentinel';
}

/** Typed readers of one context source; each returns `undefined` for an unset or empty value. */
function contextReader(context: ContextSource) {
  const raw = (key: string): unknown => {
    const value: unknown = context.tryGetContext(key);
    return value === undefined || value === null || value === '' ? undefined : value;
  };
  const string = (key: string): string | undefined => {
    const value = raw(key);
    return value === undefined ? undefined : String(value);
  };
  const json = <T>(key: string): T | undefined => {
    const value = raw(key);
    if (value === undefined || typeof value !== 'string') return value as T | undefined;
    try {
      return JSON.parse(value) as T;
    } catch (error) {
      throw new PropsValidationError(key, 'JSON', value, { cause: error });
    }
  };
  return {
    string,
    json,
    /** A number (CLI values arrive as strings); `NaN` for a non-number, which the stack refuses. */
    number: (key: string): number | undefined => {
      const value = string(key);
      return value === undefined ? undefined : Number(value);
    },
    /**
     * A reserved concurrency: an integer ≥ 0, refused with the rule Lambda applies (the account's
     * quota must be ≥ N + 100) in words.
     */
    reservedConcurrency: (key: string): number | undefined => {
      const value = string(key);
      if (value === undefined) return undefined;
      const n = Number(value);
      if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n))
        throw new PropsValidationError(key, RESERVED_CONCURRENCY_RULE, raw(key));
      return n;
    },
    /** `true` or `false`. */
    boolean: (key: string): boolean | undefined => {
      const value = string(key);
      if (value === undefined) return undefined;
      if (value !== 'true' && value !== 'false')
        throw new PropsValidationError(key, '`true` or `false`', value);
      return value === 'true';
    },
    /** A JSON array (cdk.json, or `-c key='["a","b"]'`), or a comma-separated string. */
    list: (key: string): string[] | undefined => {
      const value = raw(key);
      if (value === undefined) return undefined;
      if (Array.isArray(value)) return value.map(String);
      const text = String(value).trim();
      if (text.startsWith('[')) return json<string[]>(key);
      return text
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
    },
  };
}
