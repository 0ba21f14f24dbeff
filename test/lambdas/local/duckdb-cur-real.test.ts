import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { curRatesSql, curSpanSql } from '../../../lambdas/adapters/cur-sql';
import {
  CUR_OPTIONAL_COLUMNS,
  type CurColumn,
  curColumnName,
  ReportInputError,
  resolveCurColumns,
} from '../../../lambdas/domain';
import { curLineItems, curRelation } from '../../../lambdas/local/duckdb-cur';
import { DuckDbSession } from '../../../lambdas/local/duckdb-session';

/**
 * The CUR readers on real Cost and Usage Report column sets (test/fixtures/real/cur/README.md says
 * where each comes from): four legacy CUR manifests of one account from August 2017 to December
 * 2019 (columns appear as the account gets reservations, an EDP discount, a Savings Plan), the
 * CUR 2.0 table of AWS's Cloud Intelligence Dashboards (map columns `product`, `resource_tags`), and
 * a real legacy DiscountedUsage line item.
 */

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'real', 'cur');

/** A legacy CUR manifest's columns as its CSV header writes them: `category/name`. */
function legacyHeader(manifest: string): string[] {
  const m = JSON.parse(readFileSync(join(FIXTURES, manifest), 'utf8')) as {
    columns: { category: string; name: string }[];
  };
  return m.columns.map((c) => `${c.category}/${c.name}`);
}

/** The CUR 2.0 table's columns and Athena types, from the CID data export template. */
function cur2Columns(): { name: string; type: string }[] {
  const text = readFileSync(join(FIXTURES, 'cur2-data-export-columns.yaml'), 'utf8');
  return [...text.matchAll(/\{"Name": "([a-z0-9_]+)", "Type": "([^"]+)" \}/g)].map((m) => ({
    name: m[1] as string,
    type: m[2] as string,
  }));
}

const MANIFESTS = {
  'legacy-2017-08-manifest.json': [],
  'legacy-2018-01-manifest.json': ['reservation_effective_cost'],
  'legacy-2019-01-manifest.json': [
    'reservation_effective_cost',
    'line_item_net_unblended_cost',
    'reservation_net_effective_cost',
  ],
  'legacy-2019-12-manifest.json': [...CUR_OPTIONAL_COLUMNS],
} as const satisfies Record<string, readonly CurColumn[]>;

describe('resolveCurColumns on real CUR column sets', () => {
  it.each(Object.entries(MANIFESTS))(
    'accepts the legacy CSV header of %s, finding the optional columns it has',
    (manifest, optional) => {
      // Prepare
      const header = legacyHeader(manifest);

      // Act
      const columns = resolveCurColumns(header, manifest);

      // Assess: the CSV's own names, and only the optional columns the account had then
      expect(columns.line_item_resource_id).toBe('lineItem/ResourceId');
      expect(columns.line_item_usage_start_date).toBe('lineItem/UsageStartDate');
      expect(columns.pricing_term).toBe('pricing/term');
      expect(CUR_OPTIONAL_COLUMNS.filter((c) => columns[c] !== undefined)).toEqual(
        CUR_OPTIONAL_COLUMNS.filter((c) => (optional as readonly string[]).includes(c)),
      );
    },
  );

  it('accepts the CUR 2.0 table with every optional column', () => {
    // Prepare
    const names = cur2Columns().map((c) => c.name);

    // Act
    const columns = resolveCurColumns(names, 'cur2');

    // Assess
    expect(names).toHaveLength(87);
    expect(CUR_OPTIONAL_COLUMNS.every((c) => columns[c] === c)).toBe(true);
  });

  it('names a legacy column as the CUR 2.0 table does (the Athena rule, capitals split)', () => {
    // Prepare
    const cur2 = new Set(cur2Columns().map((c) => c.name));
    const legacy = legacyHeader('legacy-2019-12-manifest.json');

    // Act
    const shared = legacy.filter((h) => cur2.has(curColumnName(h)));

    // Assess: every line item, reservation and Savings Plan cost column finds its CUR 2.0 name
    expect(curColumnName('reservation/ReservationARN')).toBe('reservation_reservation_a_r_n');
    expect(curColumnName('savingsPlan/NetSavingsPlanEffectiveCost')).toBe(
      'savings_plan_net_savings_plan_effective_cost',
    );
    expect(shared).toEqual(
      expect.arrayContaining([
        'lineItem/NetUnblendedCost',
        'reservation/NetEffectiveCost',
        'reservation/ReservationARN',
        'savingsPlan/SavingsPlanEffectiveCost',
        'savingsPlan/SavingsPlanARN',
        'pricing/term',
      ]),
    );
    expect(shared.length).toBeGreaterThan(60);
  });

  it.each([
    ['a legacy CUR made without resource IDs', legacyHeader('legacy-2019-12-manifest.json')],
    ['a CUR 2.0 export without resource IDs', cur2Columns().map((c) => c.name)],
  ])('refuses %s, naming the column and the export setting', (_what, all) => {
    // Prepare
    const header = all.filter((c) => curColumnName(c) !== 'line_item_resource_id');

    // Act
    let error: unknown;
    try {
      resolveCurColumns(header, 'cur.csv');
    } catch (e) {
      error = e;
    }

    // Assess
    expect(error).toBeInstanceOf(ReportInputError);
    expect(error).toMatchObject({ field: 'line_item_resource_id' });
    expect((error as Error).message).toMatch(/line_item_resource_id, and cur\.csv lacks it .*resource IDs/);
  });
});

