import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  lineItemCsvColumns,
  neutraliseFormula,
  reportCsv,
  reportCsvColumns,
  WASTE_CSV_COLUMNS,
  wasteCsv,
} from '../../../lambdas/adapters/report-csv';
import type { WasteReportRow } from '../../../lambdas/domain/types';
import { fixtureReport } from '../report-fixture';

describe('reportCsv', () => {
  it('starts with a UTF-8 BOM, ends rows with CRLF and heads the columns', () => {
    // Prepare / Act
    const csv = reportCsv(fixtureReport());
    // Assess
    expect(csv.charCodeAt(0)).toBe(0xfeff);
    expect(csv.slice(1).split('\r\n')[0]).toBe(reportCsvColumns('team').join(','));
    expect(csv.endsWith('\r\n')).toBe(true);
    expect(csv.replaceAll('\r\n', '')).not.toMatch(/\n/);
  });

  it('writes one row per group with ISO dates and USD with cents, as a CSV reader reads it back', () => {
    // Prepare
    const report = fixtureReport();
    // Act
    const records = parse(reportCsv(report), { bom: true, columns: true }) as Record<string, string>[];
    // Assess
    expect(records).toHaveLength(report.groups.length);
    const nlp = records.find((r) => r.team === 'nlp');
    expect(nlp).toMatchObject({
      period_from: '2026-03-02T00:00:00.000Z',
      period_to: '2026-03-09T00:00:00.000Z',
      cost_usd: '330.24',
      wasted_usd: '330.24',
      held_idle_usd: '165.12',
      broken_usd: '165.12',
      wasted_pct: '100.0',
      unpriced: 'false',
    });
    for (const r of records) expect(r.cost_usd).toMatch(/^\d+\.\d{2}$/);
  });

  it.each(['team', 'job', 'namespace', 'pod', 'instance_type', 'diagnosis'] as const)(
    'names the grouping column %s itself, for a pivot table',
    (by) => {
      // Prepare / Act
      const [header] = parse(reportCsv(fixtureReport(by)), { bom: true }) as string[][];
      // Assess
      expect(header?.slice(0, 4)).toEqual(['period_from', 'period_to', by, 'gpu_hours']);
      expect(header).not.toContain('group');
    },
  );

  it.each(['team', 'job', 'instance_type'] as const)(
    'flags the groups holding an unpriced host when grouped by %s',
    (by) => {
      // Prepare: i-0fff (p5e.48xlarge, no team, no job) is unpriced
      const report = fixtureReport(by);

      // Act
      const records = parse(reportCsv(report), { bom: true, columns: true }) as Record<string, string>[];

      // Assess
      const flagged = records.filter((r) => r.unpriced === 'true').map((r) => r[by]);
      const expected = { team: '(none)', job: '(none)', instance_type: 'p5e.48xlarge' }[by];
      expect(flagged).toEqual([expected]);
      expect(records.filter((r) => r.unpriced === 'false')).toHaveLength(records.length - 1);
    },
  );

  it('neutralises a tag that a spreadsheet would run as a formula', () => {
    // Prepare / Act
    const records = parse(reportCsv(fixtureReport()), { bom: true, columns: true }) as Record<
      string,
      string
    >[];
    // Assess
    expect(records.map((r) => r.team)).toContain(`'=HYPERLINK("http://evil")`);
  });

  it('writes one line item per instance and day by instance, with every column finance pivots on', () => {
    // Prepare
    const report = fixtureReport('instance');

    // Act
    const csv = reportCsv(report);

    // Assess
    const [header] = parse(csv, { bom: true }) as string[][];
    expect(header).toEqual([...lineItemCsvColumns('instance')]);
    for (const column of [
      'team',
      'job',
      'namespace',
      'instance_id',
      'instance_type',
      'region',
      'az',
      'lifecycle',
      'price_usd_per_hour',
      'price_source',
      'gpu_hours',
      'idle_gpu_hours',
      'cost_usd',
      'wasted_usd',
      'idle_usd',
      'held_idle_usd',
      'underused_usd',
      'broken_usd',
      'wasted_input_bound_usd',
    ]) {
      expect(header).toContain(column);
    }
    const records = parse(csv, { bom: true, columns: true }) as Record<string, string>[];
    expect(records.map((r) => [r.day, r.instance_id, r.gpus])).toEqual([
      ['2026-03-04', 'i-0aaa', '2'],
      ['2026-03-06', 'i-0bbb', '1'],
      ['2026-03-06', 'i-0ccc', '1'],
      ['2026-03-06', 'i-0ddd', '1'],
      ['2026-03-08', 'i-0eee', '1'],
      ['2026-03-08', 'i-0fff', '1'],
    ]);
    expect(records[0]).toMatchObject({
      team: 'vision',
      lifecycle: 'on-demand',
      price_usd_per_hour: '55.04',
      cost_usd: '330.240000',
      idle_usd: '165.120000',
    });
    expect(records[5]).toMatchObject({ lifecycle: '', price_source: 'unpriced', cost_usd: '0.000000' });
    expect(records.find((r) => r.instance_id === 'i-0ccc')?.team).toBe(`'=HYPERLINK("http://evil")`);
    const wasted = records.reduce((s, r) => s + Number(r.wasted_usd), 0);
    expect(wasted).toBeCloseTo(report.totals.wasted_usd, 5);
  });

  it('writes one line item per GPU and day by gpu', () => {
    // Prepare / Act
    const records = parse(reportCsv(fixtureReport('gpu')), { bom: true, columns: true }) as Record<
      string,
      string
    >[];
    // Assess
    expect(records.slice(0, 2).map((r) => [r.day, r.instance_id, r.gpu_index, r.gpus])).toEqual([
      ['2026-03-04', 'i-0aaa', '0', '1'],
      ['2026-03-04', 'i-0aaa', '1', '1'],
    ]);
    expect(records).toHaveLength(7);
  });

  it.each([
    ['=1+1', "'=1+1"],
    ['+cmd', "'+cmd"],
    ['-2', "'-2"],
    ['@SUM(A1)', "'@SUM(A1)"],
    ['\tx', "'\tx"],
    ['\rx', "'\rx"],
    ['vision', 'vision'],
    ['12.50', '12.50'],
  ])('neutraliseFormula(%j) is %j', (cell, expected) => {
    // Prepare / Act / Assess
    expect(neutraliseFormula(cell)).toBe(expected);
  });
});

