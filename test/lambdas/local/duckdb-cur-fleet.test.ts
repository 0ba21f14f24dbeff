import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_CUR_LOOKBACK_S, StoreQueryError } from '../../../lambdas/domain';
import { SILENT_LOG } from '../../../lambdas/handlers/log';
import { DuckDbCurFleetReads } from '../../../lambdas/local/duckdb-cur-fleet';
import { type LocalPipeline, startLocalPipeline } from '../../../lambdas/local/local-pipeline';
import { gpuRow, ledger } from '../rows';

/**
 * `gpu-sentinel local --cur`: the local fleet evaluator prices team waste from a CUR 2.0 file with
 * the SQL the Lambda runs on Athena. The CUR is a Parquet file generated here with DuckDB `COPY … TO`
 * from the CUR 2.0 columns AWS documents
 * (https://docs.aws.amazon.com/cur/latest/userguide/table-dictionary-cur2.html): instance i-0a
 * (team vision, p5.48xlarge, 8 GPUs) was Savings-Plan covered at 21:00 on 10 March 2026 at an
 * effective $34.68/h; the evaluator runs at 06:00 on 11 March over 05:00–06:00, when every GPU of
 * i-0a was 10 % efficient (90 % of its dollars wasted).
 */

const NOW = new Date('2026-03-11T06:00:00Z');
const A = 'i-0aaaaaaaaaaaaaaaa';
const SPAN = {
  from: new Date('2026-03-11T05:00:00Z'),
  to: NOW,
  curFrom: new Date(NOW.getTime() - FLEET_CUR_LOOKBACK_S * 1000),
};

/** 8 GPUs × 6 windows of 10 min of i-0a ending 05:00 to 05:50, 10 % efficient, at the list price. */
function hourOfA() {
  const l = ledger({ window_s: 600, efficiency: 0.1 });
  return Array.from({ length: 48 }, (_, k) =>
    gpuRow({
      instance_id: A,
      team: 'vision',
      gpu_index: k % 8,
      time: new Date(SPAN.from.getTime() + Math.floor(k / 8) * 600_000).toISOString(),
      ledger: l,
    }),
  );
}

describe('DuckDbCurFleetReads (gpu-sentinel local --cur)', () => {
  let dir: string;
  let cur: string;
  let pipeline: LocalPipeline;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gs-duckdb-cur-fleet-'));
    cur = join(dir, 'cur.parquet');
    const duck = await DuckDBInstance.create(':memory:');
    const db = await duck.connect();
    await db.run(
      `COPY (SELECT '${A}' AS line_item_resource_id, TIMESTAMP '2026-03-10 21:00:00' AS line_item_usage_start_date,
        TIMESTAMP '2026-03-10 22:00:00' AS line_item_usage_end_date, 'USE1-BoxUsage:p5.48xlarge' AS line_item_usage_type,
        'SavingsPlanCoveredUsage' AS line_item_line_item_type, 1.0::DOUBLE AS line_item_usage_amount,
        55.04::DOUBLE AS line_item_unblended_cost, 34.68::DOUBLE AS savings_plan_savings_plan_effective_cost,
        0.0::DOUBLE AS reservation_effective_cost, 'OnDemand' AS pricing_term) TO '${cur}' (FORMAT PARQUET)`,
    );
    db.closeSync();
    duck.closeSync();
    pipeline = await startLocalPipeline({
      outDir: join(dir, 'out'),
      log: SILENT_LOG,
      write: () => {},
      curPath: cur,
      clock: () => NOW,
    });
    await pipeline.store.write({ gpu: hourOfA(), efa: [], events: [] });
  });

  afterAll(async () => {
    await pipeline.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('prices the team at the newest billed hour of its instance', async () => {
    // Act
    const rows = await new DuckDbCurFleetReads(pipeline.store.session, cur).teamWasteAtCurRates(SPAN);
    // Assess: 8 GPU-hours at $34.68 / 8 GPUs, 90 % wasted
    expect(rows).toHaveLength(1);
    expect(rows[0]?.group).toBe('vision');
    expect(rows[0]?.cost_usd).toBeCloseTo(34.68, 9);
    expect(rows[0]?.wasted_usd).toBeCloseTo(34.68 * 0.9, 9);
    expect(rows[0]?.pricing).toEqual({
      cur_gpu_hours: expect.closeTo(8, 9),
      cur_usage_hour_from: '2026-03-10T21:00:00.000Z',
      cur_usage_hour_to: '2026-03-10T21:00:00.000Z',
    });
  });

  it('makes the local fleet evaluator alert in the bill’s dollars, saying cur and the hour', async () => {
    // Act
    const result = await pipeline.evaluateFleet(NOW);
    // Assess
    const alert = result.findings.find((a) => a.id === 'waste_rate:team:vision');
    expect(alert?.finding.evidence).toMatchObject({
      price_source: 'cur',
      cost_usd_per_hour: 34.68,
      cur_usage_hour: '2026-03-10T21:00:00.000Z',
    });
  });

  it('refuses a path that holds no CUR with StoreQueryError, so the evaluator falls back to stored prices', async () => {
    // Prepare
    const reads = new DuckDbCurFleetReads(pipeline.store.session, join(dir, 'nothing-here'));
    // Act / Assess
    await expect(reads.teamWasteAtCurRates(SPAN)).rejects.toThrow(StoreQueryError);
    await expect(reads.teamWasteAtCurRates(SPAN)).rejects.toThrow(/--cur/);
  });
});
