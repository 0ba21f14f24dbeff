import { ReportInputError } from './report-input-error';

/**
 * What the reports read of an AWS Cost and Usage Report 2.0 (AWS Data Exports) to price an
 * instance-hour at what the bill says (docs/finance.md, "Reconciling with the bill"). Column names
 * and meanings: the CUR 2.0 table dictionary,
 * https://docs.aws.amazon.com/cur/latest/userguide/table-dictionary-cur2.html (line item columns:
 * table-dictionary-cur2-line-item.html; Savings Plans: table-dictionary-cur2-savings-plan.html;
 * reservations: table-dictionary-cur2-reservation.html; pricing: table-dictionary-cur2-pricing.html).
 */

/**
 * The CUR 2.0 columns the report reads, and nothing else (a CUR can be gigabytes: Parquet and
 * Athena read only these):
 *
 * - `line_item_resource_id`: the resource of the line item, the EC2 instance id for instance usage;
 * - `line_item_usage_start_date`, `line_item_usage_end_date`: the hour the line item covers (UTC);
 * - `line_item_usage_type`: e.g. `USE1-BoxUsage:p5.48xlarge`, `USE1-SpotUsage:p5.48xlarge`;
 *   instance-hours are the usage types with `Usage:` (data transfer and EBS have none);
 * - `line_item_line_item_type`: `Usage`, `SavingsPlanCoveredUsage`, `DiscountedUsage`, …;
 * - `line_item_usage_amount`: the hours of the line item (≤ 1 per instance-hour);
 * - `line_item_unblended_cost`, `savings_plan_savings_plan_effective_cost`,
 *   `reservation_effective_cost`: the cost of each kind of line item (see {@link CUR_EFFECTIVE_COST});
 * - `pricing_term`: `OnDemand`, `Reserved` or `Spot`.
 */
export const CUR_REQUIRED_COLUMNS = [
  'line_item_resource_id',
  'line_item_usage_start_date',
  'line_item_usage_end_date',
  'line_item_usage_type',
  'line_item_line_item_type',
  'line_item_usage_amount',
  'line_item_unblended_cost',
  'savings_plan_savings_plan_effective_cost',
  'reservation_effective_cost',
  'pricing_term',
] as const;
/** One of {@link CUR_REQUIRED_COLUMNS}. */
export type CurColumn = (typeof CUR_REQUIRED_COLUMNS)[number];

/**
 * The column holding the effective cost of each kind of instance-hour line item: Savings Plan
 * covered usage at the plan's effective cost, reserved usage at the reservation's effective cost
 * (upfront amortized plus recurring), and other usage (on-demand, spot, Capacity Blocks) at its
 * unblended cost. Other line item types (fees, credits, refunds, taxes) are not instance-hours.
 */
export const CUR_EFFECTIVE_COST = {
  SavingsPlanCoveredUsage: 'savings_plan_savings_plan_effective_cost',
  DiscountedUsage: 'reservation_effective_cost',
  Usage: 'line_item_unblended_cost',
} as const satisfies Readonly<Record<string, CurColumn>>;

/** The `price_source` of a window priced from the CUR (an on-demand, Savings Plan, reserved or Capacity Block hour). */
export const CUR_PRICE_SOURCE = 'cur';
/** The `price_source` of a window priced from the CUR whose `pricing_term` is `Spot`. */
export const CUR_SPOT_PRICE_SOURCE = 'cur:spot';

/** How much of a report the CUR priced. */
export interface CurCoverage {
  /** Where the CUR was read: a file or folder locally, `"database"."table"` in AWS. */
  readonly source: string;
  /** Instance-hours of the report with GPU windows, count. */
  readonly instance_hours: number;
  /** Of those, the ones the CUR priced (it had an instance-hour line item for them), count. */
  readonly covered_instance_hours: number;
  /** The earliest and latest `line_item_usage_start_date` of the CUR's instance-hours, ISO 8601; absent when it has none. */
  readonly usage_from?: string;
  readonly usage_to?: string;
}

/**
 * Checks that a CUR has every column the report reads.
 *
 * @param present - the CUR's column names (case as the export writes them, lower snake case)
 * @param source - the file, folder or table, named in the error
 * @throws {ReportInputError} with `field` the first missing column, naming every missing one
 */
export function assertCurColumns(present: Iterable<string>, source: string): void {
  const have = new Set([...present].map((c) => c.toLowerCase()));
  const missing = CUR_REQUIRED_COLUMNS.filter((c) => !have.has(c));
  if (missing.length > 0) {
    throw new ReportInputError(
      missing[0] as string,
      source,
      `Expected a Cost and Usage Report 2.0 with the column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, and ${source} lacks ${missing.length > 1 ? 'them' : 'it'}; export CUR 2.0 (AWS Data Exports) with these columns.`,
    );
  }
}

/**
 * The sentence a report prints about its CUR: how many instance-hours it priced, and, when it
 * priced none or only some, the span its instance-hours cover (a CUR of another account or period
 * prices nothing).
 *
 * @param c - the coverage
 * @returns one sentence
 * @example
 * curCoverageNote({ source: 'cur/', instance_hours: 48, covered_instance_hours: 24 });
 * // 'The CUR (cur/) priced 24 of 48 instance-hours (50.0 %) at their effective cost; the other hours keep their list price, rate or spot price (price_source says which).'
 */
export function curCoverageNote(c: CurCoverage): string {
  const share =
    c.instance_hours > 0 ? ((100 * c.covered_instance_hours) / c.instance_hours).toFixed(1) : '0.0';
  const span =
    c.usage_from !== undefined && c.usage_to !== undefined
      ? ` Its instance-hours run from ${c.usage_from} to ${c.usage_to}.`
      : ' It holds no instance-hours.';
  const head = `The CUR (${c.source}) priced ${c.covered_instance_hours} of ${c.instance_hours} instance-hours (${share} %) at their effective cost`;
  if (c.covered_instance_hours === c.instance_hours) return `${head}.`;
  return `${head}; the other hours keep their list price, rate or spot price (price_source says which).${c.covered_instance_hours === 0 ? `${span} Is it of another account or period?` : ''}`;
}
