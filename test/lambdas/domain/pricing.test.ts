import { describe, expect, it } from 'vitest';
import {
  BUILTIN_PRICE_TABLE_ID,
  isUnpriced,
  ON_DEMAND_PRICES,
  onDemandPrice,
  PriceOverridesError,
  parsePriceOverrides,
  parsePriceRates,
  priceFor,
} from '../../../lambdas/domain';

const BUILTIN = `builtin:${BUILTIN_PRICE_TABLE_ID}`;

describe('priceFor', () => {
  it.each([
    ['p4d.24xlarge', 'us-east-1', 21.957642, 8],
    ['p4de.24xlarge', 'us-east-1', 27.44705, 8],
    ['p5.48xlarge', 'us-east-1', 55.04, 8],
    ['p5en.48xlarge', 'us-east-1', 63.296, 8],
    ['p5.4xlarge', 'us-east-1', 6.88, 1],
    ['p6-b200.48xlarge', 'us-east-1', 113.9328, 8],
    ['g5.xlarge', 'us-east-1', 1.006, 1],
    ['g5.48xlarge', 'us-east-1', 16.288, 8],
    ['g6.xlarge', 'us-east-1', 0.8048, 1],
    ['g6e.12xlarge', 'us-east-1', 10.49264, 4],
    ['p5.48xlarge', 'eu-north-1', 58.8928, 8],
    ['p5.48xlarge', 'ap-northeast-1', 68.8, 8],
    ['p5en.48xlarge', 'eu-south-2', 68.35968, 8],
    ['p4d.24xlarge', 'eu-west-1', 23.71569, 8],
    ['p5.48xlarge', 'us-gov-west-1', 66.048, 8],
    ['g6.xlarge', 'us-gov-east-1', 1.0144, 1],
  ])('prices %s in %s at %d USD/h over %i GPU(s) from the built-in table', (type, region, usd, gpus) => {
    // Prepare / Act
    const price = priceFor(type, region);
    // Assess
    expect(price).toEqual({
      price_usd_per_hour: usd,
      price_source: BUILTIN,
      gpu_count: gpus,
      gpu_count_source: 'table',
    });
  });

  it.each([
    ['p5e.48xlarge', 'us-east-1', 8],
    ['p5e.48xlarge', 'us-east-2', 8],
    ['g5.48xlarge', 'eu-west-1', 8],
    ['p5.48xlarge', 'eu-west-1', 8],
    ['x9.metal', 'us-east-1', 1],
  ])('leaves %s in %s unpriced (0) and never guesses', (type, region, gpus) => {
    // Prepare / Act
    const price = priceFor(type, region);
    // Assess
    expect(price).toMatchObject({ price_usd_per_hour: 0, price_source: 'unpriced', gpu_count: gpus });
  });

  it('lets an override win over the table, in any region', () => {
    // Prepare
    const overrides = { 'p5.48xlarge': 31.5, 'p4de.24xlarge': 27 };
    // Act / Assess
    expect(priceFor('p5.48xlarge', 'us-east-1', overrides)).toMatchObject({
      price_usd_per_hour: 31.5,
      price_source: 'override',
      gpu_count: 8,
    });
    expect(priceFor('p4de.24xlarge', 'ap-northeast-1', overrides)).toMatchObject({
      price_usd_per_hour: 27,
      price_source: 'override',
    });
  });

  it.each([
    ['the table', 'g6e.48xlarge', 3, 8, 'table'],
    ['the GPUs seen in the batch', 'p9.96xlarge', 16, 16, 'observed'],
    ['1 by default', 'p9.96xlarge', undefined, 1, 'default'],
    ['1 when the observed count is not a positive integer', 'p9.96xlarge', 0, 1, 'default'],
  ])('takes the GPU count from %s', (_name, type, observed, gpus, source) => {
    // Prepare / Act
    const price = priceFor(type, 'us-east-1', undefined, observed);
    // Assess
    expect(price.gpu_count).toBe(gpus);
    expect(price.gpu_count_source).toBe(source);
  });
});