/** One line item, by legacy CSV column (`lineItem/…`); a column left out is empty. */
type Line = Readonly<Record<string, string>>;

/** A p4d.24xlarge hour of four instances, and the account's other lines of that hour. */
const HOUR = '2019-12-10T12:00:00Z';
const END = '2019-12-10T13:00:00Z';
const P4D = 'USE1-BoxUsage:p4d.24xlarge';
const base = (id: string, type: string, usageType: string, amount: string, cost: string): Line => ({
  'lineItem/ResourceId': id,
  'lineItem/LineItemType': type,
  'lineItem/UsageStartDate': HOUR,
  'lineItem/UsageEndDate': END,
  'lineItem/UsageType': usageType,
  'lineItem/UsageAmount': amount,
  'lineItem/UnblendedCost': cost,
  'pricing/term': type === 'DiscountedUsage' ? 'Reserved' : 'OnDemand',
});
const LINES: Line[] = [
  // i-0a: on-demand under an EDP discount: the net cost is the bill's; the discount's own line item
  // (per account and product, no resource) and the tax are not the instance's hour
  { ...base('i-0aaaaaaaaaaaaaaaa', 'Usage', P4D, '1.0', '32.7726'), 'lineItem/NetUnblendedCost': '31.13397' },
  { ...base('', 'EdpDiscount', P4D, '0', '-1.63863'), 'pricing/term': '' },
  { ...base('', 'Tax', '', '1', '2.95'), 'pricing/term': '' },
  // i-0b: Savings Plan covered: the plan's net effective cost; the negation cancels the on-demand cost
  {
    ...base('i-0bbbbbbbbbbbbbbbb', 'SavingsPlanCoveredUsage', P4D, '1.0', '32.7726'),
    'savingsPlan/SavingsPlanEffectiveCost': '20.0',
    'savingsPlan/NetSavingsPlanEffectiveCost': '19.0',
  },
  { ...base('i-0bbbbbbbbbbbbbbbb', 'SavingsPlanNegation', P4D, '1.0', '-32.7726') },
  {
    ...base('arn:aws:savingsplans::123456789012:savingsplan/sp-1', 'SavingsPlanRecurringFee', '', '1', '50'),
    'pricing/term': '',
  },
  // i-0c: reserved: the reservation's net effective cost; the RI fee is the reservation's, not the hour's
  {
    ...base('i-0cccccccccccccccc', 'DiscountedUsage', P4D, '1.0', '0'),
    'reservation/EffectiveCost': '21.0',
    'reservation/NetEffectiveCost': '19.95',
  },
  {
    ...base(
      'arn:aws:ec2:us-east-1:123456789012:reserved-instances/ri-1',
      'RIFee',
      'USE1-HeavyUsage:p4d.24xlarge',
      '744',
      '15624',
    ),
  },
  // i-0d: Spot, its pricing term empty as a legacy CUR writes it; no net: the gross
  {
    ...base('i-0dddddddddddddddd', 'Usage', 'USE1-SpotUsage:p4d.24xlarge', '1.0', '9.8318'),
    'pricing/term': '',
  },
  // i-0e: half an hour on demand, a net of 0 beside a gross (no discount), and a credit and a refund
  { ...base('i-0eeeeeeeeeeeeeeee', 'Usage', P4D, '0.5', '16.3863'), 'lineItem/NetUnblendedCost': '0' },
  { ...base('i-0eeeeeeeeeeeeeeee', 'Credit', P4D, '0', '-16.3863'), 'pricing/term': '' },
  { ...base('i-0eeeeeeeeeeeeeeee', 'Refund', P4D, '0', '-1.0'), 'pricing/term': '' },
];

/** What each instance's hour costs on the bill, USD per instance-hour, and whether it is Spot. */
const EXPECTED = [
  { instance_id: 'i-0aaaaaaaaaaaaaaaa', usd_per_hour: 31.13397, spot: false },
  { instance_id: 'i-0bbbbbbbbbbbbbbbb', usd_per_hour: 19.0, spot: false },
  { instance_id: 'i-0cccccccccccccccc', usd_per_hour: 19.95, spot: false },
  { instance_id: 'i-0dddddddddddddddd', usd_per_hour: 9.8318, spot: true },
  { instance_id: 'i-0eeeeeeeeeeeeeeee', usd_per_hour: 32.7726, spot: false },
];
const IDS = EXPECTED.map((e) => e.instance_id);
const RANGE = { from: new Date('2019-12-10T00:00:00Z'), to: new Date('2019-12-11T00:00:00Z') };

