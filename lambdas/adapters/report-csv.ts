import { stringify } from 'csv-stringify/sync';
import type { ReportGroup, ReportGrouping, WasteReport } from '../domain/build-waste-report';
import { usdCents } from '../domain/money-format';
import { type LineItemGrain, lifecycleOfPriceSource, type ReportLineItem } from '../domain/report-line-items';
import { DIAGNOSES, type WasteReportRow } from '../domain/types';
import { diagnosisColumn, wasteGroupColumn } from './store-reads';

/**
 * The finance report as CSV that a spreadsheet opens cleanly: UTF-8 with a byte-order mark (so Excel
 * reads it as UTF-8), CRLF rows (RFC 4180), a header row, ISO 8601 dates, USD with cents, and no cell
 * a spreadsheet would run as a formula. One writer for both of its CSVs: the groups of a report
 * ({@link reportCsv}: the report Lambda, `gpu-sentinel report`) and its per-GPU line items
 * ({@link wasteCsv}: `waste.csv` of `gpu-sentinel local`).
 */

/**
 * The money columns of a grouped report CSV after `period_from`, `period_to` and the grouping's own
 * column, in order.
 */
const GROUP_MONEY_COLUMNS = [
  'gpu_hours',
  'cost_usd',
  'wasted_usd',
  'wasted_pct',
  'idle_usd',
  'held_idle_usd',
  'underused_usd',
  'broken_usd',
  'unpriced',
  // Added later, at the end, so a reader of the earlier columns by position still reads them.
  'throttled_usd',
] as const;

/**
 * Columns of the report CSV grouped by a store grouping, in order: `period_from`, `period_to`, the
 * grouping's own column (`team`, `job`, `namespace`, `pod`, `instance_type`, `diagnosis`), then
 * {@link GROUP_MONEY_COLUMNS}; so a pivot table needs no reshaping. Grouped by `instance` or `gpu`
 * the CSV is line items instead ({@link lineItemCsvColumns}).
 *
 * @param by - the report's grouping
 * @returns the header
 * @example
 * reportCsvColumns('team'); // ['period_from', 'period_to', 'team', 'gpu_hours', …, 'unpriced']
 */
export function reportCsvColumns(by: ReportGrouping): readonly string[] {
  if (by === 'instance' || by === 'gpu') return lineItemCsvColumns(by);
  return ['period_from', 'period_to', wasteGroupColumn(by), ...GROUP_MONEY_COLUMNS];
}

/**
 * Columns of the line-item CSV, in order: the period, the day, the tags, the instance (and GPU for
 * the `gpu` grain), its place and purchase option, the price and its source, GPU-hours, idle
 * GPU-hours, cost and wasted USD, each waste class, the USD lost to throttling (`throttled_usd`, not
 * part of `wasted_usd`), then one `wasted_<diagnosis>_usd` per cause.
 *
 * @param grain - `instance` (one row per instance and day) or `gpu` (per GPU and day)
 * @returns the header
 */
export function lineItemCsvColumns(grain: LineItemGrain): readonly string[] {
  return [
    'period_from',
    'period_to',
    'day',
    'team',
    'job',
    'namespace',
    'instance_id',
    ...(grain === 'gpu' ? ['gpu_index', 'gpu_instance_id', 'gpu_instance_profile'] : []),
    'instance_type',
    'region',
    'az',
    'lifecycle',
    'price_usd_per_hour',
    'price_source',
    'gpus',
    'gpu_hours',
    'idle_gpu_hours',
    'cost_usd',
    'wasted_usd',
    'idle_usd',
    'held_idle_usd',
    'underused_usd',
    'broken_usd',
    'throttled_usd',
    ...DIAGNOSES.map(diagnosisColumn),
  ];
}

/** First characters that make a spreadsheet cell a formula (OWASP "CSV injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * Makes a cell inert in a spreadsheet: a text that starts with `=`, `+`, `-`, `@`, tab or carriage
 * return gets a leading apostrophe, which spreadsheets show as text and never evaluate.
 *
 * @param cell - the cell text
 * @returns the cell, neutralised when needed
 * @example
 * neutraliseFormula('=HYPERLINK("http://x")'); // "'=HYPERLINK(\"http://x\")"
 */
