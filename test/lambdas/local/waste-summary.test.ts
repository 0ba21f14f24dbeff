import { describe, expect, it } from 'vitest';
import type { WasteReportRow } from '../../../lambdas/domain/types';
import { wasteSummary } from '../../../lambdas/local/waste-summary';

const row = (over: Partial<WasteReportRow>): WasteReportRow => ({
  instance_id: 'i-0abc12345def67890',
  instance_type: 'p5.48xlarge',
  gpu_index: 0,
  team: 'llm',
  job: 'pretrain-7b',
  gpu_hours: 1,
  cost_usd: 6.88,
  idle_usd: 0,
  held_idle_usd: 0,
  underused_usd: 3.44,
  broken_usd: 0,
  wasted_usd: 3.44,
  throttled_usd: 0,
  efficiency: 0.5,
  efficiency_source: 'sm_active',
  price_usd_per_hour: 55.04,
  price_source: 'builtin:aws-on-demand-us-east-1-2026-03',
  processes_unknown: false,
  wasted_by_diagnosis_usd: { tensor_idle: 3.44 },
  ...over,
});

describe('waste summary', () => {
  it('shows the wasted dollars by cause, in total and per instance', () => {
    // Prepare
    const rows = [
      row({}),
      row({ gpu_index: 1, wasted_by_diagnosis_usd: { idle: 6.88, tensor_idle: 1 }, wasted_usd: 7.88 }),
    ];

    // Act
    const text = wasteSummary(rows);

    // Assess
    expect(text).toContain('wasted by cause: idle $6.88, tensor_idle $4.44');
    expect(text).toMatch(
      /i-0abc12345def67890 p5\.48xlarge: 2 GPUs.*; by cause: idle \$6\.88, tensor_idle \$4\.44/,
    );
  });
});
