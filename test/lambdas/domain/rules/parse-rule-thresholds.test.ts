import { describe, expect, it } from 'vitest';
import {
  DEFAULT_THRESHOLDS,
  parseRuleThresholds,
  RuleThresholdsError,
  THRESHOLD_NAMES,
  THRESHOLD_TABLE,
} from '../../../../lambdas/domain';

describe('parseRuleThresholds', () => {
  it.each([undefined, '', '  '])('gives the defaults for %j', (json) => {
    // Act / Assess
    expect(parseRuleThresholds(json)).toEqual(DEFAULT_THRESHOLDS);
  });

  it('merges overrides over the defaults', () => {
    // Act
    const t = parseRuleThresholds('{"fakeLoadGpuUtilAtLeast": 0.8, "minHorizonSpanS": 600}');

    // Assess
    expect(t).toEqual({ ...DEFAULT_THRESHOLDS, fakeLoadGpuUtilAtLeast: 0.8, minHorizonSpanS: 600 });
    expect(Object.isFrozen(t)).toBe(true);
  });

  it.each([
    ['{not json', '(root)', /not JSON/],
    ['[1]', '(root)', /an array/],
    ['null', '(root)', /JSON object/],
    ['{"fakeLoadGpuUtil": 0.8}', 'fakeLoadGpuUtil', /thresholds table/],
    ['{"fakeLoadGpuUtilAtLeast": 1.5}', 'fakeLoadGpuUtilAtLeast', /0\.\.1 \(fraction 0\.\.1\), got `1.5`/],
    ['{"minHorizonSpanS": "300"}', 'minHorizonSpanS', /got `"300"` \(string\)/],
    ['{"stragglerMinGpus": 2}', 'stragglerMinGpus', /3\.\.64/],
  ])('refuses %s naming %s', (json, key, message) => {
    // Act
    let error: unknown;
    try {
      parseRuleThresholds(json);
    } catch (e) {
      error = e;
    }

    // Assess
    expect(error).toBeInstanceOf(RuleThresholdsError);
    expect((error as RuleThresholdsError).key).toBe(key);
    expect((error as RuleThresholdsError).message).toMatch(message);
  });

  it('documents every threshold with a unit and a source, defaults within their range', () => {
    // Act / Assess
    for (const name of THRESHOLD_NAMES) {
      const spec = THRESHOLD_TABLE[name];
      expect(spec.unit.length, name).toBeGreaterThan(0);
      expect(spec.source.length, name).toBeGreaterThan(10);
      expect(spec.value, name).toBeGreaterThanOrEqual(spec.min);
      expect(spec.value, name).toBeLessThanOrEqual(spec.max);
    }
  });
});
