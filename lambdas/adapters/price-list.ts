import { GetProductsCommand, type PricingClient } from '@aws-sdk/client-pricing';
import type { OnDemandPriceRow, PriceRowSource } from '../domain/price-row';
import { PriceListError } from './price-list-error';

/**
 * Reads EC2 on-demand Linux prices from the AWS Price List Query API (`pricing:GetProducts`) and
 * renders them as the bundled price table module, so `bin/refresh-prices.ts` can replace
 * `lambdas/domain/on-demand-prices.ts` with what AWS publishes today.
 */

/** Instance families the bundled table covers (docs/design.md §1: the GPU fleets gpu-sentinel watches). */
export const PRICED_INSTANCE_TYPES = [
  'p4d.24xlarge',
  'p4de.24xlarge',
  'p5.4xlarge',
  'p5.48xlarge',
  'p5e.48xlarge',
  'p5en.48xlarge',
  'p6-b200.48xlarge',
  ...['g5', 'g6', 'g6e'].flatMap((f) =>
    ['xlarge', '2xlarge', '4xlarge', '8xlarge', '12xlarge', '16xlarge', '24xlarge', '48xlarge'].map(
      (size) => `${f}.${size}`,
    ),
  ),
] as const;

/**
 * Most products per `GetProducts` page. Source: the AWS Price List Query API model (`MaxResults`
 * 1–100).
 */
export const GET_PRODUCTS_MAX_RESULTS = 100;

/**
 * Attribute filters that select the on-demand, Linux, shared-tenancy, no-extra-software, in-use
 * price of an instance type (the list price the ledger means). Source: AWS Price List attribute
 * names for `AmazonEC2` (`capacitystatus: Used` excludes reservation and unused-reservation rows).
 */
export const ON_DEMAND_LINUX_FILTERS = {
  operatingSystem: 'Linux',
  tenancy: 'Shared',
  preInstalledSw: 'NA',
  capacitystatus: 'Used',
  licenseModel: 'No License required',
} as const;

/** The source every row read from the Price List API carries. */
export function priceListSource(asOf: string): PriceRowSource {
  return {
    name: 'AWS Price List Query API (pricing:GetProducts, AmazonEC2)',
    url: 'https://api.pricing.us-east-1.amazonaws.com',
    as_of: asOf,
  };
}

/** One `PriceList` entry of a `GetProducts` answer, the fields read. */
interface PriceListProduct {
  readonly product?: { readonly attributes?: Readonly<Record<string, string>> };
  readonly terms?: {
    readonly OnDemand?: Readonly<
      Record<
        string,
        {
          readonly priceDimensions?: Readonly<
            Record<string, { readonly unit?: string; readonly pricePerUnit?: { readonly USD?: string } }>
          >;
        }
      >
    >;
  };
}

/**
 * Reads one `GetProducts` product: its region and hourly on-demand USD price.
 *
 * @param text - one entry of `PriceList` (a JSON string)
 * @returns `{ region, usd_per_hour }`, or undefined when the product is not an AWS Region's (Local
 *   Zones, Wavelength) or has no positive hourly USD on-demand price
 * @throws {PriceListError} when the entry is not JSON
 */
export function parsePriceListProduct(text: string): { region: string; usd_per_hour: number } | undefined {
  let product: PriceListProduct;
  try {
    product = JSON.parse(text) as PriceListProduct;
  } catch (cause) {
    throw new PriceListError(
      `Expected each GetProducts PriceList entry to be JSON, got \`${text.slice(0, 80)}\`.`,
      {
        cause,
      },
    );
  }
  const attributes = product.product?.attributes ?? {};
  const region = attributes.regionCode;
  if (region === undefined || (attributes.locationType ?? 'AWS Region') !== 'AWS Region') return undefined;
  for (const term of Object.values(product.terms?.OnDemand ?? {})) {
    for (const dimension of Object.values(term.priceDimensions ?? {})) {
      const usd = Number(dimension.pricePerUnit?.USD);
      if (dimension.unit === 'Hrs' && Number.isFinite(usd) && usd > 0) return { region, usd_per_hour: usd };
    }
  }
  return undefined;
}

