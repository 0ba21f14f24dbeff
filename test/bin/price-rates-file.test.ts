import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPriceRates } from '../../bin/commands/price-rates-file';
import { PriceOverridesError, priceFor } from '../../lambdas/domain';

describe('--price-rates FILE', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-price-rates-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the shape of the stack priceRates prop and prices a spot host with it', async () => {
    // Prepare
    const file = join(dir, 'rates.json');
    await writeFile(
      file,
      JSON.stringify({ savings_plans: { 'p5.48xlarge': 34.68 }, spot: { 'p5.48xlarge@us-east-1': 21.98 } }),
    );
    // Act
    const rates = await loadPriceRates(file);
    // Assess
    expect(
      priceFor('p5.48xlarge', 'us-east-1', undefined, 8, { lifecycle: 'spot', ...(rates ? { rates } : {}) }),
    ).toMatchObject({
      price_usd_per_hour: 21.98,
      price_source: 'spot',
    });
    expect(
      priceFor('p5.48xlarge', 'us-east-1', undefined, 8, { ...(rates ? { rates } : {}) }).price_source,
    ).toBe('savings_plan');
  });

  it('answers undefined without a file', async () => {
    // Prepare / Act / Assess
    expect(await loadPriceRates(undefined)).toBeUndefined();
  });

  it('refuses a missing file naming --price-rates, and a bad entry naming it', async () => {
    // Prepare
    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ spot: { 'p5.48xlarge': -1 } }));
    // Act / Assess
    await expect(loadPriceRates(join(dir, 'nope.json'))).rejects.toThrow(/--price-rates .*nope\.json/);
    await expect(loadPriceRates(bad)).rejects.toBeInstanceOf(PriceOverridesError);
    await expect(loadPriceRates(bad)).rejects.toThrow(/spot/);
  });
});
