/**
 * `gpu-sentinel report --cur` over a CUR-shaped Parquet of 1,000,000 line items with 50 columns (the
 * ten the report reads and 40 filler ones, as a CUR 2.0 export has about 125), against a store of
 * 16 p5.48xlarge for one day: the wall time of the report with and without the CUR, and the
 * Parquet file size. Run: `npx tsx test/bench/report-cur.ts` (about 20 s on 2 vCPUs).
 */
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DuckDBInstance } from '@duckdb/node-api';
import { runReportCommand } from '../../bin/commands/report';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../lambdas/rows';

const LINE_ITEMS = 1_000_000;
const INSTANCES = 16;
const NOW = new Date('2026-03-11T06:00:00Z');

const dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-bench-cur-'));
try {
  const db = join(dir, 'store.duckdb');
  const store = await DuckDbStore.open(db);
  const hour = ledger({ window_s: 3600, efficiency: 0.4 });
  const gpu = [];
  for (let i = 0; i < INSTANCES; i++) {
    for (let h = 1; h <= 24; h++) {
      for (let g = 0; g < 8; g++) {
        gpu.push(
          gpuRow({
            instance_id: `i-${String(i).padStart(17, '0')}`,
            gpu_index: g,
            time: new Date(Date.UTC(2026, 2, 10, h)).toISOString(),
            ledger: hour,
          }),
        );
      }
    }
  }
  await store.write({ gpu, efa: [], events: [] });
  await store.close();
  const cur = join(dir, 'cur.parquet');
  const duck = await DuckDBInstance.create(':memory:');
  const c = await duck.connect();
  const filler = Array.from(
    { length: 40 },
    (_, k) => `md5(CAST(n * ${k + 1} AS VARCHAR)) AS filler_${k}`,
  ).join(', ');
  // Line items of 2,000 instances over March (the fleet's 16 among them), one per instance-hour.
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
  const time = async (extra: { cur?: string }) => {
    const start = performance.now();
    await runReportCommand({ db, by: 'instance', format: 'csv', period: 'day', ...extra }, () => {}, NOW);
    return performance.now() - start;
  };
  await time({});
  const plain = await time({});
  const withCur = await time({ cur });
  const size = (await stat(cur)).size;
  console.log(
    `report --by instance, 16 instances × 24 h × 8 GPUs: ${plain.toFixed(0)} ms; with --cur (${LINE_ITEMS.toLocaleString('en-US')} line items, 50 columns, ${(size / 2 ** 20).toFixed(0)} MiB Parquet): ${withCur.toFixed(0)} ms`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
