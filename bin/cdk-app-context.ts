import { RESERVED_CONCURRENCY_RULE } from '../lib/constants';
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
 * JSON list), `ingest5xxRateThreshold`, `wasteRatePercentThreshold`. Values are only converted
 * here (CLI context values arrive as strings); the stack validates them and fails synth with the
 * bad value. The stack is environment-agnostic unless `CDK_DEFAULT_ACCOUNT` and
 * `CDK_DEFAULT_REGION` are both set.
 *
 * @param context - the app's node
 * @param env - the process environment (`CDK_DEFAULT_ACCOUNT`, `CDK_DEFAULT_REGION`)
 * @returns the props; an unset key leaves its prop `undefined` (the stack's default)
 * @throws {PropsValidationError} when a `true|false` key is something else,
 *   `ingestReservedConcurrency` is not an integer ≥ 0 (the message says the account's Lambda
 *   concurrency quota must be ≥ N + 100) or a JSON value does not parse, naming the key
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
  };
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
