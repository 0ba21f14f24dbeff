import { buildWasteReport, reportPeriod, type WasteReport, type WasteSeriesRow } from '../../lambdas/domain';
import type { WasteReportRow } from '../../lambdas/domain/types';

/** The end of the fixture report's period. */
export const REPORT_END = new Date('2026-03-11T00:00:00Z');

/** One GPU's sums over a day on a p5.48xlarge ($165.12/day per GPU), working at 90 % unless told. */
export function gpuSums(
  overrides: Partial<WasteReportRow> & { instance_id: string; gpu_index: number },
): WasteReportRow {
  return {
    instance_type: 'p5.48xlarge',
    gpu_hours: 24,
    cost_usd: 165.12,
    idle_usd: 0,
    held_idle_usd: 0,
    underused_usd: 16.512,
    broken_usd: 0,
    wasted_usd: 16.512,
    efficiency: 0.9,
    efficiency_source: 'sm_active',
    price_usd_per_hour: 55.04,
    price_source: 'builtin:aws-ec2-on-demand-linux-2026-11-23',
    processes_unknown: false,
    ...overrides,
  };
}

/**
 * The slice rows a store would return for per-GPU sums that all fall on one day with one diagnosis
 * (each GPU's team and job as its windows carried them).
 */
export function seriesOf(
  rows: readonly WasteReportRow[],
  day: string,
  diagnosis?: WasteSeriesRow['diagnosis'],
): WasteSeriesRow[] {
  return rows.map((r) => ({
    day,
    ...(diagnosis !== undefined ? { diagnosis } : {}),
    ...(r.team !== undefined ? { team: r.team } : {}),
    ...(r.job !== undefined ? { job: r.job } : {}),
    instance_type: r.instance_type,
    price_source: r.price_source,
    gpu_hours: r.gpu_hours,
    cost_usd: r.cost_usd,
    idle_usd: r.idle_usd,
    held_idle_usd: r.held_idle_usd,
    underused_usd: r.underused_usd,
    broken_usd: r.broken_usd,
    wasted_usd: r.wasted_usd,
    efficiency_weighted: (r.efficiency ?? 0) * r.gpu_hours,
    efficiency_hours: r.efficiency === undefined ? 0 : r.gpu_hours,
  }));
}

/** A week's report over six instances, one with hostile tag values, one unpriced, by team. */
export function fixtureReport(by: WasteReport['by'] = 'team'): WasteReport {
  const rows: WasteReportRow[] = [
    gpuSums({
      instance_id: 'i-0aaa',
      gpu_index: 0,
      team: 'vision',
      job: 'train-1',
      idle_usd: 165.12,
      underused_usd: 0,
      wasted_usd: 165.12,
      efficiency: 0,
    }),
    gpuSums({ instance_id: 'i-0aaa', gpu_index: 1, team: 'vision', job: 'train-1' }),
    gpuSums({
      instance_id: 'i-0bbb',
      gpu_index: 0,
      team: 'nlp',
      job: 'eval',
      broken_usd: 165.12,
      underused_usd: 0,
      wasted_usd: 165.12,
    }),
    gpuSums({
      instance_id: 'i-0ccc',
      gpu_index: 0,
      team: '=HYPERLINK("http://evil")',
      job: '<script>alert(1)</script>',
    }),
    gpuSums({
      instance_id: 'i-0ddd',
      gpu_index: 0,
      team: 'nlp',
      held_idle_usd: 165.12,
      underused_usd: 0,
      wasted_usd: 165.12,
    }),
    gpuSums({ instance_id: 'i-0eee', gpu_index: 0, team: 'speech' }),
    gpuSums({
      instance_id: 'i-0fff',
      gpu_index: 0,
      instance_type: 'p5e.48xlarge',
      cost_usd: 0,
      underused_usd: 0,
      wasted_usd: 0,
      price_usd_per_hour: 0,
      price_source: 'unpriced',
    }),
  ];
  const series = [
    ...seriesOf(rows.slice(0, 3), '2026-03-04', 'idle'),
    ...seriesOf(rows.slice(3, 5), '2026-03-06', 'input_bound'),
    ...seriesOf(rows.slice(5), '2026-03-10'),
  ];
  return buildWasteReport({
    rows,
    series,
    period: reportPeriod('week', REPORT_END),
    by,
    generatedAt: REPORT_END,
  });
}
