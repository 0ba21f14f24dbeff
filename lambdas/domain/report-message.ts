import type { WasteReport } from './build-waste-report';
import { MAX_ALERT_SUBJECT_CHARS } from './constants';
import { percentOf, usdDisplay } from './money-format';

/**
 * The report in words: the console summary of `gpu-sentinel report --format text`, and the message
 * the report Lambda publishes on the `reports` SNS topic (totals, top 5 wasters, where the files are).
 */

/** Wasters named in the SNS message. */
export const REPORT_MESSAGE_TOP_WASTERS = 5;

/** Where a report's files were written (S3 URIs, or local paths). */
export interface ReportLocations {
  readonly csv?: string;
  readonly html?: string;
}

function totalsLines(report: WasteReport): string[] {
  const t = report.totals;
  return [
    `Period: ${report.period.from} to ${report.period.to} (${report.period.kind}${report.period.time_zone !== undefined && report.period.time_zone !== 'UTC' ? `, ${report.period.time_zone} calendar` : ''})`,
    `Fleet: ${t.instances} instances, ${t.gpus} GPUs, ${t.gpu_hours.toFixed(1)} GPU-hours`,
    `Cost: ${usdDisplay(t.cost_usd)}; wasted: ${usdDisplay(t.wasted_usd)} (${percentOf(t.wasted_usd, t.cost_usd)})`,
    `Wasted by class: idle ${usdDisplay(t.by_class.idle)}, held idle ${usdDisplay(t.by_class.held_idle)}, underused ${usdDisplay(t.by_class.underused)}, broken ${usdDisplay(t.by_class.broken)}`,
    `Idle GPU-hours (priced or not): ${t.idle_gpu_hours.toFixed(1)}`,
    ...(t.throttled_usd >= 0.005
      ? [`Lost to thermal or power throttling (not in wasted): ${usdDisplay(t.throttled_usd)}`]
      : []),
    ...changeLines(report),
  ];
}

function changeLines(report: WasteReport): string[] {
  const c = report.change;
  if (c === undefined) return [];
  const share =
    c.wasted_change_share === undefined
      ? ''
      : ` (${c.wasted_change_share >= 0 ? '+' : '-'}${Math.abs(100 * c.wasted_change_share).toFixed(1)} %)`;
  return [
    `Change against ${c.period.from} to ${c.period.to}: wasted ${usdDisplay(c.wasted_usd)} then, ${c.wasted_change_usd >= 0 ? '+' : '-'}${usdDisplay(Math.abs(c.wasted_change_usd))} now${share}`,
  ];
}

function methodLines(report: WasteReport): string[] {
  return [
    `Method: ${report.method.note}`,
    ...report.method.caveats.map((c) => `Note: ${c}`),
    `Prices: ${report.prices.map((p) => `${p.source} (${p.gpu_hours.toFixed(1)} GPU-h)`).join('; ') || 'none'}`,
    ...(report.unpriced.length > 0
      ? [
          `Unpriced: ${report.unpriced.map((h) => `${h.instance_id} (${h.instance_type}: ${h.reason})`).join(', ')}`,
        ]
      : []),
  ];
}

/**
 * The console summary: totals, one line per group, the method, the prices and the unpriced hosts.
 *
 * @param report - the report
 * @returns multi-line text, no trailing newline
 */
export function reportSummaryText(report: WasteReport): string {
  const groups = report.groups.map(
    (g) =>
      `  ${g.key}: ${g.gpus === undefined ? '' : `${g.gpus} GPUs, `}${g.gpu_hours.toFixed(1)} GPU-h, cost ${usdDisplay(g.cost_usd)}, wasted ${usdDisplay(g.wasted_usd)} (${percentOf(g.wasted_usd, g.cost_usd)})${g.unpriced ? ' [unpriced]' : ''}`,
  );
  return [
    'GPU waste report',
    ...totalsLines(report),
    `By ${report.by}:`,
    ...(groups.length > 0 ? groups : ['  (no GPU windows in this period)']),
    ...methodLines(report),
  ].join('\n');
}

/**
 * The `reports` topic message: a subject of at most 100 characters (the SNS email limit) and a
 * plain-text body with the totals, the top 5 wasters, the method and where the files are.
 *
 * @param report - the report
 * @param locations - where the CSV and HTML were written
 * @returns `{ subject, body }`
 */
export function reportSnsMessage(
  report: WasteReport,
  locations: ReportLocations,
): { subject: string; body: string } {
  const t = report.totals;
  const subject =
    `GPU waste ${report.period.kind} report: ${usdDisplay(t.wasted_usd)} of ${usdDisplay(t.cost_usd)} wasted`.slice(
      0,
      MAX_ALERT_SUBJECT_CHARS,
    );
  const top = report.top_wasters
    .slice(0, REPORT_MESSAGE_TOP_WASTERS)
    .map(
      (w, i) =>
        `${i + 1}. ${w.instance_id} (${w.instance_type}${w.team !== undefined ? `, team ${w.team}` : ''}${w.job !== undefined ? `, job ${w.job}` : ''}): ${usdDisplay(w.wasted_usd)} wasted of ${usdDisplay(w.cost_usd)}${w.cause !== undefined ? `, mostly ${w.cause}: ${w.fix ?? ''}` : ''}`,
    );
  const body = [
    ...totalsLines(report),
    '',
    `Top ${REPORT_MESSAGE_TOP_WASTERS} wasters:`,
    ...(top.length > 0 ? top : ['(none)']),
    '',
    ...methodLines(report),
    '',
    'Files:',
    `CSV: ${locations.csv ?? '(not written)'}`,
    `HTML: ${locations.html ?? '(not written)'}`,
  ].join('\n');
  return { subject, body };
}
