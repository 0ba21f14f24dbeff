import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RULE_CONTEXT,
  FLEET_FIRING_SCOPE,
  fleetFiringRecord,
  fleetResolvedAlert,
  teamWasteRateRule,
  toFleetAlert,
} from '../../../../lambdas/domain';
import { fleet, NOW, running, teamRow } from './fleet-fixtures';

describe('fleet alerts', () => {
  it('describes an instance subject from what EC2 says, with team and job attributes for filter policies', () => {
    // Prepare
    const instance = running('i-0aaa', { asg_name: 'train-p5' });
    // Act
    const alert = toFleetAlert({
      subject: { kind: 'instance', instance },
      finding: {
        rule: 'agent_silent',
        severity: 'warning',
        action: 'notify',
        instance_id: 'i-0aaa',
        instance_type: 'p5.48xlarge',
        at: NOW.toISOString(),
        summary: 'no batch for 12 min: $55.04/h of GPUs unmonitored',
        remedy: 'Check the agent.',
        evidence: { silent_for_s: 720 },
      },
    });
    // Assess
    expect(alert.subject).toBe(
      '[WARNING] agent_silent i-0aaa p5.48xlarge: no batch for 12 min: $55.04/h of GPUs unmonitored',
    );
    expect(alert.body).toContain('  Auto Scaling group: train-p5');
    expect(alert.body).toContain('  owner: team vision, job train-42');
    expect(alert.attributes).toEqual({
      severity: 'warning',
      rule: 'agent_silent',
      instance_type: 'p5.48xlarge',
      status: 'firing',
      team: 'vision',
      job: 'train-42',
    });
  });

  it('resolves a team alert under the same id, with the team attribute read back from the id', () => {
    // Prepare
    const [found] = teamWasteRateRule.evaluate(
      fleet({ teams: [teamRow('vision', 100, 80)] }),
      DEFAULT_RULE_CONTEXT,
      NOW,
    ).findings;
    const firing = toFleetAlert(found as never);
    const record = fleetFiringRecord(firing);
    // Act
    const resolved = fleetResolvedAlert(record, NOW);
    // Assess
    expect(record.instance_id).toBe(FLEET_FIRING_SCOPE);
    expect(resolved.id).toBe(firing.id);
    expect(resolved.subject).toMatch(/^\[RESOLVED\] waste_rate team vision: /);
    expect(resolved.attributes).toMatchObject({ team: 'vision', status: 'resolved', rule: 'waste_rate' });
  });

  it('keeps the job variant of a straggler alert id through the resolve', () => {
    // Prepare
    const record = {
      instance_id: FLEET_FIRING_SCOPE,
      alert_id: 'straggler:i-0n2#job:train-42',
      rule: 'straggler' as const,
      severity: 'warning' as const,
      instance_type: 'p5.48xlarge',
      since: NOW.toISOString(),
      summary: 'slow',
    };
    // Act
    const resolved = fleetResolvedAlert(record, NOW);
    // Assess
    expect(resolved.id).toBe('straggler:i-0n2#job:train-42');
    expect(resolved.finding.instance_id).toBe('i-0n2');
  });
});
