import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AthenaClient } from '@aws-sdk/client-athena';
import { FirehoseClient } from '@aws-sdk/client-firehose';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AthenaCurReads, curTableRef } from '../../../lambdas/adapters/athena-cur-reads';
import { AthenaStore } from '../../../lambdas/adapters/athena-store';
import { billingPeriodFilterSql } from '../../../lambdas/adapters/cur-sql';
import { evaluateFleet } from '../../../lambdas/app/evaluate-fleet';
import {
  DEFAULT_RULE_CONTEXT,
  FLEET_CUR_LOOKBACK_S,
  StoreQueryError,
  teamPriceEvidence,
} from '../../../lambdas/domain';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { MemoryStateStore } from '../../chaos/memory-state-store';
import { running } from '../domain/fleet/fleet-fixtures';
import { RecordingAlertSink, recordingLog } from '../handlers/fakes';
import { gpuRow, ledger, P5_PRICE_USD_PER_HOUR } from '../rows';
import { FAKE_STREAMS } from './athena-fake';
import { answerAthenaFromDuckDb, attachStoreAsGlue } from './athena-on-duckdb';
import { expectValidAwsInputs } from './aws-model';

/**
 * The fleet evaluator's CUR read (`AthenaCurReads.teamWasteAtCurRates`) runs on DuckDB as Athena
 * would run it: the Glue tables `"gpu_sentinel"."gpu_windows"` (with its `datehour` partition
 * column) and `"cur"."cur_export"` are DuckDB catalogs of the same names, so the very SQL text the
 * adapter sends is what runs; every Athena input is checked against AWS's botocore model.
 *
 * The CUR is a Parquet file generated here with DuckDB `COPY … TO` from the CUR 2.0 columns AWS
 * documents (https://docs.aws.amazon.com/cur/latest/userguide/table-dictionary-cur2.html; line item
 * types and the effective-cost column of each: table-dictionary-cur2-line-item.html,
 * table-dictionary-cur2-savings-plan.html). It is judged at 06:00 on 11 March 2026, so the span is
 * 05:00–06:00 and the CUR, a day behind, has nothing of it:
 * - i-0a (team vision, p5.48xlarge): on-demand at 20:00 on 10 March, Savings-Plan covered at 21:00
 *   (effective $34.68/h; the plan's negation line and data transfer are not instance-hours);
 * - i-0c (team vision): a Spot hour at 19:00 at $20/h;
 * - i-0b (team nlp): a billed hour on 7 March only, before the 3-day look-back: stored list price;
 * - i-0d (team nlp): no CUR line, stored at a configured override rate.
 */

const NOW = new Date('2026-03-11T06:00:00Z');
const SPAN = {
  from: new Date('2026-03-11T05:00:00Z'),
  to: NOW,
  curFrom: new Date(NOW.getTime() - FLEET_CUR_LOOKBACK_S * 1000),
};
const A = 'i-0aaaaaaaaaaaaaaaa';
const B = 'i-0bbbbbbbbbbbbbbbb';
const C = 'i-0cccccccccccccccc';
const D = 'i-0dddddddddddddddd';
/** A 10-minute window: 1/6 GPU-hour. */
const TEN_MIN = ledger({ window_s: 600, efficiency: 0.4 });
const SIXTH = 1 / 6;

interface CurLine {
  resource: string;
  start: string;
  type: string;
  usageType: string;
  unblended: number;
  savingsPlan?: number;
  term: string;
}

