import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, spotInterruptionRule } from '../../../../lambdas/domain';
import { makeBatch, NOW } from '../batch-builder';

describe('spot_interruption', () => {
  it('fires one info notify for the instance telling the owner to checkpoint', () => {
    // Prepare
    const batch = makeBatch({
      events: [
        {
          at: '2026-03-10T10:00:05Z',
          kind: 'spot_interruption',
          source: 'imds',
          detail: 'terminate at 2026-03-10T10:02:05Z',
        },
        { at: '2026-03-10T10:00:07Z', kind: 'spot_interruption', source: 'imds' },
      ],
    });
    // Act
    const findings = spotInterruptionRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      rule: 'spot_interruption',
      severity: 'info',
      action: 'notify',
      at: '2026-03-10T10:00:05Z',
      evidence: { count: 2, detail: 'terminate at 2026-03-10T10:02:05Z' },
    });
    expect(findings[0]?.gpu_index).toBeUndefined();
    expect(findings[0]?.remedy).toMatch(/checkpoint now/i);
  });

  it('gives nothing without a notice', () => {
    // Prepare / Act / Assess
    expect(spotInterruptionRule.evaluate(makeBatch({}), DEFAULT_RULE_CONTEXT, NOW).findings).toEqual([]);
  });
});
