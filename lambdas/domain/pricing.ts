import { PriceOverridesError } from './errors';
import { readOverrideDocument } from './override-document';

/**
 * Instance prices for the waste ledger (DESIGN §5): a built-in table of on-demand Linux list prices,
 * overridden per deployment (negotiated rates, Savings Plans, spot, Capacity Blocks). An instance
 * type or region the table does not know is **unpriced** (0 USD/hour), never guessed.
 */

/**
 * Id of the built-in price table, stored with every ledger row as `builtin:<id>`.
 * Source: reference/aws.md §6.1 (on-demand, us-east-1, Linux, after the June 2025 P4/P5 cuts;
 * secondary sources "as of March 2026"; p6-b200 is its GA list price of 2025-05-15).
 */
export const BUILTIN_PRICE_TABLE_ID = 'aws-on-demand-us-east-1-2026-03';

/** The only region the built-in table has prices for. Source: reference/aws.md §6.1. */
export const BUILTIN_PRICE_REGION = 'us-east-1';

/**
 * On-demand Linux list price, USD/hour, by instance type, in {@link BUILTIN_PRICE_REGION}.
 * Only prices the reference gives: p4de, p5e, p5en (Capacity Blocks only) and the larger g5/g6 sizes
 * are absent on purpose and come out unpriced. Source: reference/aws.md §6.1.
 */
export const BUILTIN_PRICES_USD_PER_HOUR: Readonly<Record<string, number>> = {
  'p4d.24xlarge': 21.96,
  'p5.48xlarge': 55.04,
  'p5.4xlarge': 6.88,
  'p6-b200.48xlarge': 113.9328,
  'g5.xlarge': 1.006,
  'g5.2xlarge': 1.212,
  'g5.4xlarge': 1.64,
  'g6.xlarge': 0.805,
  'g6e.xlarge': 1.86,
  'g6e.2xlarge': 2.24,
  'g6e.12xlarge': 10.49,
};

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
 * instance pages as summarised in reference/aws.md §6.1 and reference/gpu.md §3.2 (8 on p5.48xlarge).
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

/** Where a price came from: a deployment override, the built-in table, or nowhere (`unpriced`, 0). */
export type PriceSource = 'override' | `builtin:${string}` | 'unpriced';

/** Where a GPU count came from: the built-in table, the GPUs seen in the batch, or the default 1. */
export type GpuCountSource = 'table' | 'observed' | 'default';

/** The price of one instance, as the ledger needs it. */
export interface InstancePrice {
  /** Instance price, USD/hour, ≥ 0 (0 when unpriced). */
  readonly price_usd_per_hour: number;
  /** `override`, `builtin:<table id>`, or `unpriced`. */
  readonly price_source: PriceSource;
  /** GPUs the price is split over, ≥ 1. */
  readonly gpu_count: number;
  /** How `gpu_count` was found. */
  readonly gpu_count_source: GpuCountSource;
}

/**
 * Prices an instance: override, else the built-in table (in its region only), else unpriced (0).
 *
 * @param instanceType - EC2 instance type, e.g. `p5.48xlarge`
 * @param region - AWS region of the instance, e.g. `us-east-1`; the table only prices {@link BUILTIN_PRICE_REGION}
 * @param overrides - deployment prices, USD/hour by instance type; any region
 * @param observedGpuCount - distinct GPUs seen in the batch (integer ≥ 1), used when the type is not in {@link GPU_COUNT_BY_INSTANCE_TYPE}
 * @returns `{ price_usd_per_hour, price_source, gpu_count, gpu_count_source }`; `gpu_count` from the table, else `observedGpuCount`, else 1
 * @example
 * priceFor('p5.48xlarge', 'us-east-1'); // { price_usd_per_hour: 55.04, price_source: 'builtin:aws-on-demand-us-east-1-2026-03', gpu_count: 8, … }
 */
export function priceFor(
  instanceType: string,
  region: string,
  overrides?: PriceOverrides,
  observedGpuCount?: number,
): InstancePrice {
  const tableCount = GPU_COUNT_BY_INSTANCE_TYPE[instanceType];
  let gpu_count = 1;
  let gpu_count_source: GpuCountSource = 'default';
  if (tableCount !== undefined) {
    gpu_count = tableCount;
    gpu_count_source = 'table';
  } else if (observedGpuCount !== undefined && Number.isInteger(observedGpuCount) && observedGpuCount >= 1) {
    gpu_count = observedGpuCount;
    gpu_count_source = 'observed';
  }
  const override =
    overrides !== undefined && Object.hasOwn(overrides, instanceType) ? overrides[instanceType] : undefined;
  if (override !== undefined) {
    return { price_usd_per_hour: override, price_source: 'override', gpu_count, gpu_count_source };
  }
  const builtin = region === BUILTIN_PRICE_REGION ? BUILTIN_PRICES_USD_PER_HOUR[instanceType] : undefined;
  if (builtin !== undefined) {
    return {
      price_usd_per_hour: builtin,
      price_source: `builtin:${BUILTIN_PRICE_TABLE_ID}`,
      gpu_count,
      gpu_count_source,
    };
  }
  return { price_usd_per_hour: 0, price_source: 'unpriced', gpu_count, gpu_count_source };
}

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
