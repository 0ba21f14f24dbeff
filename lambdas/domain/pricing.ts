import { PriceOverridesError } from './errors';
import { ON_DEMAND_PRICE_TABLE_ID, ON_DEMAND_PRICES } from './on-demand-prices';
import { readOverrideDocument } from './override-document';
import type { OnDemandPriceRow } from './price-row';

/**
 * Instance prices for the waste ledger (docs/design.md §5): a built-in table of on-demand Linux list prices
 * per instance type and region, and the deployment's own rates (Savings Plans, Capacity Blocks,
 * negotiated overrides, spot). An instance type or region nobody priced is **unpriced** (0 USD/hour),
 * never guessed; so is a spot host without a spot price or discount.
 */

/**
 * Id of the built-in price table, stored with every ledger row as `builtin:<id>`. The table has one
 * row per instance type and region, each with its own source and date (see `on-demand-prices.ts`).
 */
export const BUILTIN_PRICE_TABLE_ID = ON_DEMAND_PRICE_TABLE_ID;

/** The built-in table indexed `type@region` → row. */
const BUILTIN_BY_KEY: ReadonlyMap<string, OnDemandPriceRow> = new Map(
  ON_DEMAND_PRICES.map((row) => [rateKey(row.instance_type, row.region), row]),
);

/**
 * The key of a rate: `type@region`, e.g. `p5.48xlarge@us-east-1`.
 *
 * @param instanceType - EC2 instance type
 * @param region - AWS region code
 * @returns `instanceType@region`
 */
export function rateKey(instanceType: string, region: string): string {
  return `${instanceType}@${region}`;
}

/**
 * The on-demand row of the built-in table for a type in a region.
 *
 * @param instanceType - EC2 instance type, e.g. `p5.48xlarge`
 * @param region - AWS region code, e.g. `eu-north-1`
 * @returns the row (price, source, date), or undefined when the table has no price for it
 */
export function onDemandPrice(instanceType: string, region: string): OnDemandPriceRow | undefined {
  return BUILTIN_BY_KEY.get(rateKey(instanceType, region));
}

const oneGpuSizes = ['xlarge', '2xlarge', '4xlarge', '8xlarge', '16xlarge'] as const;

function family(name: string, one: number, four: number, eight: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const size of oneGpuSizes) out[`${name}.${size}`] = one;
  out[`${name}.12xlarge`] = four;
  out[`${name}.24xlarge`] = four;
  out[`${name}.48xlarge`] = eight;
  return out;
}

/**
 * GPUs per instance type, the `N` the instance price is split over. Source: AWS accelerated-computing
 * instance pages as summarised in docs/aws.md §2 and docs/nvml.md §9 (8 on p5.48xlarge).
 */
export const GPU_COUNT_BY_INSTANCE_TYPE: Readonly<Record<string, number>> = {
  'p4d.24xlarge': 8,
  'p4de.24xlarge': 8,
  'p5.48xlarge': 8,
  'p5e.48xlarge': 8,
  'p5en.48xlarge': 8,
  'p5.4xlarge': 1,
  'p6-b200.48xlarge': 8,
  ...family('g5', 1, 4, 8),
  ...family('g6', 1, 4, 8),
  ...family('g6e', 1, 4, 8),
};

/**
 * Deployment price overrides, USD/hour by instance type (`{ "p5.48xlarge": 31.5 }`). They win over
 * the built-in table and apply in every region.
 */
export type PriceOverrides = Readonly<Record<string, number>>;

/**
 * The deployment's own rates, USD per instance-hour, each keyed by `type@region` (that region only)
 * or by `type` (every region); `type@region` wins. They are what finance actually pays, where the
 * list price is not.
 */
