import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AthenaClient, StartQueryExecutionCommand } from '@aws-sdk/client-athena';
import { FirehoseClient } from '@aws-sdk/client-firehose';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AthenaCurReads, curTableRef } from '../../../lambdas/adapters/athena-cur-reads';
import { AthenaStore } from '../../../lambdas/adapters/athena-store';
import { ReportInputError } from '../../../lambdas/domain';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../rows';
import { FAKE_STREAMS } from './athena-fake';
import { answerAthenaFromDuckDb, attachStoreAsGlue } from './athena-on-duckdb';
import { expectValidAwsInputs } from './aws-model';

/**
 * The report Lambda's CUR reads run on DuckDB as Athena would run them: the Glue tables
 * `"gpu_sentinel"."gpu_windows"` (with its `datehour` partition column) and `"cur"."cur_export"` (a
 * CUR 2.0 Parquet generated here from AWS's documented columns) are DuckDB catalogs of the same
 * names, so the very SQL text the adapter sends is what runs; every Athena input is checked
 * against AWS's model.
 */

const A = 'i-0aaaaaaaaaaaaaaaa';
const RANGE = { from: new Date('2026-03-10T00:00:00Z'), to: new Date('2026-03-11T00:00:00Z') };

const athenaMock = mockClient(AthenaClient);

