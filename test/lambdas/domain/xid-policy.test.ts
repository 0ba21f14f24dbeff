import { describe, expect, it } from 'vitest';
import { DEFAULT_XID_POLICY, withXidOverrides, XidPolicyError, xidPolicyFor } from '../../../lambdas/domain';

describe('DEFAULT_XID_POLICY', () => {
  it.each([
    ...[13, 31, 32, 68, 69, 8, 39, 40, 41, 70, 71, 72, 75, 76, 77].map((x) => [x, 'notify', 'info'] as const),
    ...[43, 45].map((x) => [x, 'ignore', 'info'] as const),
    ...[48, 64, 74, 79, 95, 119, 120, 136, 140, 143].map((x) => [x, 'replace', 'critical'] as const),
    [94, 'reset', 'warning'] as const,
    ...[46, 62, 109, 110].map((x) => [x, 'reset', 'warning'] as const),
    [63, 'notify', 'info'] as const,
    [92, 'notify', 'warning'] as const,
    [154, 'notify', 'warning'] as const,
    [777, 'notify', 'warning'] as const,
  ])('treats Xid %i as %s at %s', (xid, action, severity) => {
    // Prepare / Act
    const { entry } = xidPolicyFor(DEFAULT_XID_POLICY, xid);
    // Assess
    expect(entry.action).toBe(action);
    expect(entry.severity).toBe(severity);
  });

  it('needs two Xid 74 within an hour and one of everything else', () => {
    // Prepare / Act / Assess
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 74).entry).toMatchObject({ count: 2, window_s: 3600 });
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 48).entry).toMatchObject({ count: 1, window_s: 3600 });
  });

  it('says whether a code is known', () => {
    // Prepare / Act / Assess
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 48).known).toBe(true);
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 777).known).toBe(false);
  });

  it('names each code with NVIDIA mnemonics', () => {
    // Prepare / Act / Assess
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 48).entry.mnemonic).toBe('GPU_ECC_DBE');
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 79).entry.mnemonic).toBe('GPU_HAS_FALLEN_OFF_THE_BUS');
  });
});

describe('withXidOverrides', () => {
  it('merges partial entries and leaves the base untouched', () => {
    // Prepare / Act
    const policy = withXidOverrides(DEFAULT_XID_POLICY, {
      94: { action: 'replace', severity: 'critical' },
      900: { action: 'ignore' },
    });
    // Assess
    expect(xidPolicyFor(policy, 94).entry).toMatchObject({
      action: 'replace',
      severity: 'critical',
      mnemonic: 'CONTAINED_ERROR',
    });
    expect(xidPolicyFor(policy, 900).entry).toMatchObject({ action: 'ignore', severity: 'warning' });
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 94).entry.action).toBe('reset');
  });

  it.each([
    [{ 13: { count: 0 } }, 'count'],
    [{ 13: { window_s: -5 } }, 'window_s'],
    [{ 13: { action: 'reboot' as never } }, 'action'],
    [{ 13: { severity: 'fatal' as never } }, 'severity'],
    [{ 0: { action: 'ignore' as const } }, 'xid'],
  ])('throws XidPolicyError for %j naming %s', (overrides, field) => {
    // Prepare / Act
    let error: unknown;
    try {
      withXidOverrides(DEFAULT_XID_POLICY, overrides);
    } catch (e) {
      error = e;
    }
    // Assess
    expect(error).toBeInstanceOf(XidPolicyError);
    expect((error as XidPolicyError).field).toBe(field);
  });
});
