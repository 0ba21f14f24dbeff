import { describe, expect, it } from 'vitest';
import type { Host } from '../../../lambdas/contract';
import {
  DEFAULT_ALERT_BOUNDS,
  type Finding,
  instanceAlertScope,
  summaryAlert,
} from '../../../lambdas/domain';
import { HOST } from './batch-builder';

const finding = (
  xid: number,
  severity: Finding['severity'],
  rule: Finding['rule'] = 'xid_fatal',
): Finding => ({
  rule,
  severity,
  action: 'notify',
  instance_id: HOST.instance_id,
  instance_type: HOST.instance_type,
  gpu_index: xid % 8,
  at: '2026-03-10T12:00:00Z',
  summary: `Xid ${xid}`,
  remedy: 'look',
  evidence: { xid },
  variant: `xid${xid}`,
});

describe('summaryAlert', () => {
  it('counts what it folds by rule and variant, at the most severe severity, under one id per instance', () => {
    // Prepare
    const folded = [
      finding(13, 'warning'),
      finding(13, 'warning'),
      finding(79, 'critical'),
      ...Array.from({ length: 30 }, (_, i) => finding(200 + i, 'info')),
      finding(0, 'info', 'ecc_sbe_rate'),
    ];

    // Act
    const alert = summaryAlert(folded, HOST as Host, DEFAULT_ALERT_BOUNDS);

    // Assess
    expect(alert.id).toBe(`summary:${HOST.instance_id}`);
    expect(alert.finding.severity).toBe('critical');
    expect(alert.finding.evidence).toMatchObject({ folded: 34, per_batch: 10, per_instance: 20 });
    expect(alert.subject).toMatch(
      /^\[CRITICAL\] summary i-\S+ \S+: 34 more findings \(xid_fatal 33, ecc_sbe_rate 1\)$/,
    );
    expect(alert.subject.length).toBeLessThanOrEqual(100);
    expect(alert.body).toContain('Counts (33 kind(s)):\n  xid_fatal#xid13: 2\n');
    expect(alert.body).toContain('  … and 13 more kind(s)');
    expect(alert.attributes).toMatchObject({ severity: 'critical', summary: 'true' });
  });

  it('refuses to summarise nothing', () => {
    // Act / Assess
    expect(() => summaryAlert([], HOST as Host, DEFAULT_ALERT_BOUNDS)).toThrow(RangeError);
  });

  it('keeps an instance’s alert ids under its own scope', () => {
    // Act / Assess
    expect(instanceAlertScope('i-0abc')).toBe('alerts#i-0abc');
  });
});