const LINES: CurLine[] = [
  {
    resource: A,
    start: '2026-03-10 20:00:00',
    type: 'Usage',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    unblended: 55.04,
    term: 'OnDemand',
  },
  {
    resource: A,
    start: '2026-03-10 21:00:00',
    type: 'SavingsPlanCoveredUsage',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    unblended: 55.04,
    savingsPlan: 34.68,
    term: 'OnDemand',
  },
  {
    resource: A,
    start: '2026-03-10 21:00:00',
    type: 'SavingsPlanNegation',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    unblended: -55.04,
    term: 'OnDemand',
  },
  {
    resource: A,
    start: '2026-03-10 22:00:00',
    type: 'Usage',
    usageType: 'USE1-DataTransfer-Regional-Bytes',
    unblended: 1.2,
    term: 'OnDemand',
  },
  {
    resource: C,
    start: '2026-03-10 19:00:00',
    type: 'Usage',
    usageType: 'USE1-SpotUsage:p5.48xlarge',
    unblended: 20,
    term: 'Spot',
  },
  {
    resource: B,
    start: '2026-03-07 12:00:00',
    type: 'Usage',
    usageType: 'USE1-BoxUsage:p5.48xlarge',
    unblended: 1,
    term: 'OnDemand',
  },
];

const athenaMock = mockClient(AthenaClient);

