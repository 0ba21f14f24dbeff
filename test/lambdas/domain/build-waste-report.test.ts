import { describe, expect, it } from 'vitest';
import {
  buildWasteReport,
  REPORT_GROUPINGS,
  ReportInputError,
  reportPeriod,
  UNATTRIBUTED,
} from '../../../lambdas/domain';
import type { WasteReportRow } from '../../../lambdas/domain/types';
import { gpuSums, groupsOf } from '../report-fixture';

const NOW = new Date('2026-03-11T00:00:00Z');
const PERIOD = reportPeriod('day', NOW);

/** One GPU's sums over a day on a p5.48xlarge, nothing wasted unless told. */
function gpu(
  overrides: Partial<WasteReportRow> & { instance_id: string; gpu_index: number },
): WasteReportRow {
  return gpuSums({ underused_usd: 0, wasted_usd: 0, ...overrides });
}

const ROWS: WasteReportRow[] = [
  gpu({
    instance_id: 'i-a',
    gpu_index: 0,
    team: 'vision',
    job: 'train-1',
    idle_usd: 165.12,
    wasted_usd: 165.12,
    efficiency: 0,
  }),
  gpu({
    instance_id: 'i-a',
    gpu_index: 1,
    team: 'vision',
    job: 'train-1',
    underused_usd: 16.512,
    wasted_usd: 16.512,
  }),
  gpu({ instance_id: 'i-b', gpu_index: 0, team: 'nlp', job: 'eval', broken_usd: 165.12, wasted_usd: 165.12 }),
  gpu({
    instance_id: 'i-c',
    gpu_index: 0,
    instance_type: 'p5e.48xlarge',
    cost_usd: 0,
    price_usd_per_hour: 0,
    price_source: 'unpriced',
    efficiency_source: 'gpu_util',
  }),
];

/** What the store answers for ROWS: GPU 0 of i-a diagnosed idle, the rest without a diagnosis, all on 2026-03-10. */
const INPUT = {
  rows: ROWS,
  groups: groupsOf(ROWS, (r) => (r.instance_id === 'i-a' && r.gpu_index === 0 ? 'idle' : undefined)),
  days: [{ day: '2026-03-10', rows: ROWS }],
};

