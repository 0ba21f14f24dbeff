import {
  buildWasteReport,
  previousReportPeriod,
  type ReportGrouping,
  type ReportInput,
  reportPeriod,
  type WasteGroupRow,
  type WasteReport,
} from '../../lambdas/domain';
import type { WasteReportRow } from '../../lambdas/domain/types';

/** The end of the fixture report's period: Monday 9 March 2026, so the week is 2 to 9 March. */
export const REPORT_END = new Date('2026-03-09T00:00:00Z');

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
    throttled_usd: 0,
    efficiency: 0.9,
    efficiency_source: 'sm_active',
    price_usd_per_hour: 55.04,
    price_source: 'builtin:aws-ec2-on-demand-linux-2026-11-23',
    processes_unknown: false,
    wasted_by_diagnosis_usd: {},
    ...overrides,
  };
}

/**
 * What a store's `queryWasteBy` answers for per-GPU sums whose windows all carried one tag value
 * and, per GPU, one diagnosis (`diagnosisOf`; absent: none).
 */
export function groupsOf(
  rows: readonly WasteReportRow[],
  diagnosisOf: (r: WasteReportRow) => string | undefined = () => undefined,
): ReportInput['groups'] {
  const keyOf: Record<
    Exclude<ReportGrouping, 'instance' | 'gpu'>,
    (r: WasteReportRow) => string | undefined
  > = {
    team: (r) => r.team,
    job: (r) => r.job,
    // The fixture's hosts are not Kubernetes nodes: every window is outside any pod.
    namespace: () => undefined,
    pod: () => undefined,
    instance_type: (r) => r.instance_type,
    diagnosis: diagnosisOf,
  };
  const out: Partial<Record<ReportGrouping, WasteGroupRow[]>> = {};
  for (const [by, key] of Object.entries(keyOf) as [
    Exclude<ReportGrouping, 'instance' | 'gpu'>,
    (r: WasteReportRow) => string | undefined,
  ][]) {
    const sums = new Map<string | undefined, WasteGroupRow>();
    for (const r of rows) {
      const k = key(r);
      const s = sums.get(k);
      sums.set(k, {
        ...(k !== undefined ? { group: k } : {}),
        gpu_hours: (s?.gpu_hours ?? 0) + r.gpu_hours,
        cost_usd: (s?.cost_usd ?? 0) + r.cost_usd,
        idle_usd: (s?.idle_usd ?? 0) + r.idle_usd,
        held_idle_usd: (s?.held_idle_usd ?? 0) + r.held_idle_usd,
        underused_usd: (s?.underused_usd ?? 0) + r.underused_usd,
        broken_usd: (s?.broken_usd ?? 0) + r.broken_usd,
        wasted_usd: (s?.wasted_usd ?? 0) + r.wasted_usd,
        throttled_usd: (s?.throttled_usd ?? 0) + r.throttled_usd,
        wasted_by_diagnosis_usd: {},
        ...(r.price_source === 'unpriced' || s?.unpriced_gpu_hours !== undefined
          ? {
              unpriced_gpu_hours:
                (s?.unpriced_gpu_hours ?? 0) + (r.price_source === 'unpriced' ? r.gpu_hours : 0),
            }
          : {}),
      });
    }
    out[by] = [...sums.values()];
  }
  return out;
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
      idle_gpu_hours: 24,
      region: 'us-east-1',
      wasted_by_diagnosis_usd: { idle: 165.12 },
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
      wasted_by_diagnosis_usd: { input_bound: 16.512 },
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
      region: 'us-east-1',
      idle_gpu_hours: 6,
    }),
  ];
  const groups = groupsOf(rows, (r) =>
    r.idle_usd > 0 ? 'idle' : r.instance_id === 'i-0ccc' ? 'input_bound' : undefined,
  );
  // The instances ran on three days of the week: vision's on the 4th, nlp's and the hostile tags' on the 6th, the rest on the 8th.
  const daysOf = (ids: readonly string[]) => rows.filter((r) => ids.includes(r.instance_id));
  const days = [
    { day: '2026-03-04', rows: daysOf(['i-0aaa']) },
    { day: '2026-03-06', rows: daysOf(['i-0bbb', 'i-0ccc', 'i-0ddd']) },
    { day: '2026-03-08', rows: daysOf(['i-0eee', 'i-0fff']) },
  ];
  const period = reportPeriod('week', REPORT_END);
  return buildWasteReport({
    rows,
    groups,
    days,
    previous: { period: previousReportPeriod(period), cost_usd: 1651.2, wasted_usd: 400 },
    period,
    by,
    generatedAt: REPORT_END,
  });
}
