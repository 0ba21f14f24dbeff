import { describe, expect, it } from 'vitest';
import type { Host } from '../../../lambdas/contract';
import {
  DEFAULT_REMEDIATION_LIMITS,
  decideRemediation,
  type Finding,
  groupReplacementLimit,
  type RemediationInput,
  type RemediationRecord,
} from '../../../lambdas/domain';
import { HOST } from './batch-builder';

const NOW = new Date('2026-03-10T12:00:00Z');
const FINDING: Finding = {
  rule: 'ecc_dbe',
  severity: 'critical',
  action: 'replace',
  instance_id: HOST.instance_id,
  instance_type: HOST.instance_type,
  gpu_index: 3,
  at: '2026-03-10T11:59:50Z',
  summary: 'Double-bit ECC errors on GPU 3',
  remedy: 'replace',
  evidence: { ecc_dbe_volatile: 1 },
};

function input(patch: Partial<RemediationInput> = {}): RemediationInput {
  return {
    finding: FINDING,
    alertId: 'ecc_dbe:i-0abc12345def67890:3',
    host: HOST as Host,
    mode: 'replace',
    recentInGroup: [],
    dryRun: false,
    ...patch,
  };
}

const replaced = (
  at: string,
  asg = 'train-p5',
  action: 'replace' | 'quarantine' = 'replace',
): RemediationRecord => ({
  instance_id: 'i-0fff12345def67890',
  asg_name: asg,
  action,
  at,
  rule: 'xid_fatal',
});

