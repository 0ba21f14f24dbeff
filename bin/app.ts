/**
 * The gpu-sentinel CDK app (`cdk.json`: `npx tsx bin/app.ts`). Synthesizes without AWS
 * credentials: the stack is environment-agnostic unless `CDK_DEFAULT_ACCOUNT` and
 * `CDK_DEFAULT_REGION` are both set.
 *
 * Optional context (`npx cdk synth -c remediationMode=notify -c organizationId=o-a1b2c3d4e5`):
 * `store` (`athena` (default) | `timestream`), `telemetryRetentionDays`,
 * `firehoseBufferIntervalSeconds`, `stackName`, `databaseName`, `memoryRetentionHours`, `magneticRetentionDays`, `remediationMode`,
 * `organizationId`, `throttlingRateLimit`, `throttlingBurstLimit`, `webAclArn`,
 * `apiGatewayCloudWatchRole` (`true|false`), `priceOverridesUsdPerHour`, `priceRates` and `alertEmails` (JSON),
 * `agentRoleArns` (comma-separated role ARNs, or a JSON list, of existing agent roles), `fleetRegions`
 * (comma-separated regions, or a JSON list, whose running GPU instances the fleet evaluator watches),
 * `metricsTeams` (comma-separated or a JSON list: teams with their own CloudWatch `Team` series),
 * `ingest5xxRateThreshold`, `wasteRatePercentThreshold` (alarm thresholds).
 * Every value is validated by the stack, which fails synth with the bad value.
 *
 * cdk-nag 3 runs as a CDK policy-validation plugin (`Validations.of(app).addPlugins`), not as an
 * Aspect: a finding that is not acknowledged in `lib/` fails the synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { GpuSentinelStack, type GpuSentinelStackProps } from '../lib/gpu-sentinel-stack';

const app = new App();

/** A context value as a string, `undefined` when absent or empty. */
function contextString(key: string): string | undefined {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined || value === null || value === '') return undefined;
  return String(value);
}

/** A context value as a number (CLI context values arrive as strings), `undefined` when absent. */
function contextNumber(key: string): number | undefined {
  const value = contextString(key);
  return value === undefined ? undefined : Number(value);
}

/** A context value as a boolean (`true`/`false`), `undefined` when absent. */
function contextBoolean(key: string): boolean | undefined {
  const value = contextString(key);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') {
    throw new Error(`Expected context \`${key}\` to be \`true\` or \`false\`, got \`${value}\``);
  }
  return value === 'true';
}

/** A context value holding JSON (an object given in cdk.json, or a JSON string from `-c`). */
function contextJson<T>(key: string): T | undefined {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string') return value as T;
  try {
    return JSON.parse(value) as T;
  } catch (error) {
    throw new Error(`Expected context \`${key}\` to be JSON, got \`${value}\``, { cause: error });
  }
}

/** A context value holding a list: a JSON array, or a comma-separated string from `-c`. */
function contextList(key: string): string[] | undefined {
  const value: unknown = app.node.tryGetContext(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (Array.isArray(value)) return value.map(String);
  const text = String(value).trim();
  if (text.startsWith('[')) return contextJson<string[]>(key);
  return text
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
}

const account = process.env.CDK_DEFAULT_ACCOUNT;
const region = process.env.CDK_DEFAULT_REGION;

const props: GpuSentinelStackProps = {
  env: account !== undefined && region !== undefined ? { account, region } : undefined,
  description: 'gpu-sentinel: GPU fleet telemetry ingest, waste ledger, alerts and remediation',
  store: contextString('store') as GpuSentinelStackProps['store'],
  telemetryRetentionDays: contextNumber('telemetryRetentionDays'),
  firehoseBufferIntervalSeconds: contextNumber('firehoseBufferIntervalSeconds'),
  databaseName: contextString('databaseName'),
  memoryRetentionHours: contextNumber('memoryRetentionHours'),
  magneticRetentionDays: contextNumber('magneticRetentionDays'),
  remediationMode: contextString('remediationMode') as GpuSentinelStackProps['remediationMode'],
  organizationId: contextString('organizationId'),
  throttlingRateLimit: contextNumber('throttlingRateLimit'),
  throttlingBurstLimit: contextNumber('throttlingBurstLimit'),
  webAclArn: contextString('webAclArn'),
  apiGatewayCloudWatchRole: contextBoolean('apiGatewayCloudWatchRole'),
  priceOverridesUsdPerHour: contextJson('priceOverridesUsdPerHour'),
  priceRates: contextJson('priceRates'),
  alertEmails: contextJson('alertEmails'),
  agentRoleArns: contextList('agentRoleArns'),
  metricsTeams: contextList('metricsTeams'),
  ingest5xxRateThreshold: contextNumber('ingest5xxRateThreshold'),
  wasteRatePercentThreshold: contextNumber('wasteRatePercentThreshold'),
  fleetRegions: contextList('fleetRegions'),
};

new GpuSentinelStack(app, contextString('stackName') ?? 'GpuSentinel', props);

Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));

app.synth();
