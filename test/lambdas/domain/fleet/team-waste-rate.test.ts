import { describe, expect, it } from 'vitest';
import {
  alertId,
  DEFAULT_RULE_CONTEXT,
  type TeamPricing,
  teamWasteRateRule,
} from '../../../../lambdas/domain';
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

  it.each<[string, TeamPricing | undefined, Record<string, unknown>, RegExp]>([
    ['no CUR: the stored prices', undefined, { price_source: 'ingest' }, /min$/],
    [
      'a CUR that priced every GPU-hour at one billed hour',
      {
        cur_gpu_hours: 100 / 6.88,
        cur_usage_hour_from: '2026-03-10T21:00:00.000Z',
        cur_usage_hour_to: '2026-03-10T21:00:00.000Z',
      },
      { price_source: 'cur', cur_gpu_hours_share: 1, cur_usage_hour: '2026-03-10T21:00:00.000Z' },
      /at the CUR's effective rates \(billed hour 2026-03-10T21:00:00.000Z\)$/,
    ],
    [
      'a CUR that priced half, the rest at list price',
      {
        cur_gpu_hours: 50 / 6.88,
        cur_usage_hour_from: '2026-03-10T19:00:00.000Z',
        cur_usage_hour_to: '2026-03-10T21:00:00.000Z',
        stored_price_source: 'builtin:aws-2025-06',
      },
      {
        price_source: 'cur+builtin:aws-2025-06',
        cur_gpu_hours_share: 0.5,
        cur_usage_hours: '2026-03-10T19:00:00.000Z/2026-03-10T21:00:00.000Z',
      },
      /50 % of GPU-hours at the CUR's effective rates .* the rest at builtin:aws-2025-06 prices$/,
    ],
    [
      'a CUR with no recent hour of these instances: the spot rate stored at ingest',
      { cur_gpu_hours: 0, stored_price_source: 'spot' },
      { price_source: 'spot', cur_gpu_hours_share: 0 },
      /at spot prices \(the CUR has no recent hour of these instances\)$/,
    ],
  ])('says where its dollars were priced: %s', (_label, pricing, evidence, summary) => {
    // Prepare
    const row = { ...teamRow('vision', 100, 80), ...(pricing === undefined ? {} : { pricing }) };
    // Act
    const { findings } = teamWasteRateRule.evaluate(fleet({ teams: [row] }), DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings[0]?.finding.evidence).toMatchObject(evidence);
    expect(findings[0]?.finding.summary).toMatch(summary);
    if (pricing === undefined || pricing.cur_usage_hour_from === undefined) {
      expect(findings[0]?.finding.evidence).not.toHaveProperty('cur_usage_hour');
    }
  });
});
