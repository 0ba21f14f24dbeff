import { stringify } from 'csv-stringify/sync';
import type { ReportGroup, WasteReport } from '../domain/build-waste-report';
import { usdCents } from '../domain/money-format';
import { DIAGNOSES, type WasteReportRow } from '../domain/types';
import { diagnosisColumn } from './store-reads';

/**
 * The finance report as CSV that a spreadsheet opens cleanly: UTF-8 with a byte-order mark (so Excel
 * reads it as UTF-8), CRLF rows (RFC 4180), a header row, ISO 8601 dates, USD with cents, and no cell
 * a spreadsheet would run as a formula. One writer for both of its CSVs: the groups of a report
 * ({@link reportCsv}: the report Lambda, `gpu-sentinel report`) and its per-GPU line items
 * ({@link wasteCsv}: `waste.csv` of `gpu-sentinel local`).
 */

/** Columns of the report CSV, one row per group, in order. */
export const REPORT_CSV_COLUMNS = [
  'period_from',
  'period_to',
  'group_by',
  'group',
  'gpus',
  'gpu_hours',
  'cost_usd',
  'wasted_usd',
  'wasted_pct',
  'idle_usd',
  'held_idle_usd',
  'underused_usd',
  'broken_usd',
  'efficiency',
  'unpriced',
] as const;

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

function row(report: WasteReport, g: ReportGroup): Record<(typeof REPORT_CSV_COLUMNS)[number], string> {
  return {
    period_from: report.period.from,
    period_to: report.period.to,
    group_by: report.by,
    group: g.key,
    gpus: g.gpus === undefined ? '' : String(g.gpus),
    gpu_hours: g.gpu_hours.toFixed(2),
    cost_usd: usdCents(g.cost_usd),
    wasted_usd: usdCents(g.wasted_usd),
    wasted_pct: g.cost_usd > 0 ? ((100 * g.wasted_usd) / g.cost_usd).toFixed(1) : '',
    idle_usd: usdCents(g.by_class.idle),
    held_idle_usd: usdCents(g.by_class.held_idle),
    underused_usd: usdCents(g.by_class.underused),
    broken_usd: usdCents(g.by_class.broken),
    efficiency: g.efficiency === undefined ? '' : g.efficiency.toFixed(4),
    unpriced: g.unpriced === undefined ? '' : String(g.unpriced),
  };
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
 * Renders the report's groups as CSV: one row per group in the report's order, with the columns of
 * {@link REPORT_CSV_COLUMNS}.
 *
 * @param report - the report
 * @returns the CSV text, starting with U+FEFF
 */
export function reportCsv(report: WasteReport): string {
  return spreadsheetCsv(
    REPORT_CSV_COLUMNS,
    report.groups.map((g) => row(report, g)),
  );
}

/** The fixed columns of the per-GPU line items (`waste.csv`). */
const WASTE_BASE_COLUMNS = [
  'instance_id',
  'instance_type',
  'gpu_index',
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
] as const;

/**
 * Column order of the per-GPU line items (`waste.csv`): one row per instance and GPU; after the
 * fixed columns one `wasted_<diagnosis>_usd` column per diagnosis (why the dollars were wasted; 0
 * when none).
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
        gpu_index: String(r.gpu_index),
        team: r.team ?? '',
        job: r.job ?? '',
        gpu_hours: r.gpu_hours.toFixed(6),
        price_usd_per_hour: String(r.price_usd_per_hour),
        price_source: r.price_source,
        cost_usd: r.cost_usd.toFixed(6),
        wasted_usd: r.wasted_usd.toFixed(6),
        idle_usd: r.idle_usd.toFixed(6),
        held_idle_usd: r.held_idle_usd.toFixed(6),
        underused_usd: r.underused_usd.toFixed(6),
        broken_usd: r.broken_usd.toFixed(6),
        efficiency: r.efficiency === undefined ? '' : r.efficiency.toFixed(4),
        efficiency_source: r.efficiency_source,
        processes_unknown: String(r.processes_unknown),
      };
      for (const d of DIAGNOSES) cells[diagnosisColumn(d)] = (r.wasted_by_diagnosis_usd[d] ?? 0).toFixed(6);
      return cells;
    }),
  );
}
