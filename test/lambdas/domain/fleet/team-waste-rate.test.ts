import { describe, expect, it } from 'vitest';
import { alertId, DEFAULT_RULE_CONTEXT, teamWasteRateRule } from '../../../../lambdas/domain';
import { fleet, NOW, teamRow } from './fleet-fixtures';

describe('teamWasteRateRule', () => {
  it.each([
    ['wastes 60 % of $100/h', 100, 60, true],
    ['wastes exactly 50 %', 100, 50, true],
    ['wastes 40 %', 100, 40, false],
    ['wastes 90 % of $6.88/h (one small GPU)', 6.88, 6.2, false],
    ['costs nothing (unpriced)', 0, 0, false],
  ])('judges a team that %s: fires %s', (_label, cost, wasted, fires) => {
    // Prepare
    const input = fleet({ teams: [teamRow('vision', cost, wasted)] });
    // Act
    const { findings } = teamWasteRateRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.length).toBe(fires ? 1 : 0);
  });

  it('names the team in the alert id and the evidence, untagged spend as team untagged', () => {
    // Prepare
    const input = fleet({ teams: [teamRow('vision', 100, 80), teamRow(undefined, 200, 150)] });
    // Act
    const { findings } = teamWasteRateRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.map((f) => alertId(f.finding))).toEqual([
      'waste_rate:team:vision',
      'waste_rate:team:untagged',
    ]);
    expect(findings[0]?.subject).toEqual({ kind: 'team', team: 'vision' });
    expect(findings[0]?.finding.evidence).toMatchObject({
      waste_share: 0.8,
      cost_usd_per_hour: 100,
      top_causes: 'idle $80.00/h',
    });
  });

  it('measures spend per hour of the span, so a longer span needs the same hourly spend', () => {
    // Prepare: $100 over 2 h is $50/h
    const ctx = {
      ...DEFAULT_RULE_CONTEXT,
      thresholds: {
        ...DEFAULT_RULE_CONTEXT.thresholds,
        fleetWasteSpanS: 7200,
        fleetWasteMinCostUsdPerHour: 60,
      },
    };
    const input = fleet({ teams: [teamRow('vision', 100, 90)] });
    // Act
    const { findings } = teamWasteRateRule.evaluate(input, ctx, NOW);
    // Assess
    expect(findings).toEqual([]);
  });
});
