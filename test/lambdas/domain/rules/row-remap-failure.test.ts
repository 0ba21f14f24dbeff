import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, rowRemapFailureRule } from '../../../../lambdas/domain';
import { flushWindow, makeBatch, NOW } from '../batch-builder';

describe('row_remap_failure', () => {
  it.each([
    ['remapped_rows_failure', { remapped_rows_failure: true }, [], 'critical', 'replace'],
    [
      'a remap_failure event',
      {},
      [{ at: '2026-03-10T10:00:04Z', kind: 'remap_failure', gpu_index: 1, source: 'nvml' }],
      'critical',
      'replace',
    ],
    ['retired_pages_pending', { retired_pages_pending: true }, [], 'warning', 'reset'],
    [
      'failure and retired pages both',
      { remapped_rows_failure: true, retired_pages_pending: true },
      [],
      'critical',
      'replace',
    ],
  ])('fires on %s as %s/%s', (_name, metrics, events, severity, action) => {
    // Prepare
    const batch = makeBatch({ windows: [flushWindow(1, metrics)], events });
    // Act
    const findings = rowRemapFailureRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ rule: 'row_remap_failure', severity, action, gpu_index: 1 });
  });

  it('stays quiet when a remap is only pending (Xid 63 covers it)', () => {
    // Prepare
    const batch = makeBatch({
      windows: [flushWindow(1, { remapped_rows_pending: true, remapped_rows_failure: false })],
    });
    // Act / Assess
    expect(rowRemapFailureRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings).toEqual([]);
  });
});
