import { stringify } from 'csv-stringify/sync';
import { usdCents } from '../domain/money-format';
import type { ReportGroup, WasteReport } from '../domain/waste-report';

/**
 * The finance report as CSV that a spreadsheet opens cleanly: UTF-8 with a byte-order mark (so Excel
 * reads it as UTF-8), CRLF rows (RFC 4180), a header row, ISO 8601 dates, USD with cents, and no cell
 * a spreadsheet would run as a formula.
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
 * Renders the report's groups as CSV (csv-stringify): BOM, header, one CRLF row per group in the
 * report's order, every cell neutralised against formula injection.
 *
 * @param report - the report
 * @returns the CSV text, starting with U+FEFF
 */
export function reportCsv(report: WasteReport): string {
  const records = report.groups.map((g) => {
    const r = row(report, g);
    return REPORT_CSV_COLUMNS.map((c) => neutraliseFormula(r[c]));
  });
  return stringify(records, {
    bom: true,
    header: true,
    columns: [...REPORT_CSV_COLUMNS],
    record_delimiter: 'windows',
  });
}
