import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repricedWindowsSql } from '../../../lambdas/adapters/cur-sql';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../rows';

/** One p5 GPU-hour at the list price, working at 40 %, power-capped half the time (ledger as computeLedger gives it). */
const HOUR = ledger({ window_s: 3600, efficiency: 0.4 });
const LISTED = { ...HOUR, throttled_usd: (HOUR.cost_usd - HOUR.wasted_usd) * 0.5 };

describe('repricedWindowsSql and throttled dollars', () => {
  let dir: string;
  let db: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-cur-throttled-'));
    db = join(dir, 'store.duckdb');
    const store = await DuckDbStore.open(db);
    await store.write({
      gpu: [
        gpuRow({
          time: '2026-03-10T13:00:00.000Z',
          ledger: LISTED,
          metrics: { ...gpuRow().metrics, thermal_throttle_ratio: 0.1, power_throttle_ratio: 0.5 },
        }),
      ],
      efa: [],
      events: [],
    });
    await store.close();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reprices throttled_usd from the CUR rate as the ledger does: (cost − wasted) × the larger ratio', async () => {
    // Prepare: the CUR says the hour cost $34.68 (a Savings Plan)
    const duck = await DuckDBInstance.create(db);
    const c = await duck.connect();
    const rates = `SELECT 'i-0123456789abcdef0' AS instance_id, TIMESTAMPTZ '2026-03-10 12:00:00+00' AS usage_hour,
      TIMESTAMPTZ '2026-03-10 13:00:00+00' AS usage_to, 34.68::DOUBLE AS cost_usd, 1::DOUBLE AS usage_hours,
      'OnDemand' AS pricing_term`;
    const none = `SELECT 'i-0123456789abcdef0' AS instance_id, TIMESTAMPTZ '2020-01-01 00:00:00+00' AS usage_hour,
      TIMESTAMPTZ '2020-01-01 01:00:00+00' AS usage_to, 1::DOUBLE AS cost_usd, 1::DOUBLE AS usage_hours,
      'OnDemand' AS pricing_term`;
    try {
      // Act
      const read = async (r: string) =>
        (
          await c.runAndReadAll(
            `SELECT cost_usd, wasted_usd, throttled_usd FROM (${repricedWindowsSql('gpu_windows', r)})`,
          )
        ).getRowObjectsJson()[0];
      const repriced = await read(rates);
      const kept = await read(none);
      // Assess
      const cost = 34.68 / 8;
      expect(Number(repriced?.cost_usd)).toBeCloseTo(cost, 9);
      expect(Number(repriced?.wasted_usd)).toBeCloseTo(cost * 0.6, 9);
      expect(Number(repriced?.throttled_usd)).toBeCloseTo(cost * 0.4 * 0.5, 9);
      expect(Number(kept?.throttled_usd)).toBeCloseTo(LISTED.throttled_usd, 9);
    } finally {
      c.closeSync();
      duck.closeSync();
    }
  });
});
