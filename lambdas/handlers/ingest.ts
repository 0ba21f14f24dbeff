import { Logger } from '@aws-lambda-powertools/logger';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { DynamoDbStateStore } from '../adapters/dynamodb-state-store';
import { EmfMetricsSink } from '../adapters/emf-metrics-sink';
import {
  parseMetricsTeams,
  parsePriceOverrides,
  parsePriceRates,
  parseRemediationDelayS,
  parseRemediationMode,
  parseRuleContext,
} from '../domain';
import { IngestConfigError, readFunctionVariables } from './environment';
import { createIngestHandler, type IngestHandler } from './ingest-handler';
import { lazily } from './lazy';
import { powertoolsLog } from './log';
import { leanClient, type SdkClientConfig } from './sdk-client-config';
import { storeFromEnvironment } from './store-from-environment';

export { IngestConfigError };

/**
 * The ingest Lambda (`POST /v1/batches` behind API Gateway with IAM auth). Reads its settings from
 * the environment the CDK stack sets (lib/ingest-function.ts) once per cold start, builds the real
 * SDK clients and adapters, and delegates to {@link createIngestHandler}.
 *
 * Environment (`LAMBDA_VARIABLES.ingest` in lambdas/domain/lambda-environment.ts): `STORE` (`athena|timestream`) and that store's names (see
 * {@link storeFromEnvironment}; only the chosen store's SDK is loaded), `TOPIC_CRITICAL_ARN`,
 * `TOPIC_WARNING_ARN`, `TOPIC_INFO_ARN`, `STATE_TABLE`, `REMEDIATION_MODE` (`off|notify|replace`),
 * `PRICE_OVERRIDES` (JSON, optional), `RULE_THRESHOLDS` (JSON `{ "<threshold name>": <number>, "xid": { "<code>": { "<field>": value } } }`
 * over the thresholds table, optional), `AGENT_ROLE_NAMES` (comma-separated role names whose
 * instance sessions may send; optional), `POWERTOOLS_METRICS_NAMESPACE` (the CloudWatch namespace
 * of the EMF metrics; default `GpuSentinel`), `METRICS_TEAMS` (comma-separated teams with their own
 * `Team` metric value; optional, see `teamDimensionValue`), `POWERTOOLS_METRICS_DISABLED`.
 *
 * EC2 and Auto Scaling clients are made per region (the sender's `host.region`) for the
 * server-side enrichment and the remediation calls.
 *
 * Cold start: module init loads only what every request needs (contract, domain, the DynamoDB
 * state store, the logger). The store's SDK is loaded on the first write (only the chosen store's); EC2, Auto Scaling and
 * IAM on the first instance lookup; SNS on the first alert or decision (see {@link lazily}).
 */

/**
 * Builds the production handler from the environment.
 * @param env - the environment (the variables above)
 * @param accountId - the Lambda's own account (from its ARN): EC2 is asked only about its callers
 * @param sdk - settings given to every SDK client (a canned `requestHandler` in benchmarks). @default {}
 * @throws {IngestConfigError} naming the missing variable
 * @throws {RemediationModeError} / {PriceOverridesError} / {RuleThresholdsError} / {MetricsTeamsError} for malformed values
 */
export function handlerFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  accountId?: string,
  sdk: SdkClientConfig = {},
): IngestHandler {
  const vars = readFunctionVariables('ingest', env);
  const logger = new Logger({ serviceName: vars.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-ingest' });
  const topics = {
    critical: vars.TOPIC_CRITICAL_ARN,
    warning: vars.TOPIC_WARNING_ARN,
    info: vars.TOPIC_INFO_ARN,
  };
  const log = powertoolsLog(logger);
  // Loaded on first use: SNS on the first alert or decision, EC2/Auto Scaling/IAM on the first lookup.
  const sinks = lazily(async () => (await import('./make-sns-sinks.js')).makeSnsSinks(topics, sdk));
  // The bundle ships these modules (and the stores') as files of their own (INGEST_SPLIT_MODULES in
  // lib/ingest-function.ts), so their SDK clients are not even parsed at cold start: keep the `.js` specifiers.
  const aws = lazily(async () => (await import('./make-instance-apis.js')).makeInstanceApis(sdk));
  return createIngestHandler({
    store: storeFromEnvironment(env, sdk),
    state: new DynamoDbStateStore({
      client: leanClient((config) => new DynamoDBClient(config), sdk),
      tableName: vars.STATE_TABLE,
    }),
    alerts: { publish: async (alert) => (await sinks()).alerts.publish(alert) },
    decisions: { record: async (decision) => (await sinks()).decisions.record(decision) },
    remediator: {
      replace: async (decision) => (await aws()).remediator.replace(decision),
      quarantine: async (decision) => (await aws()).remediator.quarantine(decision),
      reboot: async (decision) => (await aws()).remediator.reboot(decision),
    },
    instances: {
      describe: async (instanceId, region) => (await aws()).instances.describe(instanceId, region),
    },
    agentRoleNames: parseRoleNames(vars.AGENT_ROLE_NAMES),
    accountId,
    log,
    metrics: new EmfMetricsSink({ log, namespace: vars.POWERTOOLS_METRICS_NAMESPACE }),
    metricTeams: parseMetricsTeams(vars.METRICS_TEAMS),
    remediationMode: parseRemediationMode(vars.REMEDIATION_MODE ?? 'replace'),
    remediationDelayS: parseRemediationDelayS(vars.REMEDIATION_DELAY_S, 'REMEDIATION_DELAY_S'),
    dryRun: false,
    priceOverrides: parsePriceOverrides(vars.PRICE_OVERRIDES),
    priceRates: parsePriceRates(vars.PRICE_RATES),
    ...(vars.SPOT_PRICE_HISTORY === 'ec2'
      ? {
          spotPrices: {
            priceAt: async (type: string, region: string, az: string, at: Date) =>
              (await aws()).spotPrices.priceAt(type, region, az, at),
          },
        }
      : {}),
    rules: parseRuleContext(vars.RULE_THRESHOLDS),
    callerCheck: 'instance-session',
  });
}

/** `AGENT_ROLE_NAMES` → role names; undefined when unset or empty (no role restriction in the handler). */
function parseRoleNames(value: string | undefined): readonly string[] | undefined {
  const names = (value ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.length === 0 ? undefined : names;
}

let cached: IngestHandler | undefined;

/**
 * The Lambda entry point (`handler` in the CDK stack).
 * @param event - the API Gateway REST proxy event
 * @param context - the invocation context; its function ARN names the Lambda's account
 */
export async function handler(
  event: APIGatewayProxyEvent,
  context?: Pick<Context, 'invokedFunctionArn'>,
): Promise<APIGatewayProxyResult> {
  cached ??= handlerFromEnvironment(process.env, context?.invokedFunctionArn?.split(':')[4]);
  return cached(event);
}
