import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreQueryError } from '../../../lambdas/adapters/errors';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../rows';

describe('DuckDbStore.queryWasteSeries', () => {
  let store: DuckDbStore;

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
  });

  afterEach(async () => {
    await store.close();
  });

  it('sums the ledger per UTC day of the window end and per diagnosis, absent diagnosis last', async () => {
    // Prepare
    const idle = ledger({
      efficiency: 0,
      diagnosis: 'idle',
      idle_usd: 0.5,
      wasted_usd: 0.5,
      underused_usd: 0,
    });
    await store.write({
      gpu: [
        gpuRow({ time: '2026-03-10T23:59:59.000Z', gpu_index: 0, ledger: idle }),
        gpuRow({ time: '2026-03-10T12:00:10.000Z', gpu_index: 1, ledger: idle }),
        gpuRow({ time: '2026-03-11T00:00:05.000Z', gpu_index: 0, ledger: ledger() }),
        gpuRow({
          time: '2026-03-11T00:00:05.000Z',
          gpu_index: 1,
          ledger: ledger({ diagnosis: 'input_bound' }),
        }),
      ],
      efa: [],
      events: [],
    });
    // Act
    const series = await store.queryWasteSeries({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-12T00:00:00Z'),
    });
    // Assess
    expect(series.map((s) => [s.day, s.diagnosis])).toEqual([
      ['2026-03-10', 'idle'],
      ['2026-03-11', 'input_bound'],
      ['2026-03-11', undefined],
    ]);
    expect(series[0]?.idle_usd).toBeCloseTo(1, 12);
    expect(series[0]?.gpu_hours).toBeCloseTo(20 / 3600, 12);
    expect(series[2]?.wasted_usd).toBeCloseTo(ledger().wasted_usd, 12);
  });

  it('rejects an empty range with StoreQueryError', async () => {
    // Prepare
    const at = new Date('2026-03-10T00:00:00Z');
    // Act / Assess
    await expect(store.queryWasteSeries({ from: at, to: at })).rejects.toBeInstanceOf(StoreQueryError);
  });
});
