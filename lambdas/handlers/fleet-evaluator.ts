import { Logger } from '@aws-lambda-powertools/logger';
import { CloudWatchClient } from '@aws-sdk/client-cloudwatch';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EC2Client } from '@aws-sdk/client-ec2';
import { SNSClient } from '@aws-sdk/client-sns';
import { systemClock } from '../adapters/clock';
import { CloudWatchFleetMetrics } from '../adapters/cloudwatch-fleet-metrics';
import { DynamoDbStateStore } from '../adapters/dynamodb-state-store';
import { Ec2RunningInstances } from '../adapters/ec2-running-instances';
import { RegionalClients } from '../adapters/regional-clients';
import { SnsAlertSink } from '../adapters/sns-alert-sink';
import { evaluateFleet, type FleetEvaluation } from '../app/evaluate-fleet';
import { DEFAULT_RULE_CONTEXT, parseMetricsTeams, parseRuleThresholds } from '../domain';
import { curReadsFromEnvironment } from './cur-from-environment';
import { readFunctionVariables, requiredEnv as required } from './environment';
import { powertoolsLog } from './log';
import { storeFromEnvironment } from './store-from-environment';

/**
 * The fleet evaluator Lambda (EventBridge Scheduler, every 5 minutes; docs/design.md §6). Reads its
 * settings from the environment the CDK stack sets (lib/fleet-evaluator.ts) once per cold start and
 * runs {@link evaluateFleet} with the real SDK clients.
 *
 * Environment (`LAMBDA_VARIABLES.fleetEvaluator` in lambdas/domain/lambda-environment.ts): the store's (`STORE` and its settings, see `storeFromEnvironment`), `STATE_TABLE`,
 * `TOPIC_CRITICAL_ARN`, `TOPIC_WARNING_ARN`, `TOPIC_INFO_ARN`, `FLEET_REGIONS` (comma-separated
 * regions whose running GPU instances are listed; default the Lambda's `AWS_REGION`),
 * `RULE_THRESHOLDS` (JSON over the thresholds table, optional), `CUR_DATABASE` and `CUR_TABLE`
 * (optional, Athena store only: the Glue table of a Cost and Usage Report 2.0 export the team waste
 * is priced from, each instance at its newest billed hour's effective rate).
 */

/**
 * Builds the production evaluator from the environment.
 * @param env - the environment (the variables above)
 * @returns a function of the clock's `now` that runs one evaluation
 * @throws {IngestConfigError} naming the missing variable
 * @throws {RuleThresholdsError} when `RULE_THRESHOLDS` is malformed
 * @throws {IngestConfigError} when only one of `CUR_DATABASE`/`CUR_TABLE` is set, or they are set without the Athena store
 * @throws {StoreQueryError} when `CUR_DATABASE` or `CUR_TABLE` is not a Glue name
 */
export function fleetEvaluatorFromEnvironment(
  env: NodeJS.ProcessEnv = process.env,
): (now: Date) => Promise<FleetEvaluation> {
  const vars = readFunctionVariables('fleetEvaluator', env);
  const logger = new Logger({ serviceName: vars.POWERTOOLS_SERVICE_NAME ?? 'gpu-sentinel-fleet' });
  const regions = (vars.FLEET_REGIONS ?? required(env, 'AWS_REGION'))
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r !== '');
  const cur = curReadsFromEnvironment(vars, env);
  const deps = {
    store: storeFromEnvironment(env),
    ...(cur !== undefined ? { cur } : {}),
    state: new DynamoDbStateStore({
      client: new DynamoDBClient({}),
      tableName: vars.STATE_TABLE,
    }),
    alerts: new SnsAlertSink({
      client: new SNSClient({}),
      topics: {
        critical: vars.TOPIC_CRITICAL_ARN,
        warning: vars.TOPIC_WARNING_ARN,
        info: vars.TOPIC_INFO_ARN,
      },
    }),
    instances: new Ec2RunningInstances({
      ec2: new RegionalClients((region) => new EC2Client({ region })),
      regions,
    }),
    metrics: new CloudWatchFleetMetrics(new CloudWatchClient({})),
    metricTeams: parseMetricsTeams(vars.METRICS_TEAMS),
    log: powertoolsLog(logger),
    rules: { ...DEFAULT_RULE_CONTEXT, thresholds: parseRuleThresholds(vars.RULE_THRESHOLDS) },
  };
  return (now) => evaluateFleet(deps, now);
}

let cached: ((now: Date) => Promise<FleetEvaluation>) | undefined;

/** The Lambda entry point (`handler` in the CDK stack); the scheduled event carries nothing it needs. */
export async function handler(): Promise<{ readonly sent: number; readonly findings: number }> {
  cached ??= fleetEvaluatorFromEnvironment();
  const result = await cached(systemClock());
  return { sent: result.sent.length, findings: result.findings.length };
}
