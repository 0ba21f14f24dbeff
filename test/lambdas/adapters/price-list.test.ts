import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetProductsCommand, type GetProductsCommandOutput, PricingClient } from '@aws-sdk/client-pricing';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  fetchOnDemandPrices,
  GET_PRODUCTS_MAX_RESULTS,
  parsePriceListProduct,
  priceListSource,
  renderPriceTableModule,
} from '../../../lambdas/adapters/price-list';
import { PriceListError } from '../../../lambdas/adapters/price-list-error';
import { expectValidAwsInputs } from './aws-model';

const pages = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../fixtures/pricing/get-products-p5.json'), 'utf8'),
) as Record<string, GetProductsCommandOutput[]>;

const pricing = mockClient(PricingClient);

/** Valid `Filter.Type` values in the AWS Price List Query API model. */
const FILTER_TYPES = ['TERM_MATCH', 'EQUALS', 'CONTAINS', 'ANY_OF', 'NONE_OF'];

describe('fetchOnDemandPrices', () => {
  afterEach(() => {
    expectValidAwsInputs(pricing, 'pricing');
  });

  beforeEach(() => {
    pricing.reset();
    const [first, second] = pages['p5.48xlarge'] as [GetProductsCommandOutput, GetProductsCommandOutput];
    pricing.on(GetProductsCommand).resolvesOnce(first).resolvesOnce(second);
  });

  it('asks GetProducts for on-demand Linux prices of a type, page by page, with inputs AWS accepts', async () => {
    // Prepare
    const client = new PricingClient({ region: 'us-east-1' });
    // Act
    await fetchOnDemandPrices(client, ['p5.48xlarge'], '2026-11-23');
    // Assess
    const calls = pricing.commandCalls(GetProductsCommand).map((c) => c.args[0].input);
    expect(calls).toEqual([
      {
        ServiceCode: 'AmazonEC2',
        FormatVersion: 'aws_v1',
        MaxResults: 100,
        Filters: [
          { Type: 'TERM_MATCH', Field: 'instanceType', Value: 'p5.48xlarge' },
          { Type: 'TERM_MATCH', Field: 'operatingSystem', Value: 'Linux' },
          { Type: 'TERM_MATCH', Field: 'tenancy', Value: 'Shared' },
          { Type: 'TERM_MATCH', Field: 'preInstalledSw', Value: 'NA' },
          { Type: 'TERM_MATCH', Field: 'capacitystatus', Value: 'Used' },
          { Type: 'TERM_MATCH', Field: 'licenseModel', Value: 'No License required' },
        ],
      },
      expect.objectContaining({ NextToken: 'page-2' }),
    ]);
    for (const input of calls) {
      expect(input.MaxResults).toBeLessThanOrEqual(GET_PRODUCTS_MAX_RESULTS);
      for (const f of input.Filters ?? []) expect(FILTER_TYPES).toContain(f.Type);
    }
  });

  it('keeps one row per AWS Region with its price and source, skipping Local Zones', async () => {
    // Prepare
    const client = new PricingClient({ region: 'us-east-1' });
    // Act
    const rows = await fetchOnDemandPrices(client, ['p5.48xlarge'], '2026-11-23');
    // Assess
    expect(rows).toEqual([
      {
        instance_type: 'p5.48xlarge',
        region: 'eu-north-1',
        usd_per_hour: 58.8928,
        source: priceListSource('2026-11-23'),
      },
      {
        instance_type: 'p5.48xlarge',
        region: 'us-east-1',
        usd_per_hour: 55.04,
        source: priceListSource('2026-11-23'),
      },
    ]);
  });

  it('refuses two different prices for one type and region', async () => {
    // Prepare
    const [first] = pages['p5.48xlarge'] as [GetProductsCommandOutput];
    const twin = (first.PriceList as string[])[0]?.replace('55.0400000000', '60.0000000000') as string;
    pricing.reset();
    pricing
      .on(GetProductsCommand)
      .resolves({ PriceList: [(first.PriceList as string[])[0] as string, twin] });
    // Act / Assess
    await expect(
      fetchOnDemandPrices(new PricingClient({ region: 'us-east-1' }), ['p5.48xlarge'], '2026-11-23'),
    ).rejects.toBeInstanceOf(PriceListError);
  });
});

describe('parsePriceListProduct', () => {
  it.each([
    [
      'a product without an hourly price',
      JSON.stringify({ product: { attributes: { regionCode: 'us-east-1' } } }),
    ],
    [
      'a zero price',
      JSON.stringify({
        product: { attributes: { regionCode: 'us-east-1' } },
        terms: {
          OnDemand: { a: { priceDimensions: { b: { unit: 'Hrs', pricePerUnit: { USD: '0.0000000000' } } } } },
        },
      }),
    ],
  ])('reads nothing from %s', (_name, text) => {
    // Prepare / Act / Assess
    expect(parsePriceListProduct(text)).toBeUndefined();
  });

  it('throws PriceListError for an entry that is not JSON', () => {
    // Prepare / Act / Assess
    expect(() => parsePriceListProduct('{oops')).toThrow(PriceListError);
  });
});

describe('renderPriceTableModule', () => {
  it('writes the bundled table module with the table id, the source and one line per row', () => {
    // Prepare
    const source = priceListSource('2026-11-23');
    const rows = [
      { instance_type: 'p5.48xlarge', region: 'eu-north-1', usd_per_hour: 58.8928, source },
      { instance_type: 'p5.48xlarge', region: 'us-east-1', usd_per_hour: 55.04, source },
    ];
    // Act
    const text = renderPriceTableModule(rows, 'aws-ec2-on-demand-linux-2026-11-23');
    // Assess
    expect(text).toContain("export const ON_DEMAND_PRICE_TABLE_ID = 'aws-ec2-on-demand-linux-2026-11-23';");
    expect(text).toContain("as_of: '2026-11-23'");
    expect(text).toContain(
      "{ instance_type: 'p5.48xlarge', region: 'us-east-1', usd_per_hour: 55.04, source: PRICE_LIST_API },",
    );
  });

  it.each([
    ['no rows', []],
    [
      'rows of two sources',
      [
        { instance_type: 'a.b', region: 'us-east-1', usd_per_hour: 1, source: priceListSource('2026-01-01') },
        { instance_type: 'a.b', region: 'us-east-2', usd_per_hour: 1, source: priceListSource('2026-02-01') },
      ],
    ],
  ])('refuses %s', (_name, rows) => {
    // Prepare / Act / Assess
    expect(() => renderPriceTableModule(rows, 'x')).toThrow(PriceListError);
  });
});
