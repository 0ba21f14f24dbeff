import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, thermalCriticalRule } from '../../../../lambdas/domain';
import { flushWindow, makeBatch, NOW } from '../batch-builder';

describe('thermal_critical', () => {
  it.each([
    [89.9, 0],
    [90, 1],
    [97, 1],
  ])('at max_gpu_temp_c %d gives %i finding(s)', (temp, n) => {
    // Prepare
    const batch = makeBatch({ windows: [flushWindow(4, { max_gpu_temp_c: temp, gpu_temp_c: 80 })] });
    // Act
    const findings = thermalCriticalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(findings).toHaveLength(n);
    if (n === 1) {
      expect(findings[0]).toMatchObject({
        severity: 'critical',
        action: 'notify',
        gpu_index: 4,
        at: '2026-03-10T10:00:10Z',
        evidence: { max_gpu_temp_c: temp, threshold_c: 90 },
      });
    }
  });

  it('follows an overridden threshold', () => {
    // Prepare
    const ctx = {
      ...DEFAULT_RULE_CONTEXT,
      thresholds: { ...DEFAULT_RULE_CONTEXT.thresholds, thermalCriticalTempC: 85 },
    };
    const batch = makeBatch({ windows: [flushWindow(0, { max_gpu_temp_c: 86 })] });
    // Act / Assess
    expect(thermalCriticalRule.evaluate(batch, ctx, NOW).findings).toHaveLength(1);
  });

  it('ignores horizon windows', () => {
    // Prepare
    const batch = makeBatch({
      windows: [flushWindow(0, { max_gpu_temp_c: 95 }, { kind: 'horizon', start: '2026-03-10T09:45:10Z' })],
    });
    // Act / Assess
    expect(thermalCriticalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings).toEqual([]);
  });
});
