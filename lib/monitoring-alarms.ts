import { Duration } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { METRIC_NAMES, METRICS_NAMESPACE } from '../lambdas/domain/cloudwatch-metrics';
import { THRESHOLD_TABLE } from '../lambdas/domain/rules';
import type { AlertTopics } from './alert-topics';
import {
  DEFAULT_INGEST_5XX_RATE_THRESHOLD,
  MONITORING_PERIOD_S,
  SCHEDULE_MISSED_PERIODS,
  WASTE_RATE_ALARM_PERIODS,
} from './constants';
import { PropsValidationError } from './props-validation-error';
import { validatePattern } from './validate-props';

/** Which SNS topic an alarm goes to: `critical` pages a human, `warning` tells. */
export type AlarmTopic = 'critical' | 'warning';

/** A Lambda function whose errors and throttles are alarmed on. */
export interface MonitoredFunction {
  /** Short name used in the alarms' construct ids and names, `[A-Za-z0-9]{1,32}` (e.g. `Ingest`). */
  readonly name: string;
  /** The function. */
  readonly function: lambda.IFunction;
  /**
   * Where its errors alarm goes: `critical` for the ingest path (a failing ingest loses nothing, the
   * agents spool, but nothing is judged meanwhile), `warning` for scheduled work that can wait.
   * Throttles always go to `warning`.
   */
  readonly errorsTopic: AlarmTopic;
}

/** A Lambda function a schedule invokes every 5 minutes, alarmed on when it stops being invoked. */
export type ScheduledFunction = Pick<MonitoredFunction, 'name' | 'function'>;

/** Props of {@link MonitoringAlarms}. */
export interface MonitoringAlarmsProps {
  /** Where the alarms send their state changes (ALARM and back to OK). */
  readonly topics: AlertTopics;
  /** The ingest REST API (its `5XXError` metric, dimension `ApiName`). */
  readonly api: apigw.RestApi;
  /** Functions whose `Errors` and `Throttles` are alarmed on; more with {@link MonitoringAlarms.addFunction}. */
  readonly functions: readonly MonitoredFunction[];
  /**
   * Functions a schedule runs every 5 minutes (the fleet evaluator): each also gets a
   * `<name>NotRunning` alarm, to `warning`, when it was not invoked for
   * {@link SCHEDULE_MISSED_PERIODS} periods in a row; more with {@link MonitoringAlarms.addNotRunning}.
   * @default - none
   */
  readonly scheduledFunctions?: readonly ScheduledFunction[];
  /**
   * Share of API requests answered 5xx above which `Ingest5xx` fires, fraction in (0, 1].
   * @default 0.05 (5 % of requests, two of three 5-minute periods)
   */
  readonly ingest5xxRateThreshold?: number;
  /**
   * Fleet waste rate (`FleetWasteRate`, wasted / cost, Percent) above which `FleetWasteRate` fires,
   * in (0, 100].
   * @default 50 (the `waste_rate` rule's `wasteRateAtLeast` × 100)
   */
  readonly wasteRatePercentThreshold?: number;
}

