import { describe, expect, it } from 'vitest';
import {
  checkRemediationDelayS,
  type Finding,
  judgePending,
  type PendingRemediation,
  parseRemediationDelayS,
} from '../../../lambdas/domain';

const FAULT: Finding = {
  rule: 'xid_fatal',
  severity: 'warning',
  action: 'reset',
  instance_id: 'i-0abc',
  instance_type: 'p5.48xlarge',
  gpu_index: 2,
  at: '2026-03-10T11:59:55.000Z',
  summary: 'Xid 120 on GPU 2',
  remedy: 'reset the GPU',
  evidence: { xid: 120 },
};

const PENDING: PendingRemediation = {
  instance_id: 'i-0abc',
  action: 'reboot',
  finding: FAULT,
  decided_at: '2026-03-10T12:00:00.000Z',
  due_at: '2026-03-10T12:15:00.000Z',
  last_fault_at: '2026-03-10T12:00:00.000Z',
};

const BEFORE_DUE = new Date('2026-03-10T12:14:59.000Z');
const DUE = new Date('2026-03-10T12:15:00.000Z');
const host = { tags: {}, asg_name: 'train-p5' };
const clean = { host, brokenGpus: 0, faultNow: false };

describe('the grace period, pure', () => {
  it.each([
    ['waits before the due time', PENDING, clean, BEFORE_DUE, 'wait'],
    ['cancels at the due time when nothing faulted since the notice', PENDING, clean, DUE, 'cancel'],
    [
      'runs when a fault came after the notice',
      { ...PENDING, last_fault_at: '2026-03-10T12:05:00.000Z' },
      clean,
      DUE,
      'run',
    ],
    ['runs when the batch itself has the fault', PENDING, { ...clean, faultNow: true }, DUE, 'run'],
    ['runs when a GPU of the instance is marked broken', PENDING, { ...clean, brokenGpus: 1 }, DUE, 'run'],
    [
      'cancels before the due time when the group is tagged off',
      PENDING,
      { ...clean, groupTags: { 'gpu-sentinel:remediation': ' OFF ' } },
      BEFORE_DUE,
      'cancel',
    ],
    [
      'cancels when the instance is tagged off, even with a fault',
      PENDING,
      { ...clean, host: { ...host, tags: { 'gpu-sentinel:remediation': 'off' } }, faultNow: true },
      DUE,
      'cancel',
    ],
  ] as const)('%s', (_, pending, context, now, kind) => {
    // Act
    const verdict = judgePending(pending, context, now);

    // Assess
    expect(verdict.kind).toBe(kind);
  });

  it('parses the delay from text, 0 when unset or blank, and names the setting when it is bad', () => {
    // Act
    const parsed = [undefined, '', '0', ' 900 ', '86400'].map((v) =>
      parseRemediationDelayS(v, 'REMEDIATION_DELAY_S'),
    );

    // Assess
    expect(parsed).toEqual([0, 0, 0, 900, 86400]);
    for (const bad of ['15m', '-1', '1.5', '86401']) {
      expect(() => parseRemediationDelayS(bad, 'REMEDIATION_DELAY_S')).toThrow(
        new RegExp(`\`REMEDIATION_DELAY_S\`.*got \`${bad}\``),
      );
    }
    expect(() => checkRemediationDelayS(Number.NaN, 'remediationDelayS')).toThrow(/`remediationDelayS`/);
  });
});
