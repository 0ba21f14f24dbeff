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
 * The CUR columns the report cannot do without, as CUR 2.0 and the legacy CUR's Athena/Parquet
 * integration name them (a legacy CSV's `lineItem/ResourceId` is read as `line_item_resource_id`,
 * see {@link curColumnName}); a CUR can be gigabytes: Parquet and Athena read only the columns named:
 *
 * - `line_item_resource_id`: the resource of the line item, the EC2 instance id for instance usage
 *   (present only when the export was made with "Include resource IDs");
 * - `line_item_usage_start_date`, `line_item_usage_end_date`: the hour the line item covers (UTC);
 * - `line_item_usage_type`: e.g. `USE1-BoxUsage:p5.48xlarge`, `USE1-SpotUsage:p5.48xlarge`;
 *   instance-hours are the usage types with `Usage:` (data transfer and EBS have none);
 * - `line_item_line_item_type`: `Usage`, `SavingsPlanCoveredUsage`, `DiscountedUsage`, …;
 * - `line_item_usage_amount`: the hours of the line item (≤ 1 per instance-hour);
 * - `line_item_unblended_cost`: the cost of a `Usage` line item (see {@link CUR_EFFECTIVE_COST});
 * - `pricing_term`: `OnDemand`, `Reserved`, `Spot` (a legacy CUR leaves it empty for Spot).
 */
export const CUR_REQUIRED_COLUMNS = [
  'line_item_resource_id',
  'line_item_usage_start_date',
  'line_item_usage_end_date',
  'line_item_usage_type',
  'line_item_line_item_type',
  'line_item_usage_amount',
  'line_item_unblended_cost',
  'pricing_term',
] as const;

/**
 * The CUR columns read when the CUR has them, `NULL` when it has not. A legacy CUR holds a column
 * only when the account has what it describes (legacy data dictionary,
 * https://docs.aws.amazon.com/cur/latest/userguide/data-dictionary.html): the Savings Plan columns
 * once it has a Savings Plan, the reservation ones once it has a reservation (and only since 2018),
 * the `Net…` ones when it has a discount (Enterprise Discount Program, private pricing); a CUR 2.0
 * export may be made with fewer columns than the table's:
 *
 * - `savings_plan_savings_plan_effective_cost`, `reservation_effective_cost`: the cost of a Savings
 *   Plan covered or a reserved line item (without it such an hour has no rate: it keeps its price);
 * - `line_item_net_unblended_cost`, `savings_plan_net_savings_plan_effective_cost`,
 *   `reservation_net_effective_cost`: the same after discounts, what the bill charges.
 */
export const CUR_OPTIONAL_COLUMNS = [
  'savings_plan_savings_plan_effective_cost',
  'reservation_effective_cost',
  'line_item_net_unblended_cost',
  'savings_plan_net_savings_plan_effective_cost',
  'reservation_net_effective_cost',
] as const;

/** One of {@link CUR_REQUIRED_COLUMNS} or {@link CUR_OPTIONAL_COLUMNS}. */
export type CurColumn = (typeof CUR_REQUIRED_COLUMNS)[number] | (typeof CUR_OPTIONAL_COLUMNS)[number];

/**
 * The columns holding the cost of each kind of instance-hour line item, net first: Savings Plan
 * covered usage at the plan's effective cost, reserved usage at the reservation's effective cost
 * (upfront amortized plus recurring), and other usage (on-demand, spot, Capacity Blocks) at its
 * unblended cost; each after discounts where the CUR has the net column and a net value in it (an
 * empty net, or a net of 0 where the gross is not, is read as no net). Other line item types are
 * not the instance's hours and price none of them: `SavingsPlanNegation` cancels the on-demand cost
 * of covered usage, `RIFee` and `SavingsPlanRecurringFee` are the commitments whose used part the
 * effective costs already carry, and `EdpDiscount`, `Credit`, `Refund` and `Tax` are billed per
 * account and product, not per resource (the net columns carry the discounts per line item).
 */
export const CUR_EFFECTIVE_COST = {
  SavingsPlanCoveredUsage: [
    'savings_plan_net_savings_plan_effective_cost',
    'savings_plan_savings_plan_effective_cost',
  ],
  DiscountedUsage: ['reservation_net_effective_cost', 'reservation_effective_cost'],
  Usage: ['line_item_net_unblended_cost', 'line_item_unblended_cost'],
} as const satisfies Readonly<Record<string, readonly [CurColumn, CurColumn]>>;

/** Where each column the report reads is in one CUR: its name there, or absent (an optional column it lacks). */
export type CurColumnMap = Readonly<Partial<Record<CurColumn, string>>>;

/**
 * A CUR column's name as CUR 2.0 and Athena write it: a legacy CSV header `category/Name` becomes
 * `category_name` in lower snake case, an underscore before every capital, as AWS's Athena
 * integration names it (`lineItem/UsageStartDate` → `line_item_usage_start_date`,
 * `savingsPlan/SavingsPlanARN` → `savings_plan_savings_plan_a_r_n`); other names are lower-cased.
 *
 * @param header - a column name as the export wrote it
 * @returns the lower snake case name
 */
export function curColumnName(header: string): string {
  const name = header.trim();
  if (!name.includes('/')) return name.toLowerCase();
  return name
    .replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    .replace(/\/_*/g, '_')
    .replace(/^_+/, '');
}

/**
 * Finds the columns the report reads among a CUR's, in any of the CUR's namings (CUR 2.0, legacy
 * CSV `lineItem/UsageAmount`, legacy Athena/Parquet `line_item_usage_amount`).
 *
 * @param present - the CUR's column names as its files or table give them
 * @param source - the file, folder or table, named in the error
 * @returns each column the report reads: the CUR's own name for it; optional columns it lacks are absent
 * @throws {ReportInputError} with `field` the first missing required column, naming every missing one
 */
export function resolveCurColumns(present: Iterable<string>, source: string): CurColumnMap {
  const have = new Map<string, string>();
  for (const column of present) {
    const name = curColumnName(column);
    if (!have.has(name)) have.set(name, column);
  }
  const missing = CUR_REQUIRED_COLUMNS.filter((c) => !have.has(c));
  if (missing.length > 0) {
    const ids = missing.includes('line_item_resource_id')
      ? ' (line_item_resource_id is there only when the export includes resource IDs)'
      : '';
    throw new ReportInputError(
      missing[0] as string,
      source,
      `Expected a Cost and Usage Report with the column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, and ${source} lacks ${missing.length > 1 ? 'them' : 'it'}${ids}; export CUR 2.0 (AWS Data Exports) with these columns and "Include resource IDs".`,
    );
  }
  const map: Partial<Record<CurColumn, string>> = {};
  for (const column of [...CUR_REQUIRED_COLUMNS, ...CUR_OPTIONAL_COLUMNS]) {
    const name = have.get(column);
    if (name !== undefined) map[column] = name;
  }
  return map;
}

/**
 * Checks that a CUR has every column the report cannot do without (see {@link resolveCurColumns}).
 *
 * @param present - the CUR's column names
 * @param source - the file, folder or table, named in the error
 * @throws {ReportInputError} with `field` the first missing column, naming every missing one
 */
export function assertCurColumns(present: Iterable<string>, source: string): void {
  resolveCurColumns(present, source);
}

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