describe('the built-in table', () => {
  it('has one positive price per type and region, each with a source and a date', () => {
    // Prepare
    const keys = ON_DEMAND_PRICES.map((r) => `${r.instance_type}@${r.region}`);
    // Act / Assess
    expect(new Set(keys).size).toBe(keys.length);
    for (const row of ON_DEMAND_PRICES) {
      expect(row.usd_per_hour).toBeGreaterThan(0);
      expect(row.source.url).toMatch(/^https:\/\//);
      expect(row.source.as_of).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    }
  });

  it('returns the row with its source for a type and region', () => {
    // Prepare / Act
    const row = onDemandPrice('p5.48xlarge', 'us-east-1');
    // Assess
    expect(row?.source.as_of).toBe('2026-07-20');
    expect(onDemandPrice('p5e.48xlarge', 'us-east-1')).toBeUndefined();
  });
});

describe('priceFor with rates and lifecycle', () => {
  const rates = parsePriceRates(
    JSON.stringify({
      capacity_blocks: { 'p5en.48xlarge@us-east-2': 43.26 },
      savings_plans: { 'p5.48xlarge': 34.6752, 'p5en.48xlarge': 39.87648 },
      spot: { 'p4d.24xlarge@us-west-2': 11.93 },
      spot_discount: 0.6,
    }),
  );

  it.each([
    [
      'a Capacity Block rate over a Savings Plans rate',
      'p5en.48xlarge',
      'us-east-2',
      'on-demand',
      43.26,
      'capacity_block',
    ],
    [
      'a Savings Plans rate in every region',
      'p5en.48xlarge',
      'us-east-1',
      'on-demand',
      39.87648,
      'savings_plan',
    ],
    [
      'a Savings Plans rate over an override',
      'p5.48xlarge',
      'eu-north-1',
      'on-demand',
      34.6752,
      'savings_plan',
    ],
    ['a spot rate for a spot host', 'p4d.24xlarge', 'us-west-2', 'spot', 11.93, 'spot'],
    [
      'the on-demand price less the spot discount',
      'p5.48xlarge',
      'us-east-1',
      'spot',
      55.04 * 0.4,
      'spot_discount:0.6',
    ],
    [
      'nothing (unpriced) for a spot host of an unpriced type',
      'p5e.48xlarge',
      'us-east-1',
      'spot',
      0,
      'unpriced',
    ],
  ] as const)('prices with %s', (_name, type, region, lifecycle, usd, source) => {
    // Prepare / Act
    const price = priceFor(type, region, { 'p5.48xlarge': 31.5 }, 8, { lifecycle, rates });
    // Assess
    expect(price.price_usd_per_hour).toBeCloseTo(usd, 9);
    expect(price.price_source).toBe(source);
  });

  it('never bills a spot host at the on-demand price when no spot price or discount is set', () => {
    // Prepare / Act
    const price = priceFor('p5.48xlarge', 'us-east-1', undefined, 8, { lifecycle: 'spot' });
    // Assess
    expect(price).toMatchObject({ price_usd_per_hour: 0, price_source: 'unpriced' });
    expect(isUnpriced(price.price_source)).toBe(true);
  });
});

describe('parsePriceRates', () => {
  it.each([
    ['{"spot_discount": 1}', 'spot_discount', /fraction >= 0 and < 1/],
    ['{"reserved": {}}', 'reserved', /sections capacity_blocks, savings_plans, spot/],
    ['{"spot": {"p5.48xlarge@mars": 3}}', 'spot.p5.48xlarge@mars', /p5.48xlarge@us-east-2/],
    ['{"savings_plans": {"p5.48xlarge": -2}}', 'savings_plans.p5.48xlarge', /USD\/hour >= 0, got `-2`/],
    ['nope', '(root)', /not JSON/],
  ])('throws PriceOverridesError for %s naming %s', (json, key, message) => {
    // Prepare / Act
    let error: unknown;
    try {
      parsePriceRates(json);
    } catch (e) {
      error = e;
    }
    // Assess
    expect(error).toBeInstanceOf(PriceOverridesError);
    expect((error as PriceOverridesError).key).toBe(key);
    expect((error as PriceOverridesError).message).toMatch(message);
  });
});

describe('parsePriceOverrides', () => {
  it.each([
    [undefined, {}],
    ['  ', {}],
    ['{"p5.48xlarge": 31.5, "g5.xlarge": 0}', { 'p5.48xlarge': 31.5, 'g5.xlarge': 0 }],
  ])('parses %j', (json, expected) => {
    // Prepare / Act / Assess
    expect(parsePriceOverrides(json)).toEqual(expected);
  });

  it.each([
    ['{not json', '(root)', /not JSON/],
    ['[1,2]', '(root)', /JSON object/],
    ['{"P5 big": 3}', 'P5 big', /instance types like `p5.48xlarge`, got `P5 big`/],
    ['{"p5.48xlarge": -1}', 'p5.48xlarge', /USD\/hour >= 0, got `-1`/],
    ['{"p5.48xlarge": "55"}', 'p5.48xlarge', /got `"55"` \(string\)/],
  ])('throws PriceOverridesError for %s naming %s', (json, key, message) => {
    // Prepare / Act
    let error: unknown;
    try {
      parsePriceOverrides(json);
    } catch (e) {
      error = e;
    }
    // Assess
    expect(error).toBeInstanceOf(PriceOverridesError);
    expect((error as PriceOverridesError).key).toBe(key);
    expect((error as PriceOverridesError).message).toMatch(message);
  });
});
