import { describe, expect, it } from 'vitest';
import {
  BUILTIN_PRICE_TABLE_ID,
  PriceOverridesError,
  parsePriceOverrides,
  priceFor,
} from '../../../lambdas/domain';

const BUILTIN = `builtin:${BUILTIN_PRICE_TABLE_ID}`;

describe('priceFor', () => {
  it.each([
    ['p4d.24xlarge', 21.96, 8],
    ['p5.48xlarge', 55.04, 8],
    ['p5.4xlarge', 6.88, 1],
    ['p6-b200.48xlarge', 113.9328, 8],
    ['g5.xlarge', 1.006, 1],
    ['g5.2xlarge', 1.212, 1],
    ['g5.4xlarge', 1.64, 1],
    ['g6.xlarge', 0.805, 1],
    ['g6e.xlarge', 1.86, 1],
    ['g6e.2xlarge', 2.24, 1],
    ['g6e.12xlarge', 10.49, 4],
  ])('prices %s at %d USD/h over %i GPU(s) from the built-in table', (type, usd, gpus) => {
    // Prepare / Act
    const price = priceFor(type, 'us-east-1');
    // Assess
    expect(price).toEqual({
      price_usd_per_hour: usd,
      price_source: BUILTIN,
      gpu_count: gpus,
      gpu_count_source: 'table',
    });
  });

  it.each([
    ['p4de.24xlarge', 'us-east-1', 8],
    ['p5en.48xlarge', 'us-east-1', 8],
    ['g5.48xlarge', 'us-east-1', 8],
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