export function neutraliseFormula(cell: string): string {
  return FORMULA_START.test(cell) ? `'${cell}` : cell;
}

function groupRow(report: WasteReport, g: ReportGroup, column: string): Record<string, string> {
  return {
    period_from: report.period.from,
    period_to: report.period.to,
    [column]: g.key,
    gpu_hours: g.gpu_hours.toFixed(2),
    cost_usd: usdCents(g.cost_usd),
    wasted_usd: usdCents(g.wasted_usd),
    wasted_pct: g.cost_usd > 0 ? ((100 * g.wasted_usd) / g.cost_usd).toFixed(1) : '',
    idle_usd: usdCents(g.by_class.idle),
    held_idle_usd: usdCents(g.by_class.held_idle),
    underused_usd: usdCents(g.by_class.underused),
    broken_usd: usdCents(g.by_class.broken),
    unpriced: g.unpriced === undefined ? '' : String(g.unpriced),
    throttled_usd: usdCents(g.throttled_usd),
  };
}

/** Money and hours of a line item: 6 decimals (micro-dollars), so the rows sum to the totals. */
const micro = (n: number): string => n.toFixed(6);

function lineItemRow(report: WasteReport, i: ReportLineItem): Record<string, string> {
  const cells: Record<string, string> = {
    period_from: report.period.from,
    period_to: report.period.to,
    day: i.day,
    team: i.team ?? '',
    job: i.job ?? '',
    namespace: i.namespace ?? '',
    instance_id: i.instance_id,
    gpu_index: i.gpu_index === undefined ? '' : String(i.gpu_index),
    gpu_instance_id: i.gpu_instance_id === undefined ? '' : String(i.gpu_instance_id),
    gpu_instance_profile: i.gpu_instance_profile ?? '',
    instance_type: i.instance_type,
    region: i.region ?? '',
    az: i.az ?? '',
    lifecycle: i.lifecycle ?? '',
    price_usd_per_hour: String(i.price_usd_per_hour),
    price_source: i.price_source,
    gpus: String(i.gpus),
    gpu_hours: micro(i.gpu_hours),
    idle_gpu_hours: micro(i.idle_gpu_hours),
    cost_usd: micro(i.cost_usd),
    wasted_usd: micro(i.wasted_usd),
    idle_usd: micro(i.idle_usd),
    held_idle_usd: micro(i.held_idle_usd),
    underused_usd: micro(i.underused_usd),
    broken_usd: micro(i.broken_usd),
    throttled_usd: micro(i.throttled_usd),
  };
  for (const d of DIAGNOSES) cells[diagnosisColumn(d)] = micro(i.wasted_by_diagnosis_usd[d] ?? 0);
  return cells;
}

/**
 * The one CSV writer (csv-stringify): BOM, header, one CRLF row per record, every cell neutralised
 * against formula injection.
 *
 * @param columns - the header, in order
 * @param records - one cell text per column, by column name (a missing cell is empty)
 * @returns the CSV text, starting with U+FEFF
 */
function spreadsheetCsv(
  columns: readonly string[],
  records: readonly Readonly<Record<string, string>>[],
): string {
  return stringify(
    records.map((r) => columns.map((c) => neutraliseFormula(r[c] ?? ''))),
    { bom: true, header: true, columns: [...columns], record_delimiter: 'windows' },
  );
}

/**
 * Renders the report as CSV. Grouped by `instance` or `gpu`: its line items, one row per instance
 * (or GPU) and day with the columns of {@link lineItemCsvColumns}, money and hours to 6 decimals so
 * the rows sum to the report's totals. Grouped otherwise: one row per group in the report's order
 * with the columns of {@link reportCsvColumns}, USD with cents.
 *
 * @param report - the report
 * @returns the CSV text, starting with U+FEFF
 */
