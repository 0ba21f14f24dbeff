import { RuleThresholdsError } from '../errors';
import { readOverrideDocument } from '../override-document';
import {
  DEFAULT_THRESHOLDS,
  THRESHOLD_NAMES,
  THRESHOLD_TABLE,
  type ThresholdName,
  type Thresholds,
} from './thresholds';

/**
 * Parses a deployment's rule-threshold overrides (the ingest Lambda's `RULE_THRESHOLDS`, local mode's
 * `--rules FILE`) and merges them over {@link DEFAULT_THRESHOLDS}. Only the names of `THRESHOLD_TABLE`
 * are accepted, each a finite number within its table range, so a typo is refused instead of ignored.
 *
 * @param json - `{ "<threshold name>": <number> }`; `undefined` or blank means the defaults
 * @returns the full thresholds, frozen
 * @throws {RuleThresholdsError} when the text is not JSON, not an object, a key is not a threshold
 *   name, or a value is not a finite number in the threshold's range; the error names the key and value
 * @example
 * parseRuleThresholds('{"fakeLoadGpuUtilAtLeast": 0.8, "minHorizonSpanS": 600}').fakeLoadGpuUtilAtLeast; // 0.8
 */
export function parseRuleThresholds(json: string | undefined): Thresholds {
  const entries = readOverrideDocument(
    json,
    'rule thresholds',
    '{"fakeLoadGpuUtilAtLeast": 0.8}',
    RuleThresholdsError,
  );
  if (entries === undefined) return DEFAULT_THRESHOLDS;
  const out: Record<ThresholdName, number> = { ...DEFAULT_THRESHOLDS };
  for (const [key, given] of entries) {
    if (!(THRESHOLD_NAMES as readonly string[]).includes(key)) {
      throw new RuleThresholdsError(
        key,
        given,
        `Expected rule threshold names from the thresholds table (${THRESHOLD_NAMES.join(', ')}), got \`${key}\`.`,
      );
    }
    const spec = THRESHOLD_TABLE[key as ThresholdName];
    if (typeof given !== 'number' || !Number.isFinite(given) || given < spec.min || given > spec.max) {
      throw new RuleThresholdsError(
        key,
        given,
        `Expected \`${key}\` to be a number ${spec.min}..${spec.max} (${spec.unit}), got \`${JSON.stringify(given)}\` (${typeof given}).`,
      );
    }
    out[key as ThresholdName] = given;
  }
  return Object.freeze(out);
}