/**
 * The stack's CloudWatch alarms (docs/design.md §13), each to an SNS topic of {@link AlertTopics},
 * on ALARM and on OK (so a recovery is told too). Period 5 minutes throughout:
 *
 * | alarm | metric | fires when | missing data | topic |
 * |---|---|---|---|---|
 * | `Ingest5xx` | API Gateway `5XXError` Average (the share of requests) | > 5 % in 2 of 3 periods | not breaching (no requests is no failure; silent agents catch a fleet that stopped sending) | critical |
 * | `<name>Errors` | Lambda `Errors` Sum | ≥ 1 in a period | not breaching (no invocation, no error) | per function |
 * | `<name>Throttles` | Lambda `Throttles` Sum | ≥ 1 in a period | not breaching | warning |
 * | `SilentAgents` | `GpuSentinel` `SilentAgents` Maximum | > 0 in 2 of 3 periods | not breaching: no data is no silent host seen (right after deploy, or a late run); an evaluator that does not run is `FleetEvaluatorNotRunning`'s, one that fails `FleetEvaluatorErrors`' | critical |
 * | `<name>NotRunning` | Lambda `Invocations` Sum | < 1 in 3 of 3 periods (15 min) | **breaching**: a scheduled function that is not invoked publishes nothing (schedule disabled, invoke refused, throttled before start); it may show ALARM for the first minutes after the first deploy, until the first run | warning |
 * | `FleetWasteRate` | `GpuSentinel` `FleetWasteRate` Average | > 50 % in 6 of 6 periods | not breaching (no GPUs running wastes nothing) | warning |
 *
 * The ingest handler answers its own errors with a 5xx rather than a Lambda error, so `Ingest5xx`
 * is the ingest path's main alarm; `IngestErrors` catches crashes, timeouts and bad deployments.
 *
 * @example
 * const alarms = new MonitoringAlarms(this, 'MonitoringAlarms', { topics, api: api.api, functions: [{ name: 'Ingest', function: ingest.function, errorsTopic: 'critical' }] });
 * alarms.addFunction({ name: 'FleetEvaluator', function: evaluator, errorsTopic: 'critical' });
 */
export class MonitoringAlarms extends Construct {
  /** Every alarm, in creation order (the dashboard's alarm status widget lists them). */
  readonly alarms: cloudwatch.Alarm[] = [];
  /** API Gateway 5xx share. */
  readonly ingest5xx: cloudwatch.Alarm;
  /** Silent agents reported by the fleet evaluator. */
  readonly silentAgents: cloudwatch.Alarm;
  /** Fleet waste rate reported by the fleet evaluator. */
  readonly fleetWasteRate: cloudwatch.Alarm;
  readonly #topics: AlertTopics;

  /**
   * @throws {PropsValidationError} when `ingest5xxRateThreshold` is not in (0, 1],
   *   `wasteRatePercentThreshold` not in (0, 100], or a function's `name` is not `[A-Za-z0-9]{1,32}`
   *   or is used twice
   */
  constructor(scope: Construct, id: string, props: MonitoringAlarmsProps) {
    super(scope, id);
    this.#topics = props.topics;
    const rate5xx = validateFraction(
      'ingest5xxRateThreshold',
      props.ingest5xxRateThreshold ?? DEFAULT_INGEST_5XX_RATE_THRESHOLD,
      1,
    );
    const wastePercent = validateFraction(
      'wasteRatePercentThreshold',
      props.wasteRatePercentThreshold ?? THRESHOLD_TABLE.wasteRateAtLeast.value * 100,
      100,
    );
    const period = Duration.seconds(MONITORING_PERIOD_S);

    this.ingest5xx = this.add('Ingest5xx', 'critical', {
      metric: props.api.metricServerError({ statistic: cloudwatch.Stats.AVERAGE, period }),
      threshold: rate5xx,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `More than ${rate5xx * 100} % of agent batches answered 5xx in 2 of 3 periods of 5 min: agents are spooling instead of delivering. See README "Monitoring".`,
    });
    for (const fn of props.functions) this.addFunction(fn);
    for (const fn of props.scheduledFunctions ?? []) this.addNotRunning(fn);
    this.silentAgents = this.add('SilentAgents', 'critical', {
      metric: fleetMetric(METRIC_NAMES.silentAgents, cloudwatch.Stats.MAXIMUM, period),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      // No data is no silent host seen: right after a deploy, before the first evaluation, and
      // when a run is late. An evaluator that fails or does not run has its own alarms.
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription:
        'Running GPU instances sent no batch for 5 min in 2 of 3 periods (dead agent, hung host, or an unwatched fleet). See README "Monitoring".',
    });
    this.fleetWasteRate = this.add('FleetWasteRate', 'warning', {
      metric: fleetMetric(METRIC_NAMES.fleetWasteRate, cloudwatch.Stats.AVERAGE, period),
      threshold: wastePercent,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: WASTE_RATE_ALARM_PERIODS,
      datapointsToAlarm: WASTE_RATE_ALARM_PERIODS,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `The fleet wasted more than ${wastePercent} % of its GPU spend for 30 min. See README "Monitoring".`,
    });
  }