export function reportCsv(report: WasteReport): string {
  const columns = reportCsvColumns(report.by);
  if (report.by === 'instance' || report.by === 'gpu') {
    return spreadsheetCsv(
      columns,
      report.line_items.map((i) => lineItemRow(report, i)),
    );
  }
  const column = wasteGroupColumn(report.by);
  return spreadsheetCsv(
    columns,
    report.groups.map((g) => groupRow(report, g, column)),
  );
}

/** The fixed columns of the per-GPU line items (`waste.csv`). */
const WASTE_BASE_COLUMNS = [
  'instance_id',
  'instance_type',
  'gpu_index',
  'gpu_instance_id',
  'gpu_instance_profile',
  'team',
  'job',
  'gpu_hours',
  'price_usd_per_hour',
  'price_source',
  'cost_usd',
  'wasted_usd',
  'idle_usd',
  'held_idle_usd',
  'underused_usd',
  'broken_usd',
  'efficiency',
  'efficiency_source',
  'processes_unknown',
  // Added later, after the first columns, so a reader of the earlier columns by position still reads them.
  'namespace',
  'region',
  'az',
  'lifecycle',
  'idle_gpu_hours',
  'throttled_usd',
] as const;

/**
 * Column order of the per-GPU line items (`waste.csv`): one row per instance and GPU; after the
 * fixed columns one `wasted_<diagnosis>_usd` column per diagnosis (why the dollars were wasted; 0
 * when none). `throttled_usd` is the dollars lost to thermal or power throttling: beside the waste,
 * never in `wasted_usd` (the ledger's (cost − wasted) × throttle ratio, so wasted + throttled ≤ cost).
 */
export const WASTE_CSV_COLUMNS: readonly string[] = [
  ...WASTE_BASE_COLUMNS,
  ...DIAGNOSES.map(diagnosisColumn),
];

/**
 * Renders the ledger's per-GPU sums as CSV line items (`waste.csv`), in the rows' order. Money is
 * rounded to 6 decimals (micro-dollars) and GPU-hours to 6 decimals only here, at presentation; the
 * stored ledger is unrounded.
 *
 * @param rows - per-GPU sums from `TelemetryStore.queryWaste`
 * @returns the CSV text, starting with U+FEFF, with the columns of {@link WASTE_CSV_COLUMNS}
 */
export function wasteCsv(rows: readonly WasteReportRow[]): string {
  return spreadsheetCsv(
    WASTE_CSV_COLUMNS,
    rows.map((r) => {
      const cells: Record<string, string> = {
        instance_id: r.instance_id,
        instance_type: r.instance_type,
        region: r.region ?? '',
        az: r.az ?? '',
        lifecycle: lifecycleOfPriceSource(r.price_source) ?? '',
        gpu_index: String(r.gpu_index),
        gpu_instance_id: r.gpu_instance_id === undefined ? '' : String(r.gpu_instance_id),
        gpu_instance_profile: r.gpu_instance_profile ?? '',
        team: r.team ?? '',
        job: r.job ?? '',
        namespace: r.namespace ?? '',
        gpu_hours: r.gpu_hours.toFixed(6),
        idle_gpu_hours: r.idle_gpu_hours === undefined ? '' : r.idle_gpu_hours.toFixed(6),
        price_usd_per_hour: String(r.price_usd_per_hour),
        price_source: r.price_source,
        cost_usd: r.cost_usd.toFixed(6),
        wasted_usd: r.wasted_usd.toFixed(6),
        idle_usd: r.idle_usd.toFixed(6),
        held_idle_usd: r.held_idle_usd.toFixed(6),
        underused_usd: r.underused_usd.toFixed(6),
        broken_usd: r.broken_usd.toFixed(6),
        throttled_usd: r.throttled_usd.toFixed(6),
        efficiency: r.efficiency === undefined ? '' : r.efficiency.toFixed(4),
        efficiency_source: r.efficiency_source,
        processes_unknown: String(r.processes_unknown),
      };
      for (const d of DIAGNOSES) cells[diagnosisColumn(d)] = (r.wasted_by_diagnosis_usd[d] ?? 0).toFixed(6);
      return cells;
    }),
  );
}