const wasteRow = (over: Partial<WasteReportRow>): WasteReportRow => ({
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

describe('wasteCsv', () => {
  it('has a wasted-USD column per diagnosis in waste.csv, 0 where none', () => {
    // Prepare
    const rows = [
      wasteRow({}),
      wasteRow({ gpu_index: 1, wasted_by_diagnosis_usd: { idle: 6.88 }, wasted_usd: 6.88 }),
    ];

    // Act
    const [header, first, second] = parse(wasteCsv(rows), { bom: true }) as string[][];

    // Assess
    const columns = header ?? [];
    expect(columns).toEqual([...WASTE_CSV_COLUMNS]);
    const cell = (line: string[] | undefined, name: string) => line?.[columns.indexOf(name)];
    expect(columns).toContain('wasted_compute_bound_usd');
    expect(cell(first, 'wasted_tensor_idle_usd')).toBe('3.440000');
    expect(cell(first, 'wasted_idle_usd')).toBe('0.000000');
    expect(cell(second, 'wasted_idle_usd')).toBe('6.880000');
  });

  it("writes the line items with the report CSV's writer: BOM, CRLF rows, formula cells made inert", () => {
    // Prepare
    const rows = [wasteRow({ team: '=HYPERLINK("http://x")', namespace: '@SUM(A1)', region: 'us-east-1' })];

    // Act
    const csv = wasteCsv(rows);

    // Assess
    expect(csv.charCodeAt(0)).toBe(0xfeff);
    expect(csv.endsWith('\r\n')).toBe(true);
    const [, line] = parse(csv, { bom: true }) as string[][];
    expect(line?.[WASTE_CSV_COLUMNS.indexOf('team')]).toBe('\'=HYPERLINK("http://x")');
    expect(line?.[WASTE_CSV_COLUMNS.indexOf('namespace')]).toBe("'@SUM(A1)");
    expect(line?.[WASTE_CSV_COLUMNS.indexOf('region')]).toBe('us-east-1');
    expect(line?.[WASTE_CSV_COLUMNS.indexOf('lifecycle')]).toBe('on-demand');
  });
});
