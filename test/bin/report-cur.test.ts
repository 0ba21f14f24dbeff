import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../bin/commands/report';
import { CUR_REQUIRED_COLUMNS, type WasteReport } from '../../lambdas/domain';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../lambdas/rows';

/**
 * `report --cur` over a CUR-shaped fixture generated here with DuckDB `COPY … TO` from the CUR 2.0
 * columns AWS documents (https://docs.aws.amazon.com/cur/latest/userguide/table-dictionary-cur2.html):
 * instance i-0a (p5.48xlarge, on-demand) is Savings-Plan covered from 12:00 to 13:00 on 10 March 2026
 * at an effective $34.68/h, billed nothing the CUR holds from 13:00; i-0b is a Spot instance at $20/h.
 */

const NOW = new Date('2026-03-11T06:00:00Z');
const RANGE = { from: '2026-03-10T00:00:00Z', to: '2026-03-11T00:00:00Z' };
const HOUR = 3600;
const A = 'i-0aaaaaaaaaaaaaaaa';
const B = 'i-0bbbbbbbbbbbbbbbb';

/** One CUR line item: the documented columns, everything else left out. */
interface CurLine {
  resource: string;
  start: string;
  type: string;
  usageType: string;
  amount: number;
  unblended: number;
  savingsPlan?: number;
  reservation?: number;
  term: string;
  /** Hours from start to end: 1 in an hourly export, 24 in a daily one, the month's in a monthly one. @default 1 */
  hours?: number;
}

const LINES: CurLine[] = [
  // Savings Plan covered hour: the effective cost is the plan's, not the unblended on-demand cost
  {
    resource: A,
    start: '2026-03-10 12:00:00',
    type: 'SavingsPlanCoveredUsage',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    amount: 1,
    unblended: 55.04,
    savingsPlan: 34.68,
    term: 'OnDemand',
  },
  // Not instance-hours: the negation of the covered hour, and data transfer on the same resource
  {
    resource: A,
    start: '2026-03-10 12:00:00',
    type: 'SavingsPlanNegation',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    amount: 1,
    unblended: -55.04,
    term: 'OnDemand',
  },
  {
    resource: A,
    start: '2026-03-10 12:00:00',
    type: 'Usage',
    usageType: 'USE1-DataTransfer-Regional-Bytes',
    amount: 120,
    unblended: 1.2,
    term: 'OnDemand',
  },
  {
    resource: B,
    start: '2026-03-10 12:00:00',
    type: 'Usage',
    usageType: 'USE1-SpotUsage:p5.48xlarge',
    amount: 1,
    unblended: 20,
    term: 'Spot',
  },
];

const OTHER_PERIOD: CurLine[] = [
  { ...(LINES[0] as CurLine), resource: 'i-0ccccccccccccccccc', start: '2025-01-05 03:00:00' },
];

/**
 * The same account in a daily export (AWS Data Exports' time granularity "Daily": each line item
 * spans the UTC day, its usage amount the hours used that day): i-0a ran 15 Savings-Plan covered
 * hours on 10 March at the same effective $34.68/h, the Spot i-0b 10 hours at $20/h.
 */
const DAILY: CurLine[] = [
  {
    resource: A,
    start: '2026-03-10 00:00:00',
    hours: 24,
    type: 'SavingsPlanCoveredUsage',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    amount: 15,
    unblended: 15 * 55.04,
    savingsPlan: 15 * 34.68,
    term: 'OnDemand',
  },
  {
    resource: A,
    start: '2026-03-10 00:00:00',
    hours: 24,
    type: 'SavingsPlanNegation',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    amount: 15,
    unblended: -15 * 55.04,
    term: 'OnDemand',
  },
  {
    resource: B,
    start: '2026-03-10 00:00:00',
    hours: 24,
    type: 'Usage',
    usageType: 'USE1-SpotUsage:p5.48xlarge',
    amount: 10,
    unblended: 200,
    term: 'Spot',
  },
];

