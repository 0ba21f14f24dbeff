import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, eccDbeRule } from '../../../../lambdas/domain';
import { flushWindow, makeBatch, NOW } from '../batch-builder';

describe('ecc_dbe', () => {
  it.each([
    [
      'a flush window with ecc_dbe_volatile 2',
      [flushWindow(3, { ecc_dbe_volatile: 2, ecc_dbe_aggregate: 5, remapped_rows_pending: true })],
      [],
      'reset',
      { ecc_dbe_volatile: 2, ecc_dbe_aggregate: 5, dbe_events: 0, remapped_rows_failure: false },
    ],
    [
      'an ecc_dbe event',
      [],
      [{ at: '2026-03-10T10:00:04Z', kind: 'ecc_dbe', gpu_index: 3, source: 'nvml' }],
      'reset',
      { dbe_events: 1, remapped_rows_failure: false },
    ],
    [
      'a DBE whose row remap failed (an RMA candidate)',
      [flushWindow(3, { ecc_dbe_volatile: 1, remapped_rows_failure: true })],
      [],
      'replace',
      { ecc_dbe_volatile: 1, dbe_events: 0, remapped_rows_failure: true },
    ],
  ])(
    'fires critical on %s: reset first as the Xid catalog says, replace when the remap failed',
    (_name, windows, events, action, evidence) => {
      // Prepare
      const batch = makeBatch({ windows, events });
      // Act
      const findings = eccDbeRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
      // Assess
      expect(findings).toHaveLength(1);
      expect(findings[0]).toMatchObject({
        rule: 'ecc_dbe',
        severity: 'critical',
        action,
        gpu_index: 3,
      });
      expect(findings[0]?.evidence).toEqual(evidence);
    },
  );

  it('makes one finding per GPU when the window and an event both report it, at the earlier time', () => {
    // Prepare
    const batch = makeBatch({
      windows: [flushWindow(3, { ecc_dbe_volatile: 1 })],
      events: [{ at: '2026-03-10T10:00:04Z', kind: 'ecc_dbe', gpu_index: 3, source: 'nvml' }],
    });
    // Act
    const findings = eccDbeRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(findings).toHaveLength(1);
    expect(findings[0]?.at).toBe('2026-03-10T10:00:04Z');
    expect(findings[0]?.summary).toContain('ecc_dbe_volatile = 1');
  });

  it.each([
    ['zero DBEs', flushWindow(0, { ecc_dbe_volatile: 0, ecc_sbe_volatile: 40 })],
    ['no ECC counter', flushWindow(0, { gpu_util: 0.5 })],
    ['a horizon window', flushWindow(0, { ecc_dbe_volatile: 3 }, { kind: 'horizon' })],
  ])('stays quiet on %s', (_name, window) => {
    // Prepare
    const batch = makeBatch({ windows: [window] });
    // Act / Assess
    expect(eccDbeRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings).toEqual([]);
  });
});
