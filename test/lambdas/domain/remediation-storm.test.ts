import { describe, expect, it } from 'vitest';
import type { Host } from '../../../lambdas/contract';
import {
  DEFAULT_STORM_LIMITS,
  type Finding,
  incidentAlert,
  incidentLevel,
  incidentScopes,
  stormPauseReason,
  stormThreshold,
} from '../../../lambdas/domain';
import { HOST } from './batch-builder';

const FAULT: Finding = {
  rule: 'xid_fatal',
  severity: 'critical',
  action: 'replace',
  instance_id: 'i-0a5e0000000000099',
  instance_type: 'p5.48xlarge',
  gpu_index: 0,
  at: '2026-03-10T12:00:00Z',
  summary: 'Xid 79 (GPU fallen off the bus) on GPU 0',
  remedy: 'replace',
  evidence: { xid: 79 },
};

const faults = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    instance_id: `i-0a5e0000000000${String(i).padStart(3, '0')}`,
    at: `2026-03-10T12:00:${String(i % 60).padStart(2, '0')}.000Z`,
  }));

describe('storms', () => {
  it.each([
    ['asg#g', undefined, 3],
    ['asg#g', 4, 2],
    ['asg#g', 10, 2],
    ['asg#g', 12, 3],
    ['asg#g', 1000, 3],
    ['fleet', 1000, 10],
  ])('%s with desired capacity %s is a storm from %i instances', (scope, desired, threshold) => {
    // Prepare / Act / Assess
    expect(stormThreshold(scope, DEFAULT_STORM_LIMITS, desired)).toBe(threshold);
  });

  it('counts a fault in its group and in the fleet, or only in the fleet outside a group', () => {
    // Prepare / Act / Assess
    expect(incidentScopes('train-p5')).toEqual(['asg#train-p5', 'fleet']);
    expect(incidentScopes(undefined)).toEqual(['fleet']);
  });

  it.each([
    [3, 0],
    [5, 0],
    [6, 1],
    [12, 2],
    [100, 5],
  ])('an incident of %i instances (threshold 3) is at update level %i', (count, level) => {
    // Prepare / Act / Assess
    expect(incidentLevel(count, 3)).toBe(level);
  });

  it('opens a critical incident listing the instances, and sends updates as warnings under their own ids', () => {
    // Prepare
    const storm = { scope: 'asg#train-p5', faults: faults(60), threshold: 3 };

    // Act
    const opened = incidentAlert(storm, FAULT, HOST as Host, DEFAULT_STORM_LIMITS, 0);
    const update = incidentAlert(storm, FAULT, HOST as Host, DEFAULT_STORM_LIMITS);

    // Assess
    expect(opened.id).toBe('incident:asg#train-p5');
    expect(opened.finding.severity).toBe('critical');
    expect(opened.subject).toBe(
      '[CRITICAL] incident asg#train-p5: 60 instances faulted in 600 s (xid_fatal); remediation paused',
    );
    expect(opened.attributes).toMatchObject({
      severity: 'critical',
      incident: 'asg#train-p5',
      rule: 'xid_fatal',
    });
    expect(opened.body).toContain('Instances (60):\n  i-0a5e0000000000000 (2026-03-10T12:00:00.000Z)');
    expect(opened.body).toContain('  … and 10 more');
    expect(opened.body).not.toContain('i-0a5e0000000000050');
    expect(update.id).toBe('incident:asg#train-p5#4');
    expect(update.finding.severity).toBe('warning');
    expect(stormPauseReason(storm, 600)).toMatch(
      /^remediation paused: incident asg#train-p5, 60 instances of Auto Scaling group train-p5 faulted within 600 s \(a storm from 3\)/,
    );
  });
});
