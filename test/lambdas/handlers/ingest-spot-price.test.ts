import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, type SpotPriceSource } from '../../../lambdas/domain';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { NOW, validBatch } from '../contract/batches';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';
import { batchEvent } from './proxy-event';

/** A spot price source that answers one price and records what it was asked. */
function spotSource(usd: number | undefined): SpotPriceSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    priceAt: async (type, region, az, at) => {
      asked.push(`${type} ${region} ${az} ${at.toISOString()}`);
      return usd;
    },
  };
}

describe('ingest of a spot host without a spot rate', () => {
  let store: DuckDbStore;
  let deps: IngestHandlerDeps;

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
    deps = {
      store,
      state: store,
      alerts: new RecordingAlertSink(),
      decisions: new RecordingDecisionSink(),
      remediator: new RecordingRemediator(),
      log: recordingLog(),
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      clock: () => NOW,
    };
  });

  afterEach(async () => {
    await store.close();
  });

  async function ingestSpot(extra: Partial<IngestHandlerDeps>) {
    const batch = validBatch({ events: [] });
    const spot = { ...batch, host: { ...batch.host, lifecycle: 'spot' as const } };
    const res = await createIngestHandler({ ...deps, ...extra })(batchEvent(spot));
    expect(res.statusCode).toBe(202);
    return store.queryWaste({ from: new Date(NOW.getTime() - 60_000), to: new Date(NOW.getTime() + 1000) });
  }

  it('prices it at the spot price of its type, AZ and hour', async () => {
    // Prepare
    const spotPrices = spotSource(21.98);
    // Act
    const rows = await ingestSpot({ spotPrices });
    // Assess
    expect(rows).toHaveLength(8);
    for (const r of rows) {
      expect(r).toMatchObject({ price_source: 'spot', price_usd_per_hour: 21.98 });
      expect(r.cost_usd).toBeCloseTo((21.98 / 8) * (10 / 3600), 12);
    }
    expect(spotPrices.asked).toHaveLength(1);
    expect(spotPrices.asked[0]).toMatch(/^p5\.48xlarge us-east-1 us-east-1a 20\d\d-/);
  });

  it('keeps a configured spot rate and does not ask', async () => {
    // Prepare
    const spotPrices = spotSource(21.98);
    // Act
    const rows = await ingestSpot({ spotPrices, priceRates: { spot: { 'p5.48xlarge': 19 } } });
    // Assess
    expect(rows.every((r) => r.price_usd_per_hour === 19)).toBe(true);
    expect(spotPrices.asked).toEqual([]);
  });

  it('falls back to the spot discount, or unpriced, when no spot price is known', async () => {
    // Prepare / Act
    const rows = await ingestSpot({ spotPrices: spotSource(undefined), priceRates: { spot_discount: 0.6 } });
    // Assess
    expect(rows.every((r) => r.price_source === 'spot_discount:0.6')).toBe(true);
  });
});
