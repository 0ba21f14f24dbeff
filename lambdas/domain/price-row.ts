/**
 * The shape of the bundled on-demand price table (`on-demand-prices.ts`) and of what the price
 * refresh script writes: one row per instance type and region, with where its number came from.
 */

/** Where a row of the price table came from. */
export interface PriceRowSource {
  /** The publication read, e.g. the AWS Price List Query API or a generated file that copies it. */
  readonly name: string;
  /** A stable address of that publication (a commit permalink or the API endpoint). */
  readonly url: string;
  /** The date its prices are from, `YYYY-MM-DD` (the date it was read when it states none). */
  readonly as_of: string;
}

/** One on-demand price: EC2 Linux, shared tenancy, no pre-installed software. */
export interface OnDemandPriceRow {
  /** EC2 instance type, e.g. `p5.48xlarge`. */
  readonly instance_type: string;
  /** AWS region code, e.g. `us-east-1`. */
  readonly region: string;
  /** On-demand price, USD per instance-hour, > 0. Source: `source`. */
  readonly usd_per_hour: number;
  readonly source: PriceRowSource;
}