export interface PriceRates {
  /**
   * Capacity Block effective hourly rates (the reservation fee spread over the block's hours plus
   * the OS fee), for hosts that run on Capacity Blocks. Win over Savings Plans and overrides.
   * @default {} (none)
   */
  readonly capacity_blocks?: Readonly<Record<string, number>>;
  /**
   * Savings Plans (or Reserved Instance) effective hourly rates, from the plan's purchase or Cost
   * Explorer. Apply to on-demand hosts only (AWS applies no Savings Plan to Spot).
   * @default {} (none)
   */
  readonly savings_plans?: Readonly<Record<string, number>>;
  /**
   * Spot prices, e.g. the mean of EC2 `DescribeSpotPriceHistory` over the period. Apply to spot hosts only.
   * @default {} (none)
   */
  readonly spot?: Readonly<Record<string, number>>;
  /**
   * Fraction off the on-demand price for a spot host with no `spot` rate, 0 ≤ d < 1 (0.6 = 60 % off),
   * from the deployment's own Spot savings (Cost Explorer or the Spot console's savings summary).
   * Without it (and without a `spot` rate) a spot host is unpriced, never billed at on-demand.
   * @default undefined
   */
  readonly spot_discount?: number;
}

/** What a host's billing is, as the agent says (`host.lifecycle`). @default 'on-demand' */
export type PurchaseOption = 'on-demand' | 'spot';

/**
 * Where a price came from: a Capacity Block or Savings Plans rate, a deployment override, a spot
 * rate, the built-in table less the spot discount, the built-in table, or nowhere (`unpriced`, 0).
 */
export type PriceSource =
  | 'capacity_block'
  | 'savings_plan'
  | 'override'
  | 'spot'
  | `spot_discount:${string}`
  | `builtin:${string}`
  | 'unpriced';

/** Where a GPU count came from: the built-in table, the GPUs seen in the batch, or the default 1. */
export type GpuCountSource = 'table' | 'observed' | 'default';

/** The price of one instance, as the ledger needs it. */
export interface InstancePrice {
  /** Instance price, USD/hour, ≥ 0 (0 when unpriced). */
  readonly price_usd_per_hour: number;
  /** See {@link PriceSource}. */
  readonly price_source: PriceSource;
  /** GPUs the price is split over, ≥ 1. */
  readonly gpu_count: number;
  /** How `gpu_count` was found. */
  readonly gpu_count_source: GpuCountSource;
}

/** Options of {@link priceFor} beyond the legacy overrides. */
export interface PriceTerms {
  /** The host's billing (`host.lifecycle`). @default 'on-demand' */
  readonly lifecycle?: PurchaseOption;
  /** The deployment's own rates. @default {} */
  readonly rates?: PriceRates;
}

function gpuCountOf(instanceType: string, observedGpuCount: number | undefined) {
  const tableCount = GPU_COUNT_BY_INSTANCE_TYPE[instanceType];
  if (tableCount !== undefined) return { gpu_count: tableCount, gpu_count_source: 'table' as const };
  if (observedGpuCount !== undefined && Number.isInteger(observedGpuCount) && observedGpuCount >= 1) {
    return { gpu_count: observedGpuCount, gpu_count_source: 'observed' as const };
  }
  return { gpu_count: 1, gpu_count_source: 'default' as const };
}

function rateOf(
  table: Readonly<Record<string, number>> | undefined,
  instanceType: string,
  region: string,
): number | undefined {
  if (table === undefined) return undefined;
  const exact = rateKey(instanceType, region);
  if (Object.hasOwn(table, exact)) return table[exact];
  return Object.hasOwn(table, instanceType) ? table[instanceType] : undefined;
}