  /**
   * Adds the `<name>Errors` (Sum ≥ 1 per 5 min, to `errorsTopic`) and `<name>Throttles` (Sum ≥ 1,
   * to `warning`) alarms of a function, e.g. the fleet evaluator's.
   *
   * @param fn - the function, its short name and the topic of its errors
   * @returns the two alarms
   * @throws {PropsValidationError} when `name` is not `[A-Za-z0-9]{1,32}` or already used
   */
  addFunction(fn: MonitoredFunction): {
    readonly errors: cloudwatch.Alarm;
    readonly throttles: cloudwatch.Alarm;
  } {
    validatePattern('functions[].name', fn.name, /^[A-Za-z0-9]{1,32}$/, '1–32 letters or digits');
    if (this.node.tryFindChild(`${fn.name}Errors`) !== undefined) {
      throw new PropsValidationError('functions[].name', 'a name used once', fn.name);
    }
    const period = Duration.seconds(MONITORING_PERIOD_S);
    const errors = this.add(`${fn.name}Errors`, fn.errorsTopic, {
      metric: fn.function.metricErrors({ statistic: cloudwatch.Stats.SUM, period }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `The ${fn.name} Lambda failed (crash, timeout or init error) at least once in 5 min. See README "Monitoring".`,
    });
    const throttles = this.add(`${fn.name}Throttles`, 'warning', {
      metric: fn.function.metricThrottles({ statistic: cloudwatch.Stats.SUM, period }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      alarmDescription: `The ${fn.name} Lambda was throttled in the last 5 min (reserved or account concurrency reached). See README "Monitoring".`,
    });
    return { errors, throttles };
  }

  /**
   * Adds the `<name>NotRunning` alarm of a function a schedule invokes every 5 minutes: Lambda
   * `Invocations` Sum < 1 in {@link SCHEDULE_MISSED_PERIODS} periods of 5 min in a row, missing
   * data breaching (a function nobody invokes publishes no datapoint), to `warning`: its failures
   * have the `<name>Errors` alarm; this one tells that it stopped running at all.
   *
   * @param fn - the function and its short name
   * @returns the alarm
   * @throws {PropsValidationError} when `name` is not `[A-Za-z0-9]{1,32}` or already has this alarm
   */
  addNotRunning(fn: ScheduledFunction): cloudwatch.Alarm {
    validatePattern('scheduledFunctions[].name', fn.name, /^[A-Za-z0-9]{1,32}$/, '1–32 letters or digits');
    if (this.node.tryFindChild(`${fn.name}NotRunning`) !== undefined) {
      throw new PropsValidationError('scheduledFunctions[].name', 'a name used once', fn.name);
    }
    return this.add(`${fn.name}NotRunning`, 'warning', {
      metric: fn.function.metricInvocations({
        statistic: cloudwatch.Stats.SUM,
        period: Duration.seconds(MONITORING_PERIOD_S),
      }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: SCHEDULE_MISSED_PERIODS,
      datapointsToAlarm: SCHEDULE_MISSED_PERIODS,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      alarmDescription: `The ${fn.name} Lambda was not invoked for ${(SCHEDULE_MISSED_PERIODS * MONITORING_PERIOD_S) / 60} min: its schedule is disabled or cannot invoke it, so silent agents and fleet rules go unjudged. See README "Monitoring".`,
    });
  }

  private add(id: string, topic: AlarmTopic, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, props);
    const action = new actions.SnsAction(this.topicOf(topic));
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
    this.alarms.push(alarm);
    return alarm;
  }

  private topicOf(topic: AlarmTopic): sns.ITopic {
    return topic === 'critical' ? this.#topics.critical : this.#topics.warning;
  }
}

/** A `GpuSentinel` metric without dimensions (the fleet-wide series). */
export function fleetMetric(name: string, statistic: string, period: Duration): cloudwatch.Metric {
  return new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName: name, statistic, period });
}

function validateFraction(prop: string, value: number, max: number): number {
  if (!Number.isFinite(value) || value <= 0 || value > max) {
    throw new PropsValidationError(prop, `a number in (0, ${max}]`, value);
  }
  return value;
}