describe('AthenaCurReads', () => {
  let dir: string;
  let duck: DuckDBInstance;
  let db: DuckDBConnection;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gs-athena-cur-'));
    const storePath = join(dir, 'store.duckdb');
    const store = await DuckDbStore.open(storePath);
    const hour = ledger({ window_s: 3600, efficiency: 0.4 });
    await store.write({
      gpu: [
        gpuRow({ instance_id: A, time: '2026-03-10T13:00:00.000Z', gpu_index: 0, ledger: hour }),
        gpuRow({ instance_id: A, time: '2026-03-10T14:00:00.000Z', gpu_index: 0, ledger: hour }),
      ],
      efa: [],
      events: [],
    });
    await store.close();
    duck = await DuckDBInstance.create(':memory:');
    db = await duck.connect();
    await attachStoreAsGlue(db, storePath);
    const cur = join(dir, 'cur.parquet');
    await db.run(
      `COPY (SELECT '${A}' AS line_item_resource_id, TIMESTAMP '2026-03-10 12:00:00' AS line_item_usage_start_date,
        TIMESTAMP '2026-03-10 13:00:00' AS line_item_usage_end_date, 'USE1-BoxUsage:p5.48xlarge' AS line_item_usage_type,
        'SavingsPlanCoveredUsage' AS line_item_line_item_type, 1.0::DOUBLE AS line_item_usage_amount,
        55.04::DOUBLE AS line_item_unblended_cost, 34.68::DOUBLE AS savings_plan_savings_plan_effective_cost,
        0.0::DOUBLE AS reservation_effective_cost, 'OnDemand' AS pricing_term) TO '${cur}' (FORMAT PARQUET)`,
    );
    // The same account in a daily export: one line item spans the day, 15 covered hours at $34.68
    const daily = join(dir, 'cur-daily.parquet');
    await db.run(
      `COPY (SELECT '${A}' AS line_item_resource_id, TIMESTAMP '2026-03-10 00:00:00' AS line_item_usage_start_date,
        TIMESTAMP '2026-03-11 00:00:00' AS line_item_usage_end_date, 'USE1-BoxUsage:p5.48xlarge' AS line_item_usage_type,
        'SavingsPlanCoveredUsage' AS line_item_line_item_type, 15.0::DOUBLE AS line_item_usage_amount,
        ${15 * 55.04}::DOUBLE AS line_item_unblended_cost, ${15 * 34.68}::DOUBLE AS savings_plan_savings_plan_effective_cost,
        0.0::DOUBLE AS reservation_effective_cost, 'OnDemand' AS pricing_term) TO '${daily}' (FORMAT PARQUET)`,
    );
    await db.run("ATTACH ':memory:' AS cur");
    await db.run(`CREATE VIEW cur.cur_export AS SELECT * FROM read_parquet('${cur}')`);
    await db.run(`CREATE VIEW cur.cur_daily AS SELECT * FROM read_parquet('${daily}')`);
    await db.run(`CREATE VIEW cur.not_a_cur AS SELECT line_item_resource_id FROM read_parquet('${cur}')`);

    answerAthenaFromDuckDb(athenaMock, db);
  });

  afterAll(async () => {
    expectValidAwsInputs(athenaMock, 'athena');
    athenaMock.restore();
    db.closeSync();
    duck.closeSync();
    await rm(dir, { recursive: true, force: true });
  });

  function reads(curTable = curTableRef('cur', 'cur_export')): AthenaCurReads {
    const store = new AthenaStore({
      firehose: new FirehoseClient({ region: 'us-east-1' }),
      athena: new AthenaClient({ region: 'us-east-1' }),
      streams: FAKE_STREAMS,
      workGroup: 'gpu-sentinel',
      sleep: async () => {},
    });
    return new AthenaCurReads({ query: (sql) => store.query(sql), curTable });
  }

  it('prices the Savings-Plan covered hour at its effective cost, the other hour at its stored price', async () => {
    // Prepare / Act
    const [row] = await reads().queryWaste(RANGE);
    // Assess
    expect(row?.cost_usd).toBeCloseTo(34.68 / 8 + 55.04 / 8, 9);
    expect(row?.underused_usd).toBeCloseTo(0.6 * (34.68 / 8 + 55.04 / 8), 9);
    expect(row?.price_source).toBe('builtin:aws-2025-06');
  });

  it('prices every hour a daily export’s line item spans, not only its first', async () => {
    // Prepare / Act
    const [row] = await reads(curTableRef('cur', 'cur_daily')).queryWaste(RANGE);
    const coverage = await reads(curTableRef('cur', 'cur_daily')).coverage(RANGE);
    // Assess: both hours (12:00 and 13:00) at the day's $34.68
    expect(row?.cost_usd).toBeCloseTo((2 * 34.68) / 8, 9);
    expect(coverage).toMatchObject({ instance_hours: 2, covered_instance_hours: 2 });
  });

  it('prices the grouped sums the same way', async () => {
    // Prepare / Act
    const groups = await reads().queryWasteBy({ ...RANGE, by: 'team' });
    // Assess
    expect(groups.map((g) => g.group)).toEqual(['vision']);
    expect(groups[0]?.cost_usd).toBeCloseTo(34.68 / 8 + 55.04 / 8, 9);
  });

  it('says how many instance-hours the CUR covered and when its hours are', async () => {
    // Prepare / Act
    const coverage = await reads().coverage(RANGE);
    // Assess
    expect(coverage).toEqual({
      source: '"cur"."cur_export"',
      instance_hours: 2,
      covered_instance_hours: 1,
      usage_from: '2026-03-10T12:00:00.000Z',
      usage_to: '2026-03-10T12:00:00.000Z',
    });
  });

  it('sends SQL that names only the CUR columns it needs and filters the hours', async () => {
    // Prepare
    athenaMock.resetHistory();
    // Act
    await reads().queryWaste(RANGE);
    // Assess
    const sqls = athenaMock
      .commandCalls(StartQueryExecutionCommand)
      .map((c) => c.args[0].input.QueryString ?? '');
    const [sql] = sqls.filter((q) => !q.endsWith('LIMIT 0'));
    expect(sql).toContain('FROM "cur"."cur_export"');
    expect(sql).toContain("line_item_usage_end_date > TIMESTAMP '2026-03-09 23:00:00.000'");
    expect(sql).toContain("line_item_usage_start_date >= TIMESTAMP '2026-02-06 23:00:00.000'");
    expect(sql).not.toMatch(/SELECT \* FROM "cur"/);
    // The only query naming every column reads the table's columns and scans no data
    expect(sqls.filter((q) => /SELECT \* FROM "cur"/.test(q))).toEqual([
      'SELECT * FROM "cur"."cur_export" LIMIT 0',
    ]);
  });

  it('refuses a CUR table missing a column, naming it', async () => {
    // Prepare / Act / Assess
    const check = reads(curTableRef('cur', 'not_a_cur')).checkColumns();
    await expect(check).rejects.toBeInstanceOf(ReportInputError);
    await expect(reads(curTableRef('cur', 'not_a_cur')).checkColumns()).rejects.toThrow(
      /line_item_usage_start_date, .*pricing_term/,
    );
    await expect(reads().checkColumns()).resolves.toBeUndefined();
  });

  it.each([
    ['CUR', 'cur_export', /curDatabase/],
    ['cur', 'cur-export; DROP', /curTable/],
  ])('refuses the table name %s.%s', (database, table, message) => {
    // Prepare / Act / Assess
    expect(() => curTableRef(database, table)).toThrow(message);
  });
});
