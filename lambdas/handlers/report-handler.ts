import * as z from 'zod';
import { systemClock } from '../adapters/clock';
import { reportCsv } from '../adapters/report-csv';
import { renderReportHtml } from '../adapters/report-html';
import {
  buildWasteReport,
  REPORT_GROUPINGS,
  REPORT_PERIODS,
  type ReportFileSink,
  type ReportNotifier,
  reportPeriod,
  reportSnsMessage,
} from '../domain';
import type { Log } from './log';
import { gatherReportInput, type ReportStore } from './report-input';

/** The scheduled event: EventBridge Scheduler's input for the daily, weekly and monthly schedules. */
export const ReportEventSchema = z.object({
  period: z.enum(REPORT_PERIODS),
  by: z.enum(REPORT_GROUPINGS).default('team'),
});
/** A parsed report event. */
export type ReportEvent = z.infer<typeof ReportEventSchema>;

/** Media types of the files written. */
const CSV_TYPE = 'text/csv; charset=utf-8';
const HTML_TYPE = 'text/html; charset=utf-8';

/** Ports and settings of the report Lambda. */
export interface ReportHandlerDeps {
  readonly store: ReportStore;
  readonly files: ReportFileSink;
  readonly notifier: ReportNotifier;
  readonly log: Log;
  /** The clock. @default systemClock */
  readonly clock?: () => Date;
}

/** What a run wrote and announced. */
export interface ReportRunResult {
  readonly period: { readonly from: string; readonly to: string };
  /** Where each file went, by name. */
  readonly files: Readonly<Record<string, string>>;
  readonly wasted_usd: number;
}

/**
 * Builds the report Lambda (docs/design.md §9): on each scheduled run, the report over the period that
 * ended at the last UTC midnight (a whole day, week, or calendar month), one CSV per grouping and
 * the HTML page written to the reports bucket, then the message on the `reports` topic naming them.
 * Files first, message last, so nobody is sent to a file that is not there; a re-run rewrites the
 * same files.
 *
 * @param deps - ports
 * @returns the handler
 * @throws {z.ZodError} (from the handler) when the event is not `{ period, by? }`
 */
export function createReportHandler(deps: ReportHandlerDeps): (event: unknown) => Promise<ReportRunResult> {
  const clock = deps.clock ?? systemClock;
  return async (event) => {
    const { period: kind, by } = ReportEventSchema.parse(event);
    const now = clock();
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    const period = reportPeriod(kind, end);
    const input = await gatherReportInput(deps.store, period, REPORT_GROUPINGS);
    const folder = `${kind}/${period.to.slice(0, 10)}`;
    const files: Record<string, string> = {};
    for (const grouping of REPORT_GROUPINGS) {
      const report = buildWasteReport({ ...input, period, by: grouping, generatedAt: now });
      files[`waste-by-${grouping}.csv`] = await deps.files.put(
        `${folder}/waste-by-${grouping}.csv`,
        reportCsv(report),
        CSV_TYPE,
      );
    }
    const report = buildWasteReport({ ...input, period, by, generatedAt: now });
    files['report.html'] = await deps.files.put(
      `${folder}/report.html`,
      await renderReportHtml(report),
      HTML_TYPE,
    );
    const message = reportSnsMessage(report, {
      csv: files[`waste-by-${by}.csv`] as string,
      html: files['report.html'] as string,
    });
    await deps.notifier.publish(message, { report_period: kind, group_by: by });
    deps.log.info('report written', { period, files, wasted_usd: report.totals.wasted_usd });
    return { period: { from: period.from, to: period.to }, files, wasted_usd: report.totals.wasted_usd };
  };
}