describe('buildWasteReport', () => {
  it('says framebuffer decided idle vs held-idle where processes were unknown, and nothing where they were known', () => {
    // Prepare: a scrape-only GPU (no process count) beside the agent's GPUs
    const scraped = gpu({ instance_id: 'i-d', gpu_index: 0, processes_unknown: true });
    const rows = [...ROWS, scraped];
    // Act
    const withScrape = buildWasteReport({
      rows,
      groups: groupsOf(rows, () => undefined),
      days: [{ day: '2026-03-10', rows }],
      period: PERIOD,
      by: 'team',
      generatedAt: NOW,
    });
    const agentOnly = buildWasteReport({ ...INPUT, period: PERIOD, by: 'team', generatedAt: NOW });
    // Assess
    expect(withScrape.method.caveats).toContainEqual(
      'Where compute process counts were unknown (dcgm-exporter gives none), framebuffer used decided: an idle GPU with ≥ 256 MiB used counts as held-idle, less as idle.',
    );
    expect(agentOnly.method.caveats.join(' ')).not.toMatch(/framebuffer/);
  });

  it('totals GPU-hours, cost and waste by class, and the wasted share', () => {
    // Prepare / Act
    const report = buildWasteReport({
      ...INPUT,
      period: PERIOD,
      by: 'team',
      generatedAt: NOW,
    });
    // Assess
    expect(report.totals).toMatchObject({ gpus: 4, instances: 3, gpu_hours: 96 });
    expect(report.totals.cost_usd).toBeCloseTo(495.36, 9);
    expect(report.totals.by_class).toEqual({ idle: 165.12, held_idle: 0, underused: 16.512, broken: 165.12 });
    expect(report.totals.wasted_usd).toBeCloseTo(346.752, 9);
    expect(report.wasted_share).toBeCloseTo(0.7, 9);
  });

  it.each([
    ['team', ['vision', 'nlp', UNATTRIBUTED]],
    ['job', ['train-1', 'eval', UNATTRIBUTED]],
    ['instance_type', ['p5.48xlarge', 'p5e.48xlarge']],
    ['instance', ['i-a', 'i-b', 'i-c']],
    ['gpu', ['i-a:0', 'i-b:0', 'i-a:1', 'i-c:0']],
    ['diagnosis', [UNATTRIBUTED, 'idle']],
  ] as const)('groups by %s, most wasted first, untagged rows kept apart', (by, keys) => {
    // Prepare / Act
    const report = buildWasteReport({ ...INPUT, period: PERIOD, by, generatedAt: NOW });
    // Assess
    expect(report.groups.map((g) => g.key)).toEqual(keys);
  });

  it('lists every unpriced host by name and says so in the method', () => {
    // Prepare / Act
    const report = buildWasteReport({
      ...INPUT,
      period: PERIOD,
      by: 'team',
      generatedAt: NOW,
    });
    // Assess
    expect(report.unpriced).toEqual([
      {
        instance_id: 'i-c',
        instance_type: 'p5e.48xlarge',
        gpu_hours: 24,
        idle_gpu_hours: 0,
        reason: 'no price for p5e.48xlarge (its region is not stored: no list price could be looked up)',
      },
    ]);
    const byInstance = buildWasteReport({ ...INPUT, period: PERIOD, by: 'instance', generatedAt: NOW });
    expect(byInstance.groups.map((g) => [g.key, g.unpriced])).toEqual([
      ['i-a', false],
      ['i-b', false],
      ['i-c', true],
    ]);
    expect(report.method.caveats.join(' ')).toMatch(/1 instance\(s\) are unpriced/);
    expect(report.prices.map((p) => p.source)).toEqual([
      'builtin:aws-ec2-on-demand-linux-2026-11-23',
      'unpriced',
    ]);
  });

  it.each([
    [['sm_active'], 'sm_active', /SM activity/],
    [['gpu_util'], 'gpu_util', /upper bound .* lower bound/],
    [['sm_active', 'gpu_util'], 'mixed', /elsewhere/],
    [['none'], 'none', /No efficiency was measured/],
  ])('states the method for efficiency sources %j', (sources, expected, note) => {
    // Prepare
    const rows = sources.map((s, i) => gpu({ instance_id: `i-${i}`, gpu_index: 0, efficiency_source: s }));
    // Act
    const report = buildWasteReport({
      rows,
      groups: groupsOf(rows),
      days: [],
      period: PERIOD,
      by: 'instance',
      generatedAt: NOW,
    });
    // Assess
    expect(report.method.efficiency_source).toBe(expected);
    expect(report.method.note).toMatch(note);
  });

  it('takes the team and job groups from the store, which counts each window for its own tags', () => {
    // Prepare: GPU 0 of i-a served train-1 (vision) one day and eval (nlp) the next; its latest tag is vision
    const gpu0 = ROWS[0] as WasteReportRow;
    const day1 = { ...gpu0, gpu_hours: 12, cost_usd: 82.56, idle_usd: 82.56, wasted_usd: 82.56 };
    const day2 = {
      ...gpu0,
      team: 'nlp',
      job: 'eval',
      gpu_hours: 12,
      cost_usd: 82.56,
      idle_usd: 0,
      wasted_usd: 0,
    };
    // Act
    const report = buildWasteReport({
      rows: [gpu0],
      groups: groupsOf([day1, day2]),
      days: [],
      period: PERIOD,
      by: 'job',
      generatedAt: NOW,
    });
    // Assess
    expect(report.groups.map((g) => [g.key, g.cost_usd, g.wasted_usd])).toEqual([
      ['train-1', 82.56, 82.56],
      ['eval', 82.56, 0],
    ]);
    expect(report.by_team.map((g) => g.key)).toEqual(['vision', 'nlp']);
  });

  it('throws ReportInputError when the store sums of a shown grouping are missing', () => {
    // Prepare
    const { job: _omitted, ...groups } = INPUT.groups;
    // Act / Assess
    expect(() => buildWasteReport({ ...INPUT, groups, period: PERIOD, by: 'job', generatedAt: NOW })).toThrow(
      /grouped by job, got none/,
    );
  });

  it('ranks the top wasters by instance, with their price', () => {
    // Prepare / Act
    const report = buildWasteReport({
      ...INPUT,
      period: PERIOD,
      by: 'team',
      generatedAt: NOW,
    });
    // Assess
    expect(report.top_wasters.map((w) => [w.instance_id, Number(w.wasted_usd.toFixed(3))])).toEqual([
      ['i-a', 181.632],
      ['i-b', 165.12],
      ['i-c', 0],
    ]);
    expect(report.daily).toHaveLength(1);
    expect(report.daily[0]).toMatchObject({ day: '2026-03-10', cost_usd: 495.36 });
    expect(report.daily[0]?.wasted_usd).toBeCloseTo(346.752, 9);
  });

  it('makes one line item per instance and day, its GPUs summed, or one per GPU and day by gpu', () => {
    // Prepare: i-a's two GPUs on two days, the second day only GPU 1
    const [a0, a1, b0] = ROWS as [WasteReportRow, WasteReportRow, WasteReportRow];
    const days = [
      { day: '2026-03-11', rows: [{ ...a1, region: 'us-east-1', az: 'us-east-1a' }] },
      { day: '2026-03-10', rows: [b0, a1, { ...a0, idle_gpu_hours: 24, namespace: 'ml' }] },
    ];
    const input = {
      ...INPUT,
      days,
      period: { kind: 'custom' as const, from: '2026-03-10T00:00:00.000Z', to: '2026-03-12T00:00:00.000Z' },
    };

    // Act
    const byInstance = buildWasteReport({ ...input, by: 'instance', generatedAt: NOW });
    const byGpu = buildWasteReport({ ...input, by: 'gpu', generatedAt: NOW });

    // Assess
    expect(byInstance.line_items.map((i) => [i.day, i.instance_id, i.gpus])).toEqual([
      ['2026-03-10', 'i-a', 2],
      ['2026-03-10', 'i-b', 1],
      ['2026-03-11', 'i-a', 1],
    ]);
    const first = byInstance.line_items[0];
    expect(first).toMatchObject({
      gpu_hours: 48,
      idle_gpu_hours: 24,
      idle_usd: 165.12,
      underused_usd: 16.512,
      lifecycle: 'on-demand',
      price_source: 'builtin:aws-ec2-on-demand-linux-2026-11-23',
    });
    expect(first?.gpu_index).toBeUndefined();
    expect(byInstance.line_items[2]).toMatchObject({ region: 'us-east-1', az: 'us-east-1a' });
    expect(byGpu.line_items.map((i) => [i.day, i.instance_id, i.gpu_index])).toEqual([
      ['2026-03-10', 'i-a', 0],
      ['2026-03-10', 'i-a', 1],
      ['2026-03-10', 'i-b', 0],
      ['2026-03-11', 'i-a', 1],
    ]);
    expect(byGpu.line_items[0]).toMatchObject({ namespace: 'ml', gpus: 1 });
    const sum = byGpu.line_items.reduce((s, i) => s + i.wasted_usd, 0);
    expect(sum).toBeCloseTo(
      byInstance.line_items.reduce((s, i) => s + i.wasted_usd, 0),
      9,
    );
  });

  it('throws ReportInputError naming `by` for an unknown grouping', () => {
    // Prepare / Act / Assess
    expect(() =>
      buildWasteReport({
        rows: [],
        groups: {},
        days: [],
        period: PERIOD,
        by: 'project' as never,
        generatedAt: NOW,
      }),
    ).toThrow(ReportInputError);
    expect(REPORT_GROUPINGS).toContain('diagnosis');
  });
});