/** A monthly export (line items span March, 744 h): i-0a 100 covered hours at $30/h, i-0b 50 Spot hours at $18/h. */
const MONTHLY: CurLine[] = [
  {
    resource: A,
    start: '2026-03-01 00:00:00',
    hours: 744,
    type: 'SavingsPlanCoveredUsage',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    amount: 100,
    unblended: 100 * 55.04,
    savingsPlan: 100 * 30,
    term: 'OnDemand',
  },
  {
    resource: B,
    start: '2026-03-01 00:00:00',
    hours: 744,
    type: 'Usage',
    usageType: 'USE1-SpotUsage:p5.48xlarge',
    amount: 50,
    unblended: 50 * 18,
    term: 'Spot',
  },
];

/** The line items as a DuckDB SELECT with the CUR 2.0 column names and types. */
function curSelect(lines: readonly CurLine[], drop: readonly string[] = []): string {
  const row = (l: CurLine) => {
    const cells: Record<string, string> = {
      line_item_resource_id: `'${l.resource}'`,
      line_item_usage_start_date: `TIMESTAMP '${l.start}'`,
      line_item_usage_end_date: `TIMESTAMP '${l.start}' + INTERVAL ${l.hours ?? 1} HOUR`,
      line_item_usage_type: `'${l.usageType}'`,
      line_item_line_item_type: `'${l.type}'`,
      line_item_usage_amount: `${l.amount}::DOUBLE`,
      line_item_unblended_cost: `${l.unblended}::DOUBLE`,
      savings_plan_savings_plan_effective_cost: `${l.savingsPlan ?? 0}::DOUBLE`,
      reservation_effective_cost: `${l.reservation ?? 0}::DOUBLE`,
      pricing_term: `'${l.term}'`,
      line_item_usage_account_id: "'123456789012'",
    };
    return `SELECT ${Object.entries(cells)
      .filter(([c]) => !drop.includes(c))
      .map(([c, v]) => `${v} AS ${c}`)
      .join(', ')}`;
  };
  return lines.map(row).join(' UNION ALL ');
}

