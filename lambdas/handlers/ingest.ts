import { Logger } from '@aws-lambda-powertools/logger';
import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { SNSClient } from '@aws-sdk/client-sns';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { AutoScalingRemediator } from '../adapters/auto-scaling-remediator';
import { DynamoDbStateStore } from '../adapters/dynamodb-state-store';
import { SnsAlertSink } from '../adapters/sns-alert-sink';
import { SnsDecisionSink } from '../adapters/sns-decision-sink';
import { DEFAULT_RULE_CONTEXT, parsePriceOverrides, parsePriceRates, parseRemediationMode } from '../domain';
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
 * {@link storeFromEnvironment}; only the chosen store's SDK is loaded), `TOPIC_CRITICAL_ARN`, `TOPIC_WARNING_ARN`, `TOPIC_INFO_ARN`,
 * `STATE_TABLE`, `REMEDIATION_MODE` (`off|notify|replace`), `PRICE_OVERRIDES` (JSON, optional).
 */

/**
 * Builds the production handler from the environment.
 * @throws {IngestConfigError} naming the missing variable
 * @throws {RemediationModeError} / {PriceOverridesError} for malformed values
 */
export function handlerFromEnvironment(env: NodeJS.ProcessEnv = process.env): IngestHandler {
  const logger = new Logger({ serviceName: env.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-ingest' });
  const topics = {
    critical: required(env, 'TOPIC_CRITICAL_ARN'),
    warning: required(env, 'TOPIC_WARNING_ARN'),
    info: required(env, 'TOPIC_INFO_ARN'),
  };
  const sns = new SNSClient({});
  return createIngestHandler({
    store: storeFromEnvironment(env),
    state: new DynamoDbStateStore({
      client: new DynamoDBClient({}),
      tableName: required(env, 'STATE_TABLE'),
    }),
    alerts: new SnsAlertSink({ client: sns, topics }),
    decisions: new SnsDecisionSink({ client: sns, topics: { critical: topics.critical, info: topics.info } }),
    remediator: new AutoScalingRemediator({ autoScaling: new AutoScalingClient({}), ec2: new EC2Client({}) }),
    log: {
      info: (message, data) => logger.info(message, data ?? {}),
      warn: (message, data) => logger.warn(message, data ?? {}),
      error: (message, data) => logger.error(message, data ?? {}),
    },
    remediationMode: parseRemediationMode(env.REMEDIATION_MODE ?? 'replace'),
    dryRun: false,
    priceOverrides: parsePriceOverrides(env.PRICE_OVERRIDES),
    priceRates: parsePriceRates(env.PRICE_RATES),
    rules: DEFAULT_RULE_CONTEXT,
    callerCheck: 'instance-session',
  });
}

let cached: IngestHandler | undefined;

/** The Lambda entry point (`handler` in the CDK stack). */
export async function handler(event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> {
  cached ??= handlerFromEnvironment();
  return cached(event);
}
