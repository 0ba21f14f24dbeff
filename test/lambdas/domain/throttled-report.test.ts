import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { REPORT_CHARTS } from '../../../lambdas/adapters/report-charts';
import { reportCsv, WASTE_CSV_COLUMNS, wasteCsv } from '../../../lambdas/adapters/report-csv';
import { reportHtml } from '../../../lambdas/adapters/report-html';
import type { WasteReport } from '../../../lambdas/domain/build-waste-report';
import { buildWasteReport } from '../../../lambdas/domain/build-waste-report';
import { reportPeriod } from '../../../lambdas/domain/report-calendar';
import { reportSummaryText } from '../../../lambdas/domain/report-message';
import type { WasteReportRow } from '../../../lambdas/domain/types';
import { wasteSummary } from '../../../lambdas/local/waste-summary';
import { gpuSums, groupsOf, REPORT_END } from '../report-fixture';

/**
 * Two p5 GPUs of one team over a day ($165.12 each): GPU 0 working at 90 % and power-capped 25 % of
 * the time (throttled = (165.12 − 16.512) × 0.25 = 37.152), GPU 1 idle (its cost all wasted, so
 * nothing throttled on top).
 */
const ROWS: WasteReportRow[] = [
  gpuSums({ instance_id: 'i-0aaa', gpu_index: 0, team: 'llm', throttled_usd: 37.152 }),
  gpuSums({
    instance_id: 'i-0aaa',
    gpu_index: 1,
    team: 'llm',
    idle_usd: 165.12,
    underused_usd: 0,
    wasted_usd: 165.12,
    efficiency: 0,
    idle_gpu_hours: 24,
  }),
];

function report(by: WasteReport['by']): WasteReport {
  return buildWasteReport({
    rows: ROWS,
    groups: groupsOf(ROWS),
    days: [{ day: '2026-03-08', rows: ROWS }],
    period: reportPeriod('week', REPORT_END),
    by,
    generatedAt: REPORT_END,
  });
}

describe('throttled dollars in the reports: lost, apart from the waste', () => {
  it('sums throttled_usd into the totals, groups and top wasters, never into wasted_usd', () => {
    // Act
    const r = report('team');
    // Assess
    expect(r.totals.throttled_usd).toBeCloseTo(37.152, 9);
    expect(r.totals.wasted_usd).toBeCloseTo(16.512 + 165.12, 9);
    expect(r.totals.wasted_usd + r.totals.throttled_usd).toBeLessThanOrEqual(r.totals.cost_usd);
    expect(r.groups.find((g) => g.key === 'llm')?.throttled_usd).toBeCloseTo(37.152, 9);
    expect(r.top_wasters[0]?.throttled_usd).toBeCloseTo(37.152, 9);
    expect(r.method.caveats).toContainEqual(
      expect.stringContaining('$37.15 was lost to thermal or power throttling'),
    );
  });

  it('writes a throttled_usd column in the grouped CSV (last, after unpriced) and in the line items', () => {
    // Act
    const [header, llm] = parse(reportCsv(report('team')), { bom: true }) as string[][];
    const items = parse(reportCsv(report('gpu')), { bom: true, columns: true }) as Record<string, string>[];
    // Assess
    expect(header?.at(-1)).toBe('throttled_usd');
    expect(header?.at(-2)).toBe('unpriced');
    expect(llm?.at(-1)).toBe('37.15');
    expect(items.map((i) => [i.gpu_index, i.throttled_usd, i.wasted_usd])).toEqual([
      ['0', '37.152000', '16.512000'],
      ['1', '0.000000', '165.120000'],
    ]);
  });

  it('writes throttled_usd in waste.csv beside the waste classes', () => {
    // Act
    const [header, first] = parse(wasteCsv(ROWS), { bom: true }) as string[][];
    // Assess
    expect(header).toEqual([...WASTE_CSV_COLUMNS]);
    expect(first?.[WASTE_CSV_COLUMNS.indexOf('throttled_usd')]).toBe('37.152000');
    expect(first?.[WASTE_CSV_COLUMNS.indexOf('wasted_usd')]).toBe('16.512000');
  });

  it('shows the throttled dollars in the HTML totals and group table, the message and the local summary', () => {
    // Prepare
    const r = report('team');
    const charts = Object.fromEntries(REPORT_CHARTS.map((c) => [c, '<svg></svg>'])) as Record<
      (typeof REPORT_CHARTS)[number],
      string
    >;
    // Act
    const html = reportHtml(r, charts);
    const message = reportSummaryText(r);
    const summary = wasteSummary(ROWS);
    // Assess
    expect(html).toMatch(/Lost to throttling<b>\$37\.15<\/b>/);
    expect(html).toContain(
      '<th scope="col" title="Lost to thermal or power throttling: not part of Wasted">Throttled</th>',
    );
    expect(message).toContain('Lost to thermal or power throttling (not in wasted): $37.15');
    expect(summary).toContain('lost to thermal or power throttling (not in wasted): $37.15');
  });
});