describe('gpu-sentinel report --cur', () => {
  let dir: string;
  let db: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-report-cur-'));
    db = join(dir, 'store.duckdb');
    const store = await DuckDbStore.open(db);
    const hourLedger = ledger({ window_s: HOUR, efficiency: 0.4 });
    const idleLedger = {
      ...ledger({ window_s: HOUR, efficiency: 0 }),
      underused_usd: 0,
      idle_usd: hourLedger.cost_usd,
      wasted_usd: hourLedger.cost_usd,
      waste_class: 'idle' as const,
    };
    await store.write({
      gpu: [
        gpuRow({ instance_id: A, time: '2026-03-10T13:00:00.000Z', gpu_index: 0, ledger: hourLedger }),
        gpuRow({ instance_id: A, time: '2026-03-10T13:00:00.000Z', gpu_index: 1, ledger: idleLedger }),
        gpuRow({ instance_id: A, time: '2026-03-10T14:00:00.000Z', gpu_index: 0, ledger: hourLedger }),
        gpuRow({
          instance_id: B,
          time: '2026-03-10T13:00:00.000Z',
          gpu_index: 0,
          ledger: {
            ...hourLedger,
            price_usd_per_hour: 0,
            price_source: 'unpriced',
            cost_usd: 0,
            underused_usd: 0,
            wasted_usd: 0,
          },
        }),
      ],
      efa: [],
      events: [],
    });
    await store.close();
    const duck = await DuckDBInstance.create(':memory:');
    const c = await duck.connect();
    await mkdir(join(dir, 'export', 'data', 'BILLING_PERIOD=2026-03'), { recursive: true });
    await mkdir(join(dir, 'csv'), { recursive: true });
    await c.run(
      `COPY (${curSelect(LINES)}) TO '${join(dir, 'export', 'data', 'BILLING_PERIOD=2026-03', 'cur-00001.snappy.parquet')}' (FORMAT PARQUET)`,
    );
    await c.run(
      `COPY (${curSelect(LINES)}) TO '${join(dir, 'csv', 'cur-00001.csv.gz')}' (FORMAT CSV, HEADER, COMPRESSION GZIP)`,
    );
    await c.run(`COPY (${curSelect(OTHER_PERIOD)}) TO '${join(dir, 'other.parquet')}' (FORMAT PARQUET)`);
    await c.run(`COPY (${curSelect(DAILY)}) TO '${join(dir, 'daily.parquet')}' (FORMAT PARQUET)`);
    await c.run(`COPY (${curSelect(MONTHLY)}) TO '${join(dir, 'monthly.parquet')}' (FORMAT PARQUET)`);
    // One folder holding the hourly and the daily export of the same account
    await mkdir(join(dir, 'mixed'), { recursive: true });
    await c.run(`COPY (${curSelect(LINES)}) TO '${join(dir, 'mixed', 'hourly.parquet')}' (FORMAT PARQUET)`);
    await c.run(`COPY (${curSelect(DAILY)}) TO '${join(dir, 'mixed', 'daily.parquet')}' (FORMAT PARQUET)`);
    await c.run(
      `COPY (${curSelect(LINES, ['pricing_term'])}) TO '${join(dir, 'no-term.parquet')}' (FORMAT PARQUET)`,
    );
    c.closeSync();
    duck.closeSync();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function report(cur: string, by: WasteReport['by'] = 'gpu'): Promise<WasteReport> {
    let out = '';
    await runReportCommand(
      { db, cur, by, format: 'json', ...RANGE },
      (s) => {
        out += s;
      },
      NOW,
    );
    return JSON.parse(out) as WasteReport;
  }

  it.each([
    ['a Parquet export folder', 'export'],
    ['a gzip CSV', join('csv', 'cur-00001.csv.gz')],
  ])(
    'prices a Savings-Plan covered hour at its effective cost from %s, and says cur',
    async (_name, path) => {
      // Prepare / Act
      const r = await report(join(dir, path));

      // Assess: GPU 0 of i-0a worked at 40 % from 12:00 to 13:00 (CUR) and from 13:00 to 14:00 (list)
      const a0 = r.line_items.find((i) => i.instance_id === A && i.gpu_index === 0);
      expect(a0?.cost_usd).toBeCloseTo(34.68 / 8 + 55.04 / 8, 9);
      expect(a0?.underused_usd).toBeCloseTo((34.68 / 8) * 0.6 + (55.04 / 8) * 0.6, 9);
      const a1 = r.line_items.find((i) => i.instance_id === A && i.gpu_index === 1);
      expect(a1).toMatchObject({ price_source: 'cur', price_usd_per_hour: 34.68, lifecycle: 'on-demand' });
      expect(a1?.idle_usd).toBeCloseTo(34.68 / 8, 9);
      expect(a1?.wasted_usd).toBeCloseTo(34.68 / 8, 9);
      // The spot host nobody priced is priced from its Spot line item
      const b0 = r.line_items.find((i) => i.instance_id === B);
      expect(b0).toMatchObject({ price_source: 'cur:spot', lifecycle: 'spot', price_usd_per_hour: 20 });
      expect(b0?.cost_usd).toBeCloseTo(20 / 8, 9);
      expect(r.unpriced).toEqual([]);
      expect(r.prices.map((p) => p.source).sort()).toEqual(['builtin:aws-2025-06', 'cur', 'cur:spot']);
      expect(r.cur).toMatchObject({ instance_hours: 3, covered_instance_hours: 2 });
      expect(r.method.caveats.join(' ')).toMatch(/priced 2 of 3 instance-hours .* keep their list price/);
    },
  );

  it.each([
    ['a daily export (each line item spans the day)', 'daily.parquet', 34.68, 20],
    ['a monthly export (each line item spans March)', 'monthly.parquet', 30, 18],
    ['a folder holding the hourly and the daily export of one account', 'mixed', 34.68, 20],
  ])('prices every hour of %s at its line items’ cost over their usage hours', async (_name, path, a, b) => {
    // Prepare / Act
    const r = await report(join(dir, path));

    // Assess: both hours of i-0a (12:00 and 13:00) at the span's rate, not only the span's first hour
    const a0 = r.line_items.find((i) => i.instance_id === A && i.gpu_index === 0);
    expect(a0).toMatchObject({ price_source: 'cur' });
    expect(a0?.cost_usd).toBeCloseTo((2 * a) / 8, 9);
    expect(a0?.underused_usd).toBeCloseTo(((2 * a) / 8) * 0.6, 9);
    const a1 = r.line_items.find((i) => i.instance_id === A && i.gpu_index === 1);
    expect(a1).toMatchObject({ price_source: 'cur', price_usd_per_hour: a });
    const b0 = r.line_items.find((i) => i.instance_id === B);
    expect(b0).toMatchObject({ price_source: 'cur:spot', price_usd_per_hour: b });
    expect(r.cur).toMatchObject({ instance_hours: 3, covered_instance_hours: 3 });
    // Each window once: two exports of one hour price it once (their blend), never twice
    expect(r.totals.cost_usd).toBeCloseTo((2 * a) / 8 + a / 8 + b / 8, 9);
  });

  it('reprices the grouped sums too: team totals reconcile with the line items', async () => {
    // Prepare / Act
    const byTeam = await report(join(dir, 'export'), 'team');
    const byGpu = await report(join(dir, 'export'), 'gpu');
    // Assess
    const teams = byTeam.groups.reduce((s, g) => s + g.cost_usd, 0);
    const items = byGpu.line_items.reduce((s, i) => s + i.cost_usd, 0);
    expect(teams).toBeCloseTo(items, 9);
    expect(byTeam.totals.cost_usd).toBeCloseTo(2 * (34.68 / 8) + 55.04 / 8 + 20 / 8, 9);
  });

  it('says how many hours a CUR of another period covered: none, and when its hours are', async () => {
    // Prepare / Act
    const r = await report(join(dir, 'other.parquet'));
    // Assess
    expect(r.cur).toMatchObject({
      instance_hours: 3,
      covered_instance_hours: 0,
      usage_from: '2025-01-05T03:00:00.000Z',
      usage_to: '2025-01-05T03:00:00.000Z',
    });
    expect(r.method.caveats.join(' ')).toMatch(
      /priced 0 of 3 .* from 2025-01-05T03:00:00.000Z .* another account or period/,
    );
    expect(r.line_items.every((i) => !i.price_source.startsWith('cur'))).toBe(true);
  });

  it.each([
    ['a CUR without pricing_term', 'no-term.parquet', /column pricing_term, and .*no-term\.parquet lacks it/],
    ['a path that does not exist', 'nowhere', /--cur to name a CUR file or folder, got .*nowhere/],
    ['a folder with no CUR file', 'csv-none', /\.parquet, \.csv or \.csv\.gz files/],
  ])('refuses %s, naming it', async (_name, path, message) => {
    // Prepare
    if (path === 'csv-none') await mkdir(join(dir, path), { recursive: true });
    // Act / Assess
    await expect(report(join(dir, path))).rejects.toThrow(message);
  });

  it('reads only the documented columns it needs', () => {
    // Prepare / Act / Assess: the fixture's extra column is never required
    expect(CUR_REQUIRED_COLUMNS).not.toContain('line_item_usage_account_id');
    expect(CUR_REQUIRED_COLUMNS).toContain('line_item_usage_start_date');
  });
});