/**
 * Fetches the on-demand Linux price of each instance type in every region AWS lists it, one
 * paginated `GetProducts` query per type.
 *
 * @param client - a Pricing client for `us-east-1` (the Price List Query API's endpoint region)
 * @param instanceTypes - EC2 instance types to price
 * @param asOf - the date stored as each row's `as_of`, `YYYY-MM-DD` (the caller's clock)
 * @returns rows sorted by instance type, then region; a type or region AWS does not price has no row
 * @throws {PriceListError} when AWS lists two different prices for one type and region
 * @throws whatever the client throws (no credentials, throttled): nothing is written then
 */
export async function fetchOnDemandPrices(
  client: PricingClient,
  instanceTypes: readonly string[],
  asOf: string,
): Promise<OnDemandPriceRow[]> {
  const source = priceListSource(asOf);
  const rows = new Map<string, OnDemandPriceRow>();
  for (const instanceType of instanceTypes) {
    let nextToken: string | undefined;
    do {
      const answer = await client.send(
        new GetProductsCommand({
          ServiceCode: 'AmazonEC2',
          FormatVersion: 'aws_v1',
          MaxResults: GET_PRODUCTS_MAX_RESULTS,
          Filters: [
            { Type: 'TERM_MATCH', Field: 'instanceType', Value: instanceType },
            ...Object.entries(ON_DEMAND_LINUX_FILTERS).map(([Field, Value]) => ({
              Type: 'TERM_MATCH' as const,
              Field,
              Value,
            })),
          ],
          ...(nextToken !== undefined ? { NextToken: nextToken } : {}),
        }),
      );
      for (const text of answer.PriceList ?? []) {
        const price = parsePriceListProduct(String(text));
        if (price === undefined) continue;
        const key = `${instanceType}@${price.region}`;
        const seen = rows.get(key);
        if (seen !== undefined && seen.usd_per_hour !== price.usd_per_hour) {
          throw new PriceListError(
            `Expected one on-demand Linux price for ${instanceType} in ${price.region}, got ${seen.usd_per_hour} and ${price.usd_per_hour}; tighten the filters.`,
          );
        }
        rows.set(key, {
          instance_type: instanceType,
          region: price.region,
          usd_per_hour: price.usd_per_hour,
          source,
        });
      }
      nextToken = answer.NextToken;
    } while (nextToken !== undefined);
  }
  return [...rows.values()].sort(
    (a, b) => a.instance_type.localeCompare(b.instance_type) || a.region.localeCompare(b.region),
  );
}

/**
 * Renders rows as the TypeScript module `lambdas/domain/on-demand-prices.ts` (the bundled table).
 *
 * @param rows - price rows, all from one source (the Price List API read)
 * @param tableId - the table id stored with every ledger row, e.g. `aws-ec2-on-demand-linux-2026-12-01`
 * @returns the module text
 * @throws {PriceListError} when `rows` is empty or mixes sources (a refresh writes one source)
 */
export function renderPriceTableModule(rows: readonly OnDemandPriceRow[], tableId: string): string {
  const first = rows[0];
  if (first === undefined)
    throw new PriceListError('Expected at least one price row, got none; nothing written.');
  if (rows.some((r) => r.source.url !== first.source.url || r.source.as_of !== first.source.as_of)) {
    throw new PriceListError('Expected the rows of one refresh (one source and date), got several.');
  }
  const body = rows
    .map(
      (r) =>
        `  { instance_type: '${r.instance_type}', region: '${r.region}', usd_per_hour: ${r.usd_per_hour}, source: PRICE_LIST_API },`,
    )
    .join('\n');
  return `import type { OnDemandPriceRow, PriceRowSource } from './price-row';

/**
 * The bundled on-demand price table: EC2 Linux, shared tenancy, USD per instance-hour, one row per
 * instance type and region AWS prices. Written by \`npx tsx bin/refresh-prices.ts\`; a type or region
 * without a row is unpriced (never guessed).
 */

/** Id stored with every ledger row priced from this table (\`builtin:<id>\`). */
export const ON_DEMAND_PRICE_TABLE_ID = '${tableId}';

/** The AWS Price List Query API, read on ${first.source.as_of}. */
const PRICE_LIST_API: PriceRowSource = {
  name: '${first.source.name}',
  url: '${first.source.url}',
  as_of: '${first.source.as_of}',
};

/** The rows, sorted by instance type then region. */
export const ON_DEMAND_PRICES: readonly OnDemandPriceRow[] = [
${body}
];
`;
}
