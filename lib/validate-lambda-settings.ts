import { INSTANCE_TYPE_RULE } from '../lambdas/contract/field-rules';
import { parseMetricsTeams } from '../lambdas/domain/batch-metrics';
import { MAX_METRIC_TEAMS } from '../lambdas/domain/cloudwatch-metrics';
import { MetricsTeamsError, PriceOverridesError, RuleThresholdsError } from '../lambdas/domain/errors';
import { type PriceRates, parsePriceRates, RATE_TABLES } from '../lambdas/domain/pricing';
import {
  parseRuleThresholds,
  THRESHOLD_NAMES,
  THRESHOLD_TABLE,
  type ThresholdName,
} from '../lambdas/domain/rules';
import { PropsValidationError } from './props-validation-error';
import { validatePattern } from './validate-props';

/**
 * Synth-time checks of the settings a Lambda parses again at cold start (prices, rates, rule
 * thresholds, metric teams): each runs the parser the Lambda runs, so a bad value fails `cdk synth`
 * naming the prop instead of failing every invocation.
 */

/**
 * Checks on-demand price overrides at synth: keys that are EC2 instance types as the wire contract
 * writes them (`INSTANCE_TYPE_RULE`, the pattern the ingest Lambda's `parsePriceOverrides` uses),
 * values finite numbers ≥ 0 (USD per instance-hour).
 *
 * @param overrides - USD per instance-hour by instance type
 * @returns `overrides`
 * @throws {PropsValidationError} when a key is not an instance type or a value not a finite number ≥ 0
 */
export function validatePriceOverrides(
  overrides: Readonly<Record<string, number>>,
): Readonly<Record<string, number>> {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw new PropsValidationError(
      'priceOverridesUsdPerHour',
      'an object of instance type to USD per hour',
      overrides,
    );
  }
  for (const [instanceType, usdPerHour] of Object.entries(overrides)) {
    validatePattern(
      'priceOverridesUsdPerHour',
      instanceType,
      INSTANCE_TYPE_RULE.pattern,
      'keys that are EC2 instance types like `p5.48xlarge`',
    );
    if (typeof usdPerHour !== 'number' || !Number.isFinite(usdPerHour) || usdPerHour < 0) {
      throw new PropsValidationError(
        `priceOverridesUsdPerHour.${instanceType}`,
        'a finite number >= 0 (USD per hour)',
        usdPerHour,
      );
    }
  }
  return overrides;
}

/**
 * Checks the deployment's price rates at synth with the parser the ingest Lambda runs at cold start
 * (`parsePriceRates`), so a bad rate fails `cdk synth` instead of every batch.
 *
 * @param rates - the `priceRates` prop
 * @returns `rates`
 * @throws {PropsValidationError} naming `priceRates.<section>[.<key>]` (or `priceRates`) and what came:
 *   an unknown section, a key that is not `type` or `type@region`, a rate that is not a finite
 *   number ≥ 0, or a `spot_discount` outside 0 ≤ d < 1
 */
export function validatePriceRates(rates: PriceRates): PriceRates {
  if (typeof rates !== 'object' || rates === null || Array.isArray(rates)) {
    throw new PropsValidationError(
      'priceRates',
      `an object with ${RATE_TABLES.join(', ')} and spot_discount`,
      rates,
    );
  }
  try {
    return parsePriceRates(JSON.stringify(rates));
  } catch (error) {
    if (!(error instanceof PriceOverridesError)) throw error;
    const expected =
      error.key === 'spot_discount'
        ? 'a fraction >= 0 and < 1 (0.6 = 60 % off on-demand)'
        : error.key.includes('.')
          ? 'a finite number >= 0 (USD per instance-hour) under a key `type` or `type@region` (`p5.48xlarge@us-east-2`)'
          : `one of ${RATE_TABLES.join(', ')} (objects of USD per instance-hour) or spot_discount`;
    throw new PropsValidationError(`priceRates.${error.key}`, expected, error.value);
  }
}

/**
 * Checks rule-threshold overrides at synth against the thresholds table (the same parser the ingest
 * Lambda runs at cold start): known names, finite numbers within each threshold's range.
 *
 * @param thresholds - threshold name → number
 * @returns `thresholds`
 * @throws {PropsValidationError} naming `ruleThresholds.<name>` (or `ruleThresholds`) and what came
 */
export function validateRuleThresholds(
  thresholds: Readonly<Record<string, number>>,
): Readonly<Record<string, number>> {
  if (typeof thresholds !== 'object' || thresholds === null || Array.isArray(thresholds)) {
    throw new PropsValidationError('ruleThresholds', 'an object of threshold name to number', thresholds);
  }
  try {
    parseRuleThresholds(JSON.stringify(thresholds));
  } catch (error) {
    if (!(error instanceof RuleThresholdsError)) throw error;
    const spec = THRESHOLD_TABLE[error.key as ThresholdName];
    throw new PropsValidationError(
      `ruleThresholds.${error.key}`,
      spec === undefined
        ? `a threshold of the table (${THRESHOLD_NAMES.join(', ')})`
        : `a number ${spec.min}..${spec.max} (${spec.unit})`,
      error.value,
    );
  }
  return thresholds;
}

/**
 * Checks the metric teams at synth with the parser the ingest Lambda runs at cold start.
 *
 * @param teams - team names
 * @returns `teams`
 * @throws {PropsValidationError} naming `metricsTeams` and what came
 */
export function validateMetricsTeams(teams: readonly string[]): readonly string[] {
  if (!Array.isArray(teams) || teams.some((t) => typeof t !== 'string' || t.includes(','))) {
    throw new PropsValidationError('metricsTeams', 'an array of team names without commas', teams);
  }
  try {
    parseMetricsTeams(teams.join(','));
  } catch (error) {
    if (!(error instanceof MetricsTeamsError)) throw error;
    throw new PropsValidationError(
      'metricsTeams',
      `at most ${MAX_METRIC_TEAMS} distinct names of 1–64 [A-Za-z0-9_.-:/@+], not \`other\` or \`untagged\``,
      teams,
    );
  }
  return teams;
}