describe('decideRemediation', () => {
  it('replaces a broken instance in an Auto Scaling group', () => {
    // Prepare / Act
    const d = decideRemediation(input(), NOW);
    // Assess
    expect(d).toEqual({
      rule: 'ecc_dbe',
      severity: 'critical',
      instance_id: HOST.instance_id,
      gpu_index: 3,
      asg_name: 'train-p5',
      region: HOST.region,
      action: 'replace',
      reason:
        'in Auto Scaling group train-p5; SetInstanceHealth(Unhealthy) so the group replaces it (0 of 2 replacement(s) used in the last 3600 s)',
      at: '2026-03-10T12:00:00.000Z',
      alert_id: 'ecc_dbe:i-0abc12345def67890:3',
      dry_run: false,
    });
  });

  it.each([
    ['mode off', input({ mode: 'off' }), 'skip', /mode is off/],
    ['a finding asking for nothing', input({ finding: { ...FINDING, action: 'none' } }), 'skip', /no action/],
    [
      'a notify finding',
      input({ finding: { ...FINDING, action: 'notify' } }),
      'notify',
      /only for a notification/,
    ],
    [
      'a reset finding',
      input({ finding: { ...FINDING, action: 'reset' } }),
      'reboot',
      /EC2 RebootInstances resets every GPU of the instance; a fault within 3600 s after it escalates to replace/,
    ],
    [
      'a reset finding in mode notify',
      input({ mode: 'notify', finding: { ...FINDING, action: 'reset' } }),
      'notify',
      /replace mode would reboot it \(a reboot resets every GPU\), then replace it in Auto Scaling group train-p5 if the fault came back within 3600 s/,
    ],
    [
      'a reset finding on an opted-out instance',
      input({
        finding: { ...FINDING, action: 'reset' },
        host: { ...HOST, tags: { 'gpu-sentinel:remediation': 'off' } } as Host,
      }),
      'skip',
      /opt-out tag/,
    ],
    [
      'a reset finding on an instance already being replaced',
      input({
        finding: { ...FINDING, action: 'reset' },
        existing: { ...replaced('2026-03-10T11:59:00Z'), instance_id: HOST.instance_id },
      }),
      'skip',
      /already being replaced \(2026-03-10T11:59:00Z, rule xid_fatal\)/,
    ],
    [
      'mode notify',
      input({ mode: 'notify' }),
      'notify',
      /mode is notify: replace mode would replace it in Auto Scaling group train-p5/,
    ],
    [
      'the opt-out tag on the instance',
      input({ host: { ...(HOST as Host), tags: { 'gpu-sentinel:remediation': 'off' } } }),
      'skip',
      /opt-out tag gpu-sentinel:remediation=off on the instance/,
    ],
    [
      'the opt-out tag on the group',
      input({ groupTags: { 'gpu-sentinel:remediation': 'OFF' } }),
      'skip',
      /opt-out tag .* on Auto Scaling group train-p5/,
    ],
    [
      'an earlier replacement',
      input({ existing: { ...replaced('2026-03-01T00:00:00Z'), instance_id: HOST.instance_id } }),
      'skip',
      /already replaced at 2026-03-01T00:00:00Z \(rule xid_fatal\): one replacement per instance, ever/,
    ],
    [
      'an earlier quarantine',
      input({
        existing: { ...replaced('2026-03-01T00:00:00Z', 'g', 'quarantine'), instance_id: HOST.instance_id },
      }),
      'skip',
      /already quarantined at 2026-03-01/,
    ],
    [
      'two replacements in the group within the hour',
      input({ recentInGroup: [replaced('2026-03-10T11:10:00Z'), replaced('2026-03-10T11:50:00Z')] }),
      'escalate',
      /rate limit: 2 replacement\(s\) in Auto Scaling group train-p5 in the last 3600 s, limit 2/,
    ],
    [
      '10 % of a desired capacity of 10 used',
      input({ recentInGroup: [replaced('2026-03-10T11:50:00Z')], groupDesiredCapacity: 10 }),
      'escalate',
      /rate limit: 1 .* limit 1 = min\(2 per 3600 s, max\(1, floor\(10% of desired 10\) = 1\)\)/,
    ],
    [
      'an instance outside any group',
      input({
        host: { instance_id: HOST.instance_id, instance_type: HOST.instance_type, region: 'us-east-1' },
      }),
      'quarantine',
      /not in an Auto Scaling group: tag gpu-sentinel:quarantine=ecc_dbe and page a human; never terminated/,
    ],
  ])('decides on %s', (_n, given, action, reason) => {
    // Prepare / Act
    const d = decideRemediation(given, NOW);
    // Assess
    expect(d.action).toBe(action);
    expect(d.reason).toMatch(reason);
  });

  it.each([
    ['older than an hour', [replaced('2026-03-10T10:59:59Z'), replaced('2026-03-10T10:30:00Z')]],
    [
      'in another group',
      [replaced('2026-03-10T11:50:00Z', 'other'), replaced('2026-03-10T11:55:00Z', 'other')],
    ],
    [
      'quarantines, not replacements',
      [
        replaced('2026-03-10T11:50:00Z', 'train-p5', 'quarantine'),
        replaced('2026-03-10T11:55:00Z', 'train-p5', 'quarantine'),
      ],
    ],
  ])('does not count records %s against the rate limit', (_n, recent) => {
    // Prepare / Act
    const d = decideRemediation(input({ recentInGroup: recent }), NOW);
    // Assess
    expect(d.action).toBe('replace');
  });

  it('still replaces when a group of 4 has used none (the 10 % limit is at least 1)', () => {
    // Prepare / Act / Assess
    expect(decideRemediation(input({ groupDesiredCapacity: 4 }), NOW).action).toBe('replace');
  });

  it('checks mode off before anything else, even for an opted-out, already replaced instance', () => {
    // Prepare
    const given = input({
      mode: 'off',
      host: { ...(HOST as Host), tags: { 'gpu-sentinel:remediation': 'off' } },
      existing: replaced('2026-03-01T00:00:00Z'),
    });
    // Act / Assess
    expect(decideRemediation(given, NOW).reason).toBe('remediation mode is off');
  });

  it('checks the opt-out tag before the earlier replacement', () => {
    // Prepare
    const given = input({
      host: { ...(HOST as Host), tags: { 'gpu-sentinel:remediation': 'off' } },
      existing: replaced('2026-03-01T00:00:00Z'),
    });
    // Act / Assess
    expect(decideRemediation(given, NOW).reason).toMatch(/opt-out/);
  });

  it.each([
    [true, 'replace', true],
    [false, 'notify', true],
    [false, 'replace', false],
  ] as const)('marks dry_run %s in mode %s as %s', (dryRun, mode, expected) => {
    // Prepare / Act / Assess
    expect(decideRemediation(input({ dryRun, mode }), NOW).dry_run).toBe(expected);
  });
});