describe('AthenaCurReads.teamWasteAtCurRates (fleet evaluator)', () => {
  let dir: string;
  let duck: DuckDBInstance;
  let db: DuckDBConnection;
  let sent: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gs-athena-cur-fleet-'));
    const storePath = join(dir, 'store.duckdb');
    const store = await DuckDbStore.open(storePath);
    const at = (instance_id: string, team: string, gpu_index: number, time = '2026-03-11T05:30:00.000Z') =>
      gpuRow({ instance_id, team, gpu_index, time, ledger: TEN_MIN });
    const override = ledger({
      window_s: 600,
      efficiency: 0.4,
      price_usd_per_hour: 40,
      price_source: 'override',
    });
    await store.write({
      gpu: [
        at(A, 'vision', 0),
        at(A, 'vision', 1),
        at(A, 'vision', 0, '2026-03-11T04:30:00.000Z'), // before the span
        at(C, 'vision', 0),
        at(B, 'nlp', 0),
        {
          ...at(D, 'nlp', 0),
          ledger: {
            ...override,
            cost_usd: (40 / 8) * SIXTH,
            underused_usd: (40 / 8) * SIXTH * 0.6,
            wasted_usd: (40 / 8) * SIXTH * 0.6,
          },
        },
      ],
      efa: [],
      events: [],
    });
    await store.close();
    duck = await DuckDBInstance.create(':memory:');
    db = await duck.connect();
    await attachStoreAsGlue(db, storePath);
    const cur = join(dir, 'cur.parquet');
    const values = LINES.map(
      (l) =>
        `('${l.resource}', TIMESTAMP '${l.start}', TIMESTAMP '${l.start}' + INTERVAL 1 HOUR, '${l.usageType}', '${l.type}', 1.0, ${l.unblended}, ${l.savingsPlan ?? 0}, 0.0, '${l.term}', 'Amazon Elastic Compute Cloud')`,
    ).join(',\n');
    await db.run(
      `COPY (SELECT * FROM (VALUES ${values}) AS t(line_item_resource_id, line_item_usage_start_date, line_item_usage_end_date,
        line_item_usage_type, line_item_line_item_type, line_item_usage_amount, line_item_unblended_cost,
        savings_plan_savings_plan_effective_cost, reservation_effective_cost, pricing_term, product_product_name))
        TO '${cur}' (FORMAT PARQUET)`,
    );
    await db.run("ATTACH ':memory:' AS cur");
    await db.run(`CREATE VIEW cur.cur_export AS SELECT * FROM read_parquet('${cur}')`);
    await db.run(
      `CREATE VIEW cur.cur_partitioned AS SELECT *, strftime(line_item_usage_start_date, '%Y-%m') AS billing_period FROM read_parquet('${cur}')`,
    );
    await db.run(
      `CREATE VIEW cur.no_pricing_term AS SELECT * EXCLUDE (pricing_term) FROM read_parquet('${cur}')`,
    );

    sent = answerAthenaFromDuckDb(athenaMock, db);
  });

  afterAll(async () => {
    expectValidAwsInputs(athenaMock, 'athena');
    athenaMock.restore();
    db.closeSync();
    duck.closeSync();
    await rm(dir, { recursive: true, force: true });
  });

  function athenaStore(): AthenaStore {
    return new AthenaStore({
      firehose: new FirehoseClient({ region: 'us-east-1' }),
      athena: new AthenaClient({ region: 'us-east-1' }),
      streams: FAKE_STREAMS,
      workGroup: 'gpu-sentinel',
      sleep: async () => {},
    });
  }

  function reads(curTable = curTableRef('cur', 'cur_export')): AthenaCurReads {
    const store = athenaStore();
    return new AthenaCurReads({ query: (sql) => store.query(sql), curTable });
  }

  it('keeps the evaluator at three Athena queries a run with the CUR (a fourth, LIMIT 0, on the first run only)', async () => {
    // Prepare: four nodes of one job, so the straggler query runs too
    const store = athenaStore();
    const cur = new AthenaCurReads({
      query: (sql) => store.query(sql),
      curTable: curTableRef('cur', 'cur_export'),
    });
    const listed = [A, B, C, D].map((id) => running(id, { tags: { team: 'vision', job: 'train-42' } }));
    const deps = {
      store,
      cur,
      state: new MemoryStateStore(),
      alerts: new RecordingAlertSink(),
      instances: { listRunning: async () => listed },
      log: recordingLog(),
      rules: DEFAULT_RULE_CONTEXT,
    };
    const before = sent.length;
    // Act
    await evaluateFleet(deps, NOW);
    const first = sent.length - before;
    await evaluateFleet(deps, new Date(NOW.getTime() + 300_000));
    // Assess
    expect(first).toBe(4);
    expect(sent.length - before - first).toBe(3);
    expect(deps.log.lines.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('prices each instance of the span at its newest billed hour, in one query a run (and one LIMIT 0 at first)', async () => {
    // Prepare
    const cur = reads();
    const before = sent.length;
    // Act
    await cur.teamWasteAtCurRates(SPAN);
    const first = sent.length - before;
    const rows = await cur.teamWasteAtCurRates(SPAN);
    // Assess: A's two GPUs at the Savings Plan's $34.68/h (21:00, not the on-demand 20:00), C at spot $20/h
    expect(first).toBe(2);
    expect(sent.at(-3)).toMatch(/LIMIT 0$/);
    expect(sent.length - before).toBe(3);
    const vision = rows.find((r) => r.group === 'vision');
    const cost = (34.68 / 8) * SIXTH * 2 + (20 / 8) * SIXTH;
    expect(vision?.gpu_hours).toBeCloseTo(3 * SIXTH, 9);
    expect(vision?.cost_usd).toBeCloseTo(cost, 9);
    expect(vision?.wasted_usd).toBeCloseTo(cost * 0.6, 9);
    expect(vision?.wasted_by_diagnosis_usd).toBeDefined();
    expect(vision?.pricing).toEqual({
      cur_gpu_hours: expect.closeTo(3 * SIXTH, 9),
      cur_usage_hour_from: '2026-03-10T19:00:00.000Z',
      cur_usage_hour_to: '2026-03-10T21:00:00.000Z',
    });
    expect(teamPriceEvidence(vision ?? ({} as never))).toEqual({
      price_source: 'cur',
      cur_gpu_hours_share: 1,
      cur_usage_hours: '2026-03-10T19:00:00.000Z/2026-03-10T21:00:00.000Z',
    });
  });

  it('keeps the stored price of an instance the CUR has no hour of in the look-back, and says which', async () => {
    // Act
    const rows = await reads().teamWasteAtCurRates(SPAN);
    // Assess: B's only hour (7 March) is older than 3 days; D is not in the CUR
    const nlp = rows.find((r) => r.group === 'nlp');
    expect(nlp?.cost_usd).toBeCloseTo((P5_PRICE_USD_PER_HOUR / 8) * SIXTH + (40 / 8) * SIXTH, 9);
    expect(nlp?.pricing).toEqual({ cur_gpu_hours: 0, stored_price_source: 'mixed' });
    expect(teamPriceEvidence(nlp ?? ({} as never)).price_source).toBe('mixed');
  });

  it('reads only the CUR columns it names, over the look-back only, and only the span’s instances', async () => {
    // Act
    await reads().teamWasteAtCurRates(SPAN);
    // Assess
    const sql = sent.at(-1) ?? '';
    expect(sql).not.toMatch(/SELECT \*\s+FROM "cur"/);
    // Line items overlapping the look-back: a monthly export's start up to 31 days before it
    expect(sql).toContain(`line_item_usage_end_date > TIMESTAMP '2026-03-08 06:00:00.000'`);
    expect(sql).toContain(`line_item_usage_start_date >= TIMESTAMP '2026-02-05 06:00:00.000'`);
    expect(sql).toContain(`line_item_usage_start_date < TIMESTAMP '2026-03-11 06:00:00.000'`);
    expect(sql).toContain('line_item_resource_id IN (SELECT DISTINCT instance_id FROM');
    expect(sql).not.toContain('product_product_name');
  });

  it('reads only the billing periods of the look-back when the table is partitioned by billing_period', async () => {
    // Act
    const rows = await reads(curTableRef('cur', 'cur_partitioned')).teamWasteAtCurRates(SPAN);
    // Assess
    expect(sent.at(-1)).toContain("AND billing_period IN ('2026-03')");
    expect(rows.find((r) => r.group === 'vision')?.cost_usd).toBeCloseTo(
      (34.68 / 8) * SIXTH * 2 + (20 / 8) * SIXTH,
      9,
    );
  });

  it.each([
    [
      { from: new Date('2026-03-08T06:00:00Z'), to: new Date('2026-03-11T06:00:00Z') },
      "billing_period IN ('2026-03')",
    ],
    [
      { from: new Date('2025-12-30T00:00:00Z'), to: new Date('2026-01-02T00:00:00Z') },
      "billing_period IN ('2025-12', '2026-01')",
    ],
    [
      { from: new Date('2026-02-27T00:00:00Z'), to: new Date('2026-03-01T00:00:00Z') },
      "billing_period IN ('2026-02')",
    ],
  ])('keeps the billing periods (UTC months) of %o', (range, filter) => {
    // Act / Assess
    expect(billingPeriodFilterSql(range)).toBe(filter);
  });

  it('refuses a CUR table without a needed column, naming it, before reading any data', async () => {
    // Prepare
    const before = sent.length;
    // Act
    const run = reads(curTableRef('cur', 'no_pricing_term')).teamWasteAtCurRates(SPAN);
    // Assess
    await expect(run).rejects.toThrow(StoreQueryError);
    await expect(reads(curTableRef('cur', 'no_pricing_term')).teamWasteAtCurRates(SPAN)).rejects.toThrow(
      /pricing_term/,
    );
    expect(sent.slice(before).every((q) => q.endsWith('LIMIT 0'))).toBe(true);
  });

  it('refuses a look-back that does not end after it starts, before asking Athena', async () => {
    // Prepare
    const before = sent.length;
    // Act / Assess
    await expect(reads().teamWasteAtCurRates({ ...SPAN, curFrom: NOW })).rejects.toThrow(StoreQueryError);
    expect(sent.length).toBe(before);
  });

  it('fails with StoreQueryError when the CUR table is not there (the evaluator then uses the stored prices)', async () => {
    // Act / Assess
    await expect(reads(curTableRef('cur', 'missing_export')).teamWasteAtCurRates(SPAN)).rejects.toThrow(
      StoreQueryError,
    );
  });
});