function csvCell(value: string): string {
  return /[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

describe('the CUR SQL on real CUR layouts (DuckDB)', () => {
  let dir: string;
  let session: DuckDbSession;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-cur-real-'));
    session = await DuckDbSession.open(':memory:');
    // The lines under the real December 2019 legacy CSV header (275 columns)
    const header = legacyHeader('legacy-2019-12-manifest.json');
    const rows = LINES.map((l) => header.map((h) => csvCell(l[h] ?? '')).join(','));
    writeFileSync(join(dir, 'legacy-2019-12.csv'), `${[header.join(','), ...rows].join('\n')}\n`);
    // The same lines in a CUR 2.0 Parquet file with every column of the CUR 2.0 table, maps included
    const columns = cur2Columns();
    const duckType = (t: string) =>
      t === 'double'
        ? 'DOUBLE'
        : t === 'timestamp'
          ? 'TIMESTAMP'
          : t.startsWith('map')
            ? 'MAP(VARCHAR, VARCHAR)'
            : 'VARCHAR';
    await session.exec(
      `CREATE TEMP TABLE cur2 (${columns.map((c) => `${c.name} ${duckType(c.type)}`).join(', ')})`,
    );
    for (const l of LINES) {
      const cells: Record<string, string> = {
        product: "MAP {'instance_type': 'p4d.24xlarge', 'region': 'us-east-1'}",
        resource_tags: "MAP {'user_team': 'vision'}",
      };
      for (const [h, v] of Object.entries(l)) {
        const name = curColumnName(h);
        const column = columns.find((c) => c.name === name);
        if (column === undefined || v === '') continue;
        cells[name] =
          column.type === 'double'
            ? `${Number(v)}`
            : column.type === 'timestamp'
              ? `TIMESTAMP '${v.replace('T', ' ').replace('Z', '')}'`
              : `'${v}'`;
      }
      await session.exec(
        `INSERT INTO cur2 (${Object.keys(cells).join(', ')}) VALUES (${Object.values(cells).join(', ')})`,
      );
    }
    await session.exec(`COPY cur2 TO '${join(dir, 'cur2.parquet')}' (FORMAT PARQUET)`);
    // The real August 2017 DiscountedUsage line, before the CUR had reservation_effective_cost
    writeFileSync(
      join(dir, 'legacy-2017-08.csv'),
      readFileSync(join(FIXTURES, 'legacy-2017-08-discounted-usage.csv')),
    );
  });

  afterAll(async () => {
    await session.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function rates(file: string, range = RANGE, ids = IDS) {
    const path = join(dir, file);
    const cur = await curLineItems(session, await curRelation(path), path);
    const rows = await session.rows(`${curRatesSql(cur, range, ids)} ORDER BY instance_id`);
    return rows.map((r) => ({
      instance_id: String(r.instance_id),
      usd_per_hour: Number(r.usd_per_hour),
      spot: r.pricing_term === 'Spot',
    }));
  }

  it.each([
    ['a legacy CSV (slash headers, times with Z, empty columns)', 'legacy-2019-12.csv'],
    ['a CUR 2.0 Parquet file (map columns)', 'cur2.parquet'],
  ])('prices each instance-hour as the bill does from %s', async (_what, file) => {
    // Prepare / Act
    const got = await rates(file);

    // Assess
    expect(got.map((g) => g.instance_id)).toEqual(IDS);
    for (const [i, e] of EXPECTED.entries()) {
      expect(got[i]?.usd_per_hour).toBeCloseTo(e.usd_per_hour, 9);
      expect(got[i]?.spot).toBe(e.spot);
    }
  });

  it('gives a reserved hour no rate when the CUR has no reservation_effective_cost, never $0', async () => {
    // Prepare: the real 2017 line item bills the reserved hour 0.0 unblended
    const range = { from: new Date('2017-08-01T00:00:00Z'), to: new Date('2017-08-02T00:00:00Z') };

    // Act
    const got = await rates('legacy-2017-08.csv', range, ['i-02345901991a472d6']);
    const path = join(dir, 'legacy-2017-08.csv');
    const [span] = await session.rows(curSpanSql(await curLineItems(session, await curRelation(path), path)));

    // Assess: no rate, though the CUR holds the hour
    expect(got).toEqual([]);
    expect(String(span?.usage_from)).toMatch(/^2017-08-01[ T]00:00:00/);
  });
});
