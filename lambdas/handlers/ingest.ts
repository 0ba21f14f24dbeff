import { Logger } from '@aws-lambda-powertools/logger';
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { IAMClient } from '@aws-sdk/client-iam';
import { SNSClient } from '@aws-sdk/client-sns';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { AutoScalingRemediator } from '../adapters/auto-scaling-remediator';
import { DynamoDbStateStore } from '../adapters/dynamodb-state-store';
import { Ec2InstanceDirectory } from '../adapters/ec2-instance-directory';
import { EmfMetricsSink } from '../adapters/emf-metrics-sink';
import { RegionalClients } from '../adapters/regional-clients';
import { SnsAlertSink } from '../adapters/sns-alert-sink';
import { SnsDecisionSink } from '../adapters/sns-decision-sink';
import {
  DEFAULT_RULE_CONTEXT,
  parseMetricsTeams,
  parsePriceOverrides,
  parsePriceRates,
  parseRemediationMode,
  parseRuleThresholds,
} from '../domain';
import { IngestConfigError, requiredEnv as required } from './environment';
import { createIngestHandler, type IngestHandler } from './ingest-handler';
import { storeFromEnvironment } from './store-from-environment';

export { IngestConfigError };

/**
 * The ingest Lambda (`POST /v1/batches` behind API Gateway with IAM auth). Reads its settings from
 * the environment the CDK stack sets (lib/ingest-function.ts) once per cold start, builds the real
 * SDK clients and adapters, and delegates to {@link createIngestHandler}.
 *
 * Environment: `STORE` (`athena|timestream`) and that store's names (see
 * {@link storeFromEnvironment}; only the chosen store's SDK is loaded), `TOPIC_CRITICAL_ARN`,
 * `TOPIC_WARNING_ARN`, `TOPIC_INFO_ARN`, `STATE_TABLE`, `REMEDIATION_MODE` (`off|notify|replace`),
 * `PRICE_OVERRIDES` (JSON, optional), `RULE_THRESHOLDS` (JSON `{ "<threshold name>": <number> }`
 * over the thresholds table, optional), `AGENT_ROLE_NAMES` (comma-separated role names whose
 * instance sessions may send; optional), `POWERTOOLS_METRICS_NAMESPACE` (the CloudWatch namespace
 * of the EMF metrics; default `GpuSentinel`), `METRICS_TEAMS` (comma-separated teams with their own
 * `Team` metric value; optional, see `teamDimensionValue`), `POWERTOOLS_METRICS_DISABLED`.
 *
 * EC2 and Auto Scaling clients are made per region (the sender's `host.region`) for the
 * server-side enrichment and the remediation calls.
 */

/**
 * Builds the production handler from the environment.
 * @param env - the environment (the variables above)
 * @param accountId - the Lambda's own account (from its ARN): EC2 is asked only about its callers
 * @throws {IngestConfigError} naming the missing variable
 * @throws {RemediationModeError} / {PriceOverridesError} / {RuleThresholdsError} / {MetricsTeamsError} for malformed values
 */
export function handlerFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  accountId?: string,
): IngestHandler {
  const logger = new Logger({ serviceName: env.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-ingest' });
  const topics = {
    critical: required(env, 'TOPIC_CRITICAL_ARN'),
    warning: required(env, 'TOPIC_WARNING_ARN'),
    info: required(env, 'TOPIC_INFO_ARN'),
  };
  const log = {
    info: (message: string, data?: Record<string, unknown>) => logger.info(message, data ?? {}),
    warn: (message: string, data?: Record<string, unknown>) => logger.warn(message, data ?? {}),
    error: (message: string, data?: Record<string, unknown>) => logger.error(message, data ?? {}),
  };
  const sns = new SNSClient({});
  const ec2 = new RegionalClients((region) => new EC2Client({ region }));
  const autoScaling = new RegionalClients((region) => new AutoScalingClient({ region }));
  return createIngestHandler({
    store: storeFromEnvironment(env),
    state: new DynamoDbStateStore({
      client: new DynamoDBClient({}),
      tableName: required(env, 'STATE_TABLE'),
    }),
    alerts: new SnsAlertSink({ client: sns, topics }),
    decisions: new SnsDecisionSink({ client: sns, topics: { critical: topics.critical, info: topics.info } }),
    remediator: new AutoScalingRemediator({ autoScaling, ec2 }),
    instances: new Ec2InstanceDirectory({ ec2, autoScaling, iam: new IAMClient({}) }),
    agentRoleNames: parseRoleNames(env.AGENT_ROLE_NAMES),
    accountId,
    log,
    metrics: new EmfMetricsSink({ log, namespace: env.POWERTOOLS_METRICS_NAMESPACE }),
    metricTeams: parseMetricsTeams(env.METRICS_TEAMS),
    remediationMode: parseRemediationMode(env.REMEDIATION_MODE ?? 'replace'),
    dryRun: false,
    priceOverrides: parsePriceOverrides(env.PRICE_OVERRIDES),
    priceRates: parsePriceRates(env.PRICE_RATES),
    rules: { ...DEFAULT_RULE_CONTEXT, thresholds: parseRuleThresholds(env.RULE_THRESHOLDS) },
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
