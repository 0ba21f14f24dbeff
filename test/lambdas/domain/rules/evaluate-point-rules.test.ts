import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, evaluatePointRules } from '../../../../lambdas/domain';
import { flushWindow, makeBatch, NOW } from '../batch-builder';

describe('evaluatePointRules', () => {
  const batch = makeBatch({
    windows: [
      flushWindow(0, { max_gpu_temp_c: 93, remapped_rows_failure: true }),
      flushWindow(1, { ecc_dbe_volatile: 1 }),
      flushWindow(
        2,
        { max_gpu_temp_c: 99, ecc_dbe_volatile: 9 },
        { kind: 'horizon', start: '2026-03-10T09:45:10Z' },
      ),
    ],
    events: [
      { at: '2026-03-10T10:00:05Z', kind: 'spot_interruption', source: 'imds' },
      { at: '2026-03-10T10:00:04Z', kind: 'xid', xid: 79, gpu_index: 7, source: 'kmsg' },
      { at: '2026-03-10T10:00:03Z', kind: 'gpu_lost', gpu_index: 7, source: 'nvml' },
    ],
  });

  it('runs every point rule in a fixed order and skips horizon windows', () => {
    // Prepare
    // Act
    const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.map((f) => `${f.rule}:${f.gpu_index ?? '-'}`)).toEqual([
      'gpu_lost:7',
      'ecc_dbe:1',
      'xid_fatal:7',
      'row_remap_failure:0',
      'thermal_critical:0',
      'spot_interruption:-',
    ]);
  });

  it('is deterministic', () => {
    // Prepare / Act / Assess
    expect(evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW)).toEqual(
      evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW),
    );
  });

  it('finds nothing in a healthy batch', () => {
    // Prepare
    const healthy = makeBatch({
      windows: [flushWindow(0, { sm_active: 0.8, max_gpu_temp_c: 70, ecc_dbe_volatile: 0 })],
    });
    // Act / Assess
    expect(evaluatePointRules(healthy, DEFAULT_RULE_CONTEXT, NOW)).toEqual([]);
  });
});
