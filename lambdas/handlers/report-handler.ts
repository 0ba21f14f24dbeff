import * as z from 'zod';
import { systemClock } from '../adapters/clock';
import { reportCsv } from '../adapters/report-csv';
import { renderReportHtml } from '../adapters/report-html';
import type { ReportStore } from '../app/report-input';
import { type CurPricedReads, type ReportRunResult, writeReport } from '../app/write-report';
import {
  type Log,
  REPORT_GROUPINGS,
  REPORT_PERIODS,
  type ReportFileSink,
  type ReportNotifier,
} from '../domain';

/** What a report run wrote and announced (see `writeReport`). */
export type { ReportRunResult };

/** The scheduled event: EventBridge Scheduler's input for the daily, weekly and monthly schedules. */
export const ReportEventSchema = z.object({
  period: z.enum(REPORT_PERIODS),
  by: z.enum(REPORT_GROUPINGS).default('team'),
  /** IANA time zone of the calendar periods (checked by the report). @default 'UTC' */
  time_zone: z.string().min(1).default('UTC'),
});
/** A parsed report event. */
export type ReportEvent = z.infer<typeof ReportEventSchema>;

/** Ports and settings of the report Lambda. */
export interface ReportHandlerDeps {
  /** Where the ledger is read (the deployment's telemetry store). */
  readonly store: ReportStore;
  /** The store's reads priced from the deployment's CUR. @default undefined (stored prices) */
  readonly cur?: CurPricedReads;
  /** Where the CSV and HTML files go (the encrypted reports bucket). */
  readonly files: ReportFileSink;
  /** Who is told (the `reports` topic). */
  readonly notifier: ReportNotifier;
  /** The structured log. */
  readonly log: Log;
  /** The clock. @default systemClock */
  readonly clock?: () => Date;
}

/**
 * Builds the report Lambda (docs/design.md §9): parses the scheduled event and runs
 * {@link writeReport} with the CSV and HTML renderers, at the clock's time.
 *
 * @param deps - ports
 * @returns the handler
 * @throws {z.ZodError} (from the handler) when the event is not `{ period, by?, time_zone? }`
 * @throws {ReportInputError} (from the handler) when `time_zone` is not an IANA zone
 */
export function createReportHandler(deps: ReportHandlerDeps): (event: unknown) => Promise<ReportRunResult> {
  const clock = deps.clock ?? systemClock;
  const render = { csv: reportCsv, html: renderReportHtml };
  return async (event) => {
    const { period, by, time_zone } = ReportEventSchema.parse(event);
    return writeReport(period, by, { ...deps, render }, clock(), time_zone);
  };
}