/**
 * Prices an instance. On-demand hosts: Capacity Block rate, else Savings Plans rate, else override,
 * else the built-in table for the region, else unpriced. Spot hosts: spot rate, else the built-in
 * on-demand price less `spot_discount`, else unpriced. Rates keyed `type@region` win over `type`.
 *
 * @param instanceType - EC2 instance type, e.g. `p5.48xlarge`
 * @param region - AWS region of the instance, e.g. `us-east-1`
 * @param overrides - deployment prices, USD/hour by instance type; any region; on-demand hosts only
 * @param observedGpuCount - distinct GPUs seen in the batch (integer ≥ 1), used when the type is not in {@link GPU_COUNT_BY_INSTANCE_TYPE}
 * @param terms - the host's lifecycle and the deployment's rates, see {@link PriceTerms}
 * @returns `{ price_usd_per_hour, price_source, gpu_count, gpu_count_source }`; `gpu_count` from the table, else `observedGpuCount`, else 1
 * @example
 * priceFor('p5.48xlarge', 'eu-north-1'); // { price_usd_per_hour: 58.8928, price_source: 'builtin:aws-ec2-on-demand-linux-2026-11-23', gpu_count: 8, … }
 * priceFor('p5.48xlarge', 'us-east-1', undefined, 8, { lifecycle: 'spot', rates: { spot_discount: 0.6 } }); // 22.016, 'spot_discount:0.6'
 */
export function priceFor(
  instanceType: string,
  region: string,
  overrides?: PriceOverrides,
  observedGpuCount?: number,
  terms?: PriceTerms,
): InstancePrice {
  const count = gpuCountOf(instanceType, observedGpuCount);
  const priced = (price_usd_per_hour: number, price_source: PriceSource): InstancePrice => ({
    price_usd_per_hour,
    price_source,
    ...count,
  });
  const rates = terms?.rates ?? {};
  const builtin = onDemandPrice(instanceType, region);
  if (terms?.lifecycle === 'spot') {
    const spot = rateOf(rates.spot, instanceType, region);
    if (spot !== undefined) return priced(spot, 'spot');
    const d = rates.spot_discount;
    if (d !== undefined && builtin !== undefined) {
      return priced(builtin.usd_per_hour * (1 - d), `spot_discount:${d}`);
    }
    return priced(0, 'unpriced');
  }
  const block = rateOf(rates.capacity_blocks, instanceType, region);
  if (block !== undefined) return priced(block, 'capacity_block');
  const plan = rateOf(rates.savings_plans, instanceType, region);
  if (plan !== undefined) return priced(plan, 'savings_plan');
  const override = rateOf(overrides, instanceType, region);
  if (override !== undefined) return priced(override, 'override');
  if (builtin !== undefined) return priced(builtin.usd_per_hour, `builtin:${BUILTIN_PRICE_TABLE_ID}`);
  return priced(0, UNPRICED_SOURCE);
}

/**
 * True when a price source means "nobody priced this host" (costed at 0): every report lists such
 * hosts by name.
 *
 * @param priceSource - a ledger row's `price_source`
 * @returns whether the host is unpriced
 */
export function isUnpriced(priceSource: string): boolean {
  return priceSource === UNPRICED_SOURCE;
}

/** The `price_source` of a host nobody priced (costed at 0), as stored with every ledger row. */
export const UNPRICED_SOURCE = 'unpriced' satisfies PriceSource;

const INSTANCE_TYPE_PATTERN = /^[a-z0-9-]+\.[a-z0-9-]+$/;

/**
 * Parses the deployment's price-override JSON (stack prop / environment variable).
 *
 * @param json - `{ "<instance type>": <USD/hour ≥ 0> }`; `undefined` or blank means no overrides
 * @returns the overrides, frozen
 * @throws {PriceOverridesError} when the text is not JSON, not an object, a key is not an instance
 *   type like `p5.48xlarge`, or a value is not a finite number ≥ 0; the error names the key and value
 * @example
 * parsePriceOverrides('{"p5.48xlarge": 31.5}'); // { 'p5.48xlarge': 31.5 }
 */