describe('decideRemediation: the ladder (reboot, then replace)', () => {
  const reset: Finding = { ...FINDING, rule: 'xid_fatal', action: 'reset', at: '2026-03-10T11:59:50Z' };
  const rebootAt = (at: string): RemediationRecord => ({
    instance_id: HOST.instance_id,
    asg_name: 'train-p5',
    action: 'reboot',
    at,
    rule: 'xid_reset',
  });

  it.each([
    ['no reboot before', undefined, 'reboot', /RebootInstances/],
    [
      'a reboot 30 s after the fault (a line of the episode the reboot answers, delivered late)',
      '2026-03-10T12:00:20Z',
      'skip',
      /the reboot at 2026-03-10T12:00:20Z is clearing this fault \(stamped 30 s before it: the episode the reboot answers\)/,
    ],
    [
      'a reboot 100 s before the fault (its lines still in flight)',
      '2026-03-10T11:58:10Z',
      'skip',
      /the reboot at 2026-03-10T11:58:10Z is clearing this fault \(stamped 100 s after it/,
    ],
    [
      'a reboot 121 s before the fault',
      '2026-03-10T11:57:49Z',
      'replace',
      /^the fault came back 121 s after the reboot at 2026-03-10T11:57:49Z \(within 3600 s\): the reset did not clear it; in Auto Scaling group train-p5; SetInstanceHealth/,
    ],
    ['a reboot 3600 s before the fault', '2026-03-10T10:59:50Z', 'replace', /came back 3600 s after/],
    ['a reboot 3601 s before the fault', '2026-03-10T10:59:49Z', 'reboot', /RebootInstances/],
  ])('with %s decides %s', (_case, at, action, reason) => {
    // Prepare / Act
    const d = decideRemediation(
      input({ finding: reset, ...(at === undefined ? {} : { lastReboot: rebootAt(at) }) }),
      NOW,
    );

    // Assess
    expect(d.action).toBe(action);
    expect(d.reason).toMatch(reason);
  });

  it('escalates a fault back after the reboot to quarantine outside a group, and to the rate limit when the group spent it', () => {
    // Prepare
    const lastReboot = rebootAt('2026-03-10T11:40:00Z');
    const outside = { ...HOST, asg_name: undefined } as Host;

    // Act
    const quarantine = decideRemediation(input({ finding: reset, host: outside, lastReboot }), NOW);
    const limited = decideRemediation(
      input({
        finding: reset,
        lastReboot,
        recentInGroup: [replaced('2026-03-10T11:10:00Z'), replaced('2026-03-10T11:20:00Z')],
      }),
      NOW,
    );

    // Assess
    expect(quarantine.action).toBe('quarantine');
    expect(quarantine.reason).toMatch(/^the fault came back 1190 s after the reboot/);
    expect(limited.action).toBe('escalate');
    expect(limited.reason).toMatch(/reset did not clear it; rate limit: 2 replacement\(s\)/);
  });
});

describe('groupReplacementLimit', () => {
  it.each([
    [undefined, 2],
    [4, 1],
    [10, 1],
    [20, 2],
    [100, 2],
  ])('with desired capacity %s allows %i per hour', (desired, limit) => {
    // Prepare / Act / Assess
    expect(groupReplacementLimit(DEFAULT_REMEDIATION_LIMITS, desired).limit).toBe(limit);
  });
});