describe('buildWasteReport for finance', () => {
  it.each([
    [
      'a spot host of a type with a list price',
      'p5.48xlarge',
      /a spot host with no spot price, spot rate or spot_discount for p5\.48xlarge in us-east-1/,
    ],
    ['a type with no list price', 'p5e.48xlarge', /no list price for p5e\.48xlarge in us-east-1/],
  ])('says why an unpriced host is unpriced: %s', (_name, instance_type, reason) => {
    // Prepare
    const rows = [
      gpu({
        instance_id: 'i-u',
        gpu_index: 0,
        instance_type,
        region: 'us-east-1',
        cost_usd: 0,
        price_usd_per_hour: 0,
        price_source: 'unpriced',
        idle_gpu_hours: 5,
      }),
    ];
    // Act
    const report = buildWasteReport({
      rows,
      groups: groupsOf(rows),
      days: [],
      period: PERIOD,
      by: 'team',
      generatedAt: NOW,
    });
    // Assess
    expect(report.unpriced[0]?.reason).toMatch(reason);
    expect(report.unpriced[0]?.idle_gpu_hours).toBe(5);
    expect(report.totals.idle_gpu_hours).toBe(5);
  });

  it('lists the rates used, names each waster’s main cause and fix, and the change against the previous period', () => {
    // Prepare
    const rows = [
      gpu({
        instance_id: 'i-a',
        gpu_index: 0,
        idle_usd: 100,
        wasted_usd: 130,
        underused_usd: 30,
        wasted_by_diagnosis_usd: { idle: 100, tensor_idle: 30 },
      }),
      gpu({
        instance_id: 'i-b',
        gpu_index: 0,
        price_usd_per_hour: 34.68,
        price_source: 'cur',
        underused_usd: 10,
        wasted_usd: 10,
      }),
    ];
    const previous = {
      period: reportPeriod('day', new Date('2026-03-10T00:00:00Z')),
      cost_usd: 300,
      wasted_usd: 100,
    };
    // Act
    const report = buildWasteReport({
      rows,
      groups: groupsOf(rows),
      days: [],
      previous,
      period: PERIOD,
      by: 'team',
      generatedAt: NOW,
    });
    // Assess
    expect(report.rates.map((r) => [r.instance_type, r.price_usd_per_hour, r.price_source])).toEqual([
      ['p5.48xlarge', 55.04, 'builtin:aws-ec2-on-demand-linux-2026-11-23'],
      ['p5.48xlarge', 34.68, 'cur'],
    ]);
    expect(report.top_wasters[0]).toMatchObject({
      instance_id: 'i-a',
      cause: 'idle',
      fix: expect.stringMatching(/Release idle/),
    });
    expect(report.top_wasters[1]).toMatchObject({ instance_id: 'i-b', cause: UNATTRIBUTED });
    expect(report.change).toMatchObject({ wasted_usd: 100, wasted_change_usd: 40, wasted_change_share: 0.4 });
  });
});