export function parsePriceOverrides(json: string | undefined): PriceOverrides {
  const entries = readOverrideDocument(json, 'price overrides', '{"p5.48xlarge": 31.5}', PriceOverridesError);
  if (entries === undefined) return Object.freeze({});
  const out: Record<string, number> = {};
  for (const [key, price] of entries) {
    if (!INSTANCE_TYPE_PATTERN.test(key)) {
      throw new PriceOverridesError(
        key,
        price,
        `Expected price override keys to be EC2 instance types like \`p5.48xlarge\`, got \`${key}\`.`,
      );
    }
    if (typeof price !== 'number' || !Number.isFinite(price) || price < 0) {
      throw new PriceOverridesError(
        key,
        price,
        `Expected the price override for \`${key}\` to be a number of USD/hour >= 0, got \`${JSON.stringify(price)}\` (${typeof price}).`,
      );
    }
    out[key] = price;
  }
  return Object.freeze(out);
}

const RATE_KEY_PATTERN = /^[a-z0-9-]+\.[a-z0-9-]+(@[a-z]{2}(-[a-z]+)+-\d+)?$/;
/** The per-type sections of a {@link PriceRates} document (besides the scalar `spot_discount`). */
export const RATE_TABLES = ['capacity_blocks', 'savings_plans', 'spot'] as const;

/**
 * Parses the deployment's rates document (stack prop / environment variable / `--price-rates` file).
 *
 * @param json - `{ "capacity_blocks"?: {key: usd}, "savings_plans"?: {key: usd}, "spot"?: {key: usd},
 *   "spot_discount"?: d }` with keys `p5.48xlarge` or `p5.48xlarge@us-east-2`, USD/hour ≥ 0 and
 *   0 ≤ d < 1; `undefined` or blank means none
 * @returns the rates, frozen
 * @throws {PriceOverridesError} naming the bad entry (`savings_plans.p5.48xlarge`, `spot_discount`,
 *   or `(root)`) when the text is not JSON, a section is unknown, a key is not `type[@region]`, or a
 *   value is out of range
 * @example
 * parsePriceRates('{"savings_plans": {"p5.48xlarge": 34.68}, "spot_discount": 0.6}');
 */
export function parsePriceRates(json: string | undefined): PriceRates {
  const entries = readOverrideDocument(
    json,
    'price rates',
    '{"savings_plans": {"p5.48xlarge": 34.68}}',
    PriceOverridesError,
  );
  const value = entries === undefined ? undefined : Object.fromEntries(entries);
  if (value === undefined) return Object.freeze({});
  const out: Record<string, unknown> = {};
  for (const [section, body] of Object.entries(value)) {
    if (section === 'spot_discount') {
      if (typeof body !== 'number' || !Number.isFinite(body) || body < 0 || body >= 1) {
        throw new PriceOverridesError(
          section,
          body,
          `Expected \`spot_discount\` to be a fraction >= 0 and < 1 (0.6 = 60 % off on-demand), got \`${JSON.stringify(body)}\`.`,
        );
      }
      out[section] = body;
      continue;
    }
    if (!(RATE_TABLES as readonly string[]).includes(section)) {
      throw new PriceOverridesError(
        section,
        body,
        `Expected price rate sections ${RATE_TABLES.join(', ')} or spot_discount, got \`${section}\`.`,
      );
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new PriceOverridesError(
        section,
        body,
        `Expected \`${section}\` to be an object of USD/hour by instance type.`,
      );
    }
    const table: Record<string, number> = {};
    for (const [key, usd] of Object.entries(body)) {
      if (!RATE_KEY_PATTERN.test(key)) {
        throw new PriceOverridesError(
          `${section}.${key}`,
          usd,
          `Expected \`${section}\` keys like \`p5.48xlarge\` or \`p5.48xlarge@us-east-2\`, got \`${key}\`.`,
        );
      }
      if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0) {
        throw new PriceOverridesError(
          `${section}.${key}`,
          usd,
          `Expected \`${section}.${key}\` to be a number of USD/hour >= 0, got \`${JSON.stringify(usd)}\` (${typeof usd}).`,
        );
      }
      table[key] = usd;
    }
    out[section] = Object.freeze(table);
  }
  return Object.freeze(out) as PriceRates;
}
