import {
  buildWasteReport,
  type CurCoverage,
  type Log,
  REPORT_GROUPINGS,
  type REPORT_PERIODS,
  type ReportFileSink,
  type ReportGrouping,
  type ReportNotifier,
  reportLocalDate,
  reportPeriod,
  reportSnsMessage,
  type WasteReport,
} from '../domain';
import { gatherReportInput, type ReportStore } from './report-input';

/** Media types of the files written. */
const CSV_TYPE = 'text/csv; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';

/** How a report becomes files: the renderers the caller wires (CSV and the HTML page with charts). */
export interface ReportRenderers {
  /** One CSV of the report's groups (`reportCsv`). */
  readonly csv: (report: WasteReport) => string;
  /** The self-contained HTML page (`renderReportHtml`). */
  readonly html: (report: WasteReport) => Promise<string>;
}

/**
 * The report's reads priced from a Cost and Usage Report (`AthenaCurReads`): the same reads as
 * the store's, every instance-hour the CUR bills at its effective cost, and what the CUR covered.
 */
export interface CurPricedReads extends ReportStore {
  /**
   * Checks the CUR has every column the report reads.
   * @throws {ReportInputError} naming the first missing column
   */
  checkColumns(): Promise<void>;
  /** How many instance-hours of the range the CUR priced, and when its own instance-hours are. */
  coverage(range: { readonly from: Date; readonly to: Date }): Promise<CurCoverage>;
}

/** What `writeReport` is given: the store it reads, where files go, who is told, how files are made. */
export interface WriteReportDeps {
  /** Where the ledger is read (the deployment's telemetry store). */
  readonly store: ReportStore;
  /**
   * The store's reads priced from the deployment's CUR; when given, the report reads through it
   * instead of `store`. @default undefined (stored prices)
   */
  readonly cur?: CurPricedReads;
  /** Where the files go (the encrypted reports bucket). */
  readonly files: ReportFileSink;
  /** Who is told (the `reports` topic). */
  readonly notifier: ReportNotifier;
  /** How the report becomes files. */
  readonly render: ReportRenderers;
  /** The structured log. */
  readonly log: Log;
}

/** What a run wrote and announced. */
export interface ReportRunResult {
  /** The period reported, ISO 8601 UTC: `[from, to)`. */
  readonly period: { readonly from: string; readonly to: string };
  /** Where each file went, by name (`waste-by-<grouping>.csv`, `report.html`). */
  readonly files: Readonly<Record<string, string>>;
  /** Wasted dollars over the period, USD. */
  readonly wasted_usd: number;
}

/**
 * One scheduled finance report (docs/design.md §9): the report over the last whole calendar period
 * before `now` (yesterday, last ISO week, last month; see `reportPeriod`) in `timeZone`, one CSV per
 * grouping and the HTML page (grouped `by`) written under `<kind>/<end date>/`, then the message on
 * the reports topic naming them. Files first, message last, so nobody is sent to a file that is not
 * there; a re-run rewrites the same files.
 *
 * @param kind - `day`, `week` or `month`
 * @param by - the grouping of the HTML page and the message
 * @param deps - store, file sink, notifier, renderers, log
 * @param now - the clock: the period is the last whole one ending at or before it
 * @param timeZone - IANA zone of the calendar. @default 'UTC'
 * @returns the period, the files and the wasted dollars
 * @throws {ReportInputError} when the time zone is unknown, or the CUR lacks a column (nothing written)
 * @throws whatever the store, the file sink or the notifier throws (nothing is announced then)
 */
export async function writeReport(
  kind: (typeof REPORT_PERIODS)[number],
  by: ReportGrouping,
  deps: WriteReportDeps,
  now: Date,
  timeZone = 'UTC',
): Promise<ReportRunResult> {
  const period = reportPeriod(kind, now, timeZone);
  await deps.cur?.checkColumns();
  const input = await gatherReportInput(deps.cur ?? deps.store, period, REPORT_GROUPINGS);
  const cur = await deps.cur?.coverage({ from: new Date(period.from), to: new Date(period.to) });
  const priced = cur !== undefined ? { cur } : {};
  const folder = `${kind}/${reportLocalDate(period.to, period.time_zone)}`;
  const files: Record<string, string> = {};
  for (const grouping of REPORT_GROUPINGS) {
    const report = buildWasteReport({ ...input, ...priced, period, by: grouping, generatedAt: now });
    files[`waste-by-${grouping}.csv`] = await deps.files.put(
      `${folder}/waste-by-${grouping}.csv`,
      deps.render.csv(report),
      CSV_TYPE,
    );
  }
  const report = buildWasteReport({ ...input, ...priced, period, by, generatedAt: now });
  files['report.html'] = await deps.files.put(
    `${folder}/report.html`,
    await deps.render.html(report),
    HTML_TYPE,
  );
  const message = reportSnsMessage(report, {
    csv: files[`waste-by-${by}.csv`] as string,
    html: files['report.html'] as string,
  });
  await deps.notifier.publish(message, { report_period: kind, group_by: by });
  deps.log.info('report written', { period, files, wasted_usd: report.totals.wasted_usd });
  return { period: { from: period.from, to: period.to }, files, wasted_usd: report.totals.wasted_usd };
}
