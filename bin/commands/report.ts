import { access, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { systemClock } from '../../lambdas/adapters/clock';
import { reportCsv } from '../../lambdas/adapters/report-csv';
import { renderReportHtml } from '../../lambdas/adapters/report-html';
import { gatherReportInput } from '../../lambdas/app/report-input';
import {
  buildWasteReport,
  type REPORT_PERIODS,
  type ReportGrouping,
  type ReportPeriod,
  reportPeriod,
  reportSummaryText,
  reportTimeZone,
  type WasteReport,
} from '../../lambdas/domain';
import { applyCurPrices } from '../../lambdas/local/duckdb-cur';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';

/** Output formats of `gpu-sentinel report`. */
export const REPORT_FORMATS = ['text', 'csv', 'html', 'json'] as const;

/** Options of `gpu-sentinel report`. */
export interface ReportCommandOptions {
  /** DuckDB file written by `gpu-sentinel local --db`; must exist. */
  readonly db: string;
  /** Grouping. @default 'team' */
  readonly by?: ReportGrouping;
  /**
   * The last whole calendar `day`, ISO `week` (Monday to Monday) or `month` ending at or before
   * `--to` (or now), in `--tz`. Not with `--from`. @default 'day'
   */
  readonly period?: (typeof REPORT_PERIODS)[number];
  /** Inclusive start, ISO 8601; with `--to`, replaces `--period`. */
  readonly from?: string;
  /** Exclusive end, ISO 8601. @default now */
  readonly to?: string;
  /**
   * A Cost and Usage Report 2.0 (Parquet or CSV, gzip allowed; a file or an export's folder): each
   * instance-hour it bills is priced at its effective cost (`price_source` `cur`), the others keep
   * their stored price. @default undefined (stored prices)
   */
  readonly cur?: string;
  /** IANA time zone of the calendar periods and of the line items' days, e.g. `Europe/Berlin`. @default 'UTC' */
  readonly tz?: string;
  /** Output format. @default 'text' */
  readonly format?: (typeof REPORT_FORMATS)[number];
  /** Write the output to this file instead of stdout. @default undefined (stdout) */
  readonly out?: string;
}

/**
 * `gpu-sentinel report`: the finance report over a period from the local store, grouped by team, job,
 * instance type, instance or diagnosis, as text, CSV, a self-contained HTML page, or JSON.
 *
 * @param opts - the command's options
 * @param write - where stdout goes
 * @param now - the clock (the default end)
 * @returns the exit code, 0
 * @throws {Error} naming the option when the store does not exist or is not a gpu-sentinel DuckDB
 *   store (it is opened read-only: the report never writes it), a time is not ISO 8601, the range
 *   is empty, or `--period` is given with `--from`
 * @throws {ReportInputError} naming `--tz` when the time zone is not an IANA zone, `--cur` when the
 *   CUR path does not exist or holds no CUR file, or the first CUR column missing
 */
export async function runReportCommand(
  opts: ReportCommandOptions,
  write: (s: string) => void,
  now: Date = systemClock(),
): Promise<number> {
  const db = resolve(opts.db);
  try {
    await access(db);
  } catch (cause) {
    throw new Error(
      `Expected --db to name a store written by \`gpu-sentinel local --db\`, got ${db}, which does not exist; an absent store is not an empty report.`,
      { cause },
    );
  }
  const period = periodOf(opts, now);
  let store: DuckDbStore;
  try {
    store = await DuckDbStore.openReadOnly(db);
  } catch (cause) {
    throw new Error(
      `Expected --db to name a store written by \`gpu-sentinel local --db\`, got ${db}: ${(cause as Error).message}`,
      { cause },
    );
  }
  let report: WasteReport;
  try {
    const cur =
      opts.cur === undefined
        ? undefined
        : await applyCurPrices(store.session, resolve(opts.cur), {
            from: new Date(period.from),
            to: new Date(period.to),
          });
    const by = opts.by ?? 'team';
    const input = await gatherReportInput(store, period, [by]);
    report = buildWasteReport({
      ...input,
      period,
      by,
      generatedAt: now,
      ...(cur !== undefined ? { cur } : {}),
    });
  } finally {
    await store.close();
  }
  const text = await render(report, opts.format ?? 'text');
  if (opts.out === undefined) write(text);
  else {
    await writeFile(resolve(opts.out), text);
    write(`wrote ${resolve(opts.out)}\n`);
  }
  return 0;
}

async function render(report: WasteReport, format: (typeof REPORT_FORMATS)[number]): Promise<string> {
  if (format === 'csv') return reportCsv(report);
  if (format === 'html') return renderReportHtml(report);
  if (format === 'json') return `${JSON.stringify(report, null, 2)}\n`;
  return `${reportSummaryText(report)}\n`;
}

function periodOf(opts: ReportCommandOptions, now: Date): ReportPeriod {
  const to = opts.to !== undefined ? parseTime('--to', opts.to) : now;
  const tz = reportTimeZone(opts.tz ?? 'UTC', '--tz');
  if (opts.from === undefined) return reportPeriod(opts.period ?? 'day', to, tz);
  if (opts.period !== undefined) {
    throw new Error('Expected either --period or --from/--to, got both; drop one.');
  }
  const from = parseTime('--from', opts.from);
  if (from >= to) {
    throw new Error(`Expected --from before --to, got ${from.toISOString()} >= ${to.toISOString()}`);
  }
  return { kind: 'custom', from: from.toISOString(), to: to.toISOString(), time_zone: tz };
}

function parseTime(option: string, value: string): Date {
  const t = Date.parse(value);
  if (Number.isNaN(t))
    throw new Error(`Expected ${option} to be an ISO 8601 time like 2026-11-21T00:00:00Z, got \`${value}\``);
  return new Date(t);
}
