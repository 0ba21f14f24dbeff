import { describe, expect, it } from 'vitest';
import { agentSilentRule, alertId, DEFAULT_RULE_CONTEXT } from '../../../../lambdas/domain';
import { ago, fleet, NOW, running } from './fleet-fixtures';

describe('agentSilentRule', () => {
  it.each([
    ['sent 60 s ago', ago(60), ago(7200), false],
    ['sent 299 s ago', ago(299), ago(7200), false],
    ['sent 300 s ago', ago(300), ago(7200), true],
    ['sent 40 min ago', ago(2400), ago(7200), true],
    ['never sent, launched 2 h ago', undefined, ago(7200), true],
    ['never sent, launched 2 min ago (agent still starting)', undefined, ago(120), false],
  ])('judges an instance that %s: fires %s', (_label, lastSeen, launch, fires) => {
    // Prepare
    const input = fleet({
      instances: [running('i-0aaa', { launch_time: launch })],
      lastSeen: new Map(lastSeen === undefined ? [] : [['i-0aaa', lastSeen]]),
    });
    // Act
    const verdict = agentSilentRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(verdict.judged).toBe(true);
    expect(verdict.findings.length).toBe(fires ? 1 : 0);
  });

  it('reports the instance on-demand price as unmonitored spend, with one alert per instance', () => {
    // Prepare
    const input = fleet({ instances: [running('i-0aaa'), running('i-0bbb')], lastSeen: new Map() });
    // Act
    const { findings } = agentSilentRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.map((f) => alertId(f.finding))).toEqual(['agent_silent:i-0aaa', 'agent_silent:i-0bbb']);
    expect(findings[0]?.finding.evidence.unmonitored_usd_per_hour).toBeCloseTo(55.04, 2);
    expect(findings[0]?.finding.summary).toContain('$55.04/h of GPUs unmonitored');
    expect(findings[0]?.finding.severity).toBe('warning');
  });

  it('says unpriced for a type without a built-in price, never a guessed number', () => {
    // Prepare
    const input = fleet({ instances: [running('i-0ccc', { instance_type: 'p5e.48xlarge' })] });
    // Act
    const { findings } = agentSilentRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings[0]?.finding.evidence.unmonitored_usd_per_hour).toBe('unpriced');
  });

  it('follows an overridden silence threshold', () => {
    // Prepare
    const ctx = {
      ...DEFAULT_RULE_CONTEXT,
      thresholds: { ...DEFAULT_RULE_CONTEXT.thresholds, agentSilentAfterS: 60 },
    };
    const input = fleet({ instances: [running('i-0aaa')], lastSeen: new Map([['i-0aaa', ago(90)]]) });
    // Act
    const { findings } = agentSilentRule.evaluate(input, ctx, NOW);
    // Assess
    expect(findings).toHaveLength(1);
  });
});
