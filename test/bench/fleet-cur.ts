/**
 * The fleet evaluator's CUR-priced team waste (`DuckDbCurFleetReads`, the SQL `AthenaCurReads` runs
 * on Athena) over a CUR-shaped Parquet of 1,000,000 line items with 30 columns (the ten it reads and
 * 20 filler ones; a CUR 2.0 export has about 125; 2,000 instances, one line item per
 * instance-hour from 1 March 2026), against a store of 16 p5.48xlarge × 8 GPUs over the last hour:
 * the wall time of the team read with and without the CUR. Run: `npx tsx test/bench/fleet-cur.ts`
 * (about 20 s on 2 vCPUs, mostly writing the Parquet file).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DuckDBInstance } from '@duckdb/node-api';
import { FLEET_CUR_LOOKBACK_S } from '../../lambdas/domain';
import { DuckDbCurFleetReads } from '../../lambdas/local/duckdb-cur-fleet';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../lambdas/rows';

const LINE_ITEMS = 1_000_000;
const INSTANCES = 16;
const NOW = new Date('2026-03-11T06:00:00Z');
const SPAN = {
  from: new Date(NOW.getTime() - 3_600_000),
  to: NOW,
  curFrom: new Date(NOW.getTime() - FLEET_CUR_LOOKBACK_S * 1000),
};

const dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-bench-fleet-cur-'));
try {
  const cur = join(dir, 'cur.parquet');
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  const filler = Array.from(
    { length: 20 },
    (_, k) => `md5(CAST(n * ${k + 1} AS VARCHAR)) AS filler_${k}`,
  ).join(', ');
  await c.run(`COPY (
    SELECT 'i-' || lpad(CAST(n % 2000 AS VARCHAR), 17, '0') AS line_item_resource_id,
      TIMESTAMP '2026-03-01 00:00:00' + INTERVAL (n // 2000) HOUR AS line_item_usage_start_date,
      TIMESTAMP '2026-03-01 01:00:00' + INTERVAL (n // 2000) HOUR AS line_item_usage_end_date,
      'USE1-BoxUsage:p5.48xlarge' AS line_item_usage_type,
      CASE WHEN n % 3 = 0 THEN 'SavingsPlanCoveredUsage' ELSE 'Usage' END AS line_item_line_item_type,
      1.0 AS line_item_usage_amount, 55.04 AS line_item_unblended_cost,
      34.68 AS savings_plan_savings_plan_effective_cost, 0.0 AS reservation_effective_cost,
      'OnDemand' AS pricing_term, ${filler}
    FROM range(${LINE_ITEMS}) t(n)) TO '${cur}' (FORMAT PARQUET, ROW_GROUP_SIZE 100000)`);
  c.closeSync();
  duck.closeSync();

  const store = await DuckDbStore.open(join(dir, 'store.duckdb'));
  const window = ledger({ window_s: 600, efficiency: 0.2 });
  const gpu = [];
  for (let i = 0; i < INSTANCES; i++) {
    for (let w = 0; w < 6; w++) {
      for (let g = 0; g < 8; g++) {
        gpu.push(
          gpuRow({
            instance_id: `i-${String(i).padStart(17, '0')}`,
            team: `team-${i % 4}`,
            gpu_index: g,
            time: new Date(SPAN.from.getTime() + w * 600_000).toISOString(),
            ledger: window,
          }),
        );
      }
    }
  }
  await store.write({ gpu, efa: [], events: [] });
  const reads = new DuckDbCurFleetReads(store.session, cur);
  const timed = async (run: () => Promise<unknown>) => {
    await run();
    const start = performance.now();
    await run();
    return performance.now() - start;
  };
  const plain = await timed(() => store.queryWasteBy({ by: 'team', from: SPAN.from, to: SPAN.to }));
  const withCur = await timed(() => reads.teamWasteAtCurRates(SPAN));
  const [row] = await reads.teamWasteAtCurRates(SPAN);
  const size = (await stat(cur)).size;
  await store.close();
  console.log(
    `fleet team waste, ${INSTANCES} instances × 8 GPUs × 6 windows of 10 min (last hour): ${plain.toFixed(0)} ms; at CUR rates (${LINE_ITEMS.toLocaleString('en-US')} line items, 30 columns, ${(size / 2 ** 20).toFixed(0)} MiB Parquet): ${withCur.toFixed(0)} ms; ${row?.group} priced cur ${row?.pricing?.cur_gpu_hours.toFixed(1)} of ${row?.gpu_hours.toFixed(1)} GPU-h at hour ${row?.pricing?.cur_usage_hour_to}`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
