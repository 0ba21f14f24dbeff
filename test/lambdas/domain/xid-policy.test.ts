import { describe, expect, it } from 'vitest';
import { DEFAULT_XID_POLICY, withXidOverrides, XidPolicyError, xidPolicyFor } from '../../../lambdas/domain';
import { XID_CATALOG } from '../../../lambdas/domain/xid-catalog';

describe('DEFAULT_XID_POLICY', () => {
  it.each([
    ...[13, 31, 32, 68, 69, 8, 39, 40, 41, 70, 71, 72, 75, 76, 77].map((x) => [x, 'notify', 'info'] as const),
    ...[43, 45, 38, 137, 121].map((x) => [x, 'ignore', 'info'] as const),
    ...[64, 79].map((x) => [x, 'replace', 'critical'] as const),
    [48, 'reset', 'warning'] as const,
    [94, 'notify', 'warning'] as const,
    ...[46, 62, 74, 95, 109, 110, 119, 120, 136, 140, 143, 158].map((x) => [x, 'reset', 'warning'] as const),
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

  it('resets a reset-class Xid first and replaces when it comes back: 2 episodes within a day (74: an hour)', () => {
    // Prepare / Act / Assess
    for (const xid of [119, 120, 109, 62, 46, 140, 48]) {
      expect(xidPolicyFor(DEFAULT_XID_POLICY, xid).entry, `Xid ${xid}`).toMatchObject({
        action: 'reset',
        count: 1,
        replace_count: 2,
        replace_window_s: 86_400,
        burst_s: 600,
      });
    }
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 74).entry).toMatchObject({
      replace_count: 2,
      replace_window_s: 3600,
    });
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 48).entry).toMatchObject({
      immediate: 'WORKFLOW_XID_48',
      source: expect.stringMatching(/^NVIDIA Xid catalog/),
      remedy: expect.stringContaining('Xid 64'),
    });
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 79).entry.replace_count).toBeUndefined();
  });

  it('has every code of the catalog, with its buckets and where each entry comes from', () => {
    // Prepare
    const codes = Object.keys(XID_CATALOG).map(Number);
    // Act / Assess
    expect(codes.length).toBe(172);
    for (const xid of codes) {
      const { entry, known } = xidPolicyFor(DEFAULT_XID_POLICY, xid);
      expect(known, `Xid ${xid}`).toBe(true);
      expect(entry.immediate).toBe(XID_CATALOG[xid]?.immediate);
      expect(entry.source).toMatch(/catalog/);
    }
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 120).entry).toMatchObject({
      immediate: 'RESET_GPU',
      investigatory: 'INVESTIGATE_SW',
      class: 'hardware',
    });
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 13).entry.class).toBe('application');
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 54).entry.class).toBe('notice');
  });

  it('follows the catalog bucket for each code, deviating only where the entry says why', () => {
    // Prepare
    const expected: Record<string, string> = {
      IGNORE: 'ignore',
      WORKFLOW_XID_45: 'ignore',
      RESTART_APP: 'notify',
      RESET_GPU: 'reset',
      RESTART_VM: 'reset',
      WORKFLOW_NVLINK_ERR: 'reset',
    };
    // Act / Assess
    for (const row of Object.values(XID_CATALOG)) {
      const { entry } = xidPolicyFor(DEFAULT_XID_POLICY, row.xid);
      const want = expected[row.immediate];
      if (want === undefined || entry.action === want) continue;
      expect(`${row.xid}: ${entry.source}`).toMatch(/deviation|catalog RESTART_APP/);
    }
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
    expect(xidPolicyFor(DEFAULT_XID_POLICY, 94).entry.action).toBe('notify');
  });

  it.each([
    [{ 13: { count: 0 } }, 'count'],
    [{ 13: { window_s: -5 } }, 'window_s'],
    [{ 13: { action: 'reboot' as never } }, 'action'],
    [{ 13: { severity: 'fatal' as never } }, 'severity'],
    [{ 0: { action: 'ignore' as const } }, 'xid'],
    [{ 120: { replace_count: 1 } }, 'replace_count'],
    [{ 13: { replace_count: 3 } }, 'replace_window_s'],
    [{ 120: { burst_s: -1 } }, 'burst_s'],
    [{ 120: { class: 'gpu' as never } }, 'class'],
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
