import { type ReportGroup, UNATTRIBUTED, type WasteReport } from '../domain/build-waste-report';
import { percentOf as pct, usdDisplay as usd } from '../domain/money-format';
import { explainCause } from '../domain/report-causes';
import { type ReportChart, renderReportCharts } from './report-charts';

/**
 * The finance report as one self-contained HTML page: inline CSS, charts as inline SVG, no script,
 * no font, no image and no other request (a Content-Security-Policy of `default-src 'none'` says so
 * to the browser too), so it opens from S3, an email attachment or a laptop alike.
 */

/** The Content-Security-Policy of the page: nothing may be fetched; only the inline style applies. */
export const REPORT_HTML_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const CHART_TITLES: Readonly<Record<ReportChart, string>> = {
  wasted_over_time: 'Wasted dollars over time',
  top_wasters: 'Top wasters',
  waste_by_team: 'Waste by team',
  waste_by_cause: 'Waste by cause (diagnosis)',
};

/**
 * Escapes text for HTML element content and attribute values.
 *
 * @param text - any text (tags, team names, instance ids)
 * @returns the text with `& < > " '` as entities
 */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

function groupTable(title: string, groups: readonly ReportGroup[]): string {
  const rows = groups
    .map(
      (g) =>
        `<tr><th scope="row">${escapeHtml(g.key)}${g.unpriced ? ' <span class="flag">unpriced</span>' : ''}</th>` +
        `<td>${g.gpus ?? ''}</td><td>${g.gpu_hours.toFixed(1)}</td><td>${usd(g.cost_usd)}</td>` +
        `<td>${usd(g.wasted_usd)}</td><td>${pct(g.wasted_usd, g.cost_usd)}</td>` +
        `<td>${usd(g.by_class.idle)}</td><td>${usd(g.by_class.held_idle)}</td>` +
        `<td>${usd(g.by_class.underused)}</td><td>${usd(g.by_class.broken)}</td>` +
        `<td>${usd(g.throttled_usd)}</td>` +
        `<td>${g.efficiency === undefined ? '–' : `${(100 * g.efficiency).toFixed(1)} %`}</td></tr>`,
    )
    .join('\n');
  return `<table><caption>${escapeHtml(title)}</caption>
<thead><tr><th scope="col">Group</th><th scope="col">GPUs</th><th scope="col">GPU-hours</th><th scope="col">Cost</th><th scope="col">Wasted</th><th scope="col">Wasted %</th><th scope="col">Idle</th><th scope="col">Held idle</th><th scope="col">Underused</th><th scope="col">Broken</th><th scope="col" title="Lost to thermal or power throttling: not part of Wasted">Throttled</th><th scope="col">Efficiency</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="12">No GPU windows in this period.</td></tr>'}
</tbody></table>`;
}

/**
 * A price source in words, its code after it.
 *
 * @param source - a `price_source`
 * @returns e.g. `on-demand list price (builtin:aws-ec2-on-demand-linux-2026-11-23)`
 */
export function priceSourceLabel(source: string): string {
  const words =
    source === 'cur'
      ? 'effective cost from the Cost and Usage Report'
      : source === 'cur:spot'
        ? 'spot cost from the Cost and Usage Report'
        : source.startsWith('builtin:')
          ? 'on-demand list price'
          : source.startsWith('spot_discount:')
            ? `list price less the spot discount ${source.slice('spot_discount:'.length)}`
            : ({
                savings_plan: 'Savings Plan rate',
                capacity_block: 'Capacity Block rate',
                override: 'configured price',
                spot: 'spot price',
                unpriced: 'unpriced (costed at $0)',
              }[source] ?? source);
  return words === source || source === 'unpriced' ? words : `${words} (${source})`;
}

function ratesTable(report: WasteReport): string {
  const rows = report.rates
    .map(
      (r) =>
        `<tr><th scope="row">${escapeHtml(r.instance_type)}</th><td>${usd(r.price_usd_per_hour)}/h</td>` +
        `<td class="text">${escapeHtml(priceSourceLabel(r.price_source))}</td><td>${r.gpu_hours.toFixed(1)}</td></tr>`,
    )
    .join('\n');
  return `<table data-table="rates"><caption>Rates used</caption>
<thead><tr><th scope="col">Instance type</th><th scope="col">Price per instance-hour</th><th scope="col" class="text">Source</th><th scope="col">GPU-hours</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="4">No GPU windows in this period.</td></tr>'}
</tbody></table>`;
}

function wastersTable(report: WasteReport): string {
  const rows = report.top_wasters
    .map(
      (w) =>
        `<tr><th scope="row">${escapeHtml(w.instance_id)}</th><td class="text">${escapeHtml(w.instance_type)}</td>` +
        `<td class="text">${escapeHtml(w.team ?? UNATTRIBUTED)}</td><td class="text">${escapeHtml(w.job ?? UNATTRIBUTED)}</td>` +
        `<td>${usd(w.cost_usd)}</td><td>${usd(w.wasted_usd)}</td>` +
        `<td class="text">${escapeHtml(w.cause ?? '–')}</td><td class="text">${escapeHtml(w.fix ?? '–')}</td></tr>`,
    )
    .join('\n');
  return `<table data-table="top-wasters"><caption>Top wasters</caption>
<thead><tr><th scope="col">Instance</th><th scope="col" class="text">Type</th><th scope="col" class="text">Team</th><th scope="col" class="text">Job</th><th scope="col">Cost</th><th scope="col">Wasted</th><th scope="col" class="text">Diagnosis</th><th scope="col" class="text">Fix</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="8">No GPU windows in this period.</td></tr>'}
</tbody></table>`;
}

function causesTable(report: WasteReport): string {
  const total = report.by_diagnosis.reduce((s, g) => s + g.wasted_usd, 0);
  const rows = report.by_diagnosis
    .map((g) => {
      const e = explainCause(g.key);
      return (
        `<tr><th scope="row">${escapeHtml(g.key)}</th><td>${usd(g.wasted_usd)}</td><td>${pct(g.wasted_usd, report.totals.wasted_usd)}</td>` +
        `<td class="text">${escapeHtml(e.what)}</td><td class="text">${escapeHtml(e.fix)}</td></tr>`
      );
    })
    .join('\n');
  return `<table data-table="causes"><caption>Waste by cause</caption>
<thead><tr><th scope="col">Cause</th><th scope="col">Wasted</th><th scope="col">Share</th><th scope="col" class="text">What it is</th><th scope="col" class="text">Fix</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="5">No GPU windows in this period.</td></tr>'}
</tbody>
<tfoot><tr><th scope="row">Total</th><td>${usd(total)}</td><td>${pct(total, report.totals.wasted_usd)}</td><td colspan="2" class="text">The causes sum to the wasted total.</td></tr></tfoot></table>`;
}

function changeLine(report: WasteReport): string {
  const c = report.change;
  if (c === undefined) return '';
  const share =
    c.wasted_change_share === undefined
      ? 'nothing was wasted then'
      : `${c.wasted_change_share >= 0 ? '+' : '−'}${Math.abs(100 * c.wasted_change_share).toFixed(1)} %`;
  const delta = `${c.wasted_change_usd >= 0 ? '+' : '−'}${usd(Math.abs(c.wasted_change_usd))}`;
  return `<p class="change" data-change="${c.wasted_change_usd >= 0 ? 'up' : 'down'}">Change against the previous period (${escapeHtml(c.period.from.slice(0, 10))} to ${escapeHtml(c.period.to.slice(0, 10))}): wasted ${usd(c.wasted_usd)} then, ${usd(report.totals.wasted_usd)} now: ${delta} (${share}); cost ${usd(c.cost_usd)} then, ${usd(report.totals.cost_usd)} now.</p>`;
}

/**
 * The page from a report and its rendered charts.
 *
 * @param report - the report
 * @param charts - SVG per chart (see `renderReportCharts`)
 * @returns the HTML document text
 */
export function reportHtml(report: WasteReport, charts: Readonly<Record<ReportChart, string>>): string {
  const t = report.totals;
  const title = `GPU waste report, ${report.period.from.slice(0, 10)} to ${report.period.to.slice(0, 10)}`;
  const figures = (Object.keys(CHART_TITLES) as ReportChart[])
    .map(
      (name) =>
        `<figure class="chart" data-chart="${name}"><figcaption>${CHART_TITLES[name]}</figcaption>${charts[name]}</figure>`,
    )
    .join('\n');
  const unpriced =
    report.unpriced.length === 0
      ? '<p>Every instance in this period was priced.</p>'
      : `<ul>${report.unpriced
          .map(
            (h) =>
              `<li>${escapeHtml(h.instance_id)} (${escapeHtml(h.instance_type)}), ${h.gpu_hours.toFixed(1)} GPU-hours costed at $0, ${h.idle_gpu_hours.toFixed(1)} of them idle: ${escapeHtml(h.reason)}</li>`,
          )
          .join('')}</ul>`;
  const groupTitle = report.by === 'instance_type' ? 'instance type' : report.by;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_HTML_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 980px; color: #222; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
.totals { display: grid; grid-template-columns: repeat(4, 1fr); gap: 1rem; }
.totals div { background: #f4f6f8; border-radius: 6px; padding: .75rem; }
.totals b { display: block; font-size: 1.4rem; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; margin-top: .5rem; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border-bottom: 1px solid #ddd; padding: .3rem .4rem; text-align: right; }
th[scope=row], thead th:first-child { text-align: left; }
.flag { background: #fde2e2; color: #8a1c1c; border-radius: 3px; padding: 0 .3rem; font-size: .75rem; }
figure.chart { margin: 1.5rem 0; } figcaption { font-weight: 600; margin-bottom: .5rem; }
.method { background: #fffbe6; border-left: 4px solid #edc948; padding: .5rem 1rem; }
td.text, th.text { text-align: left; }
.change { font-weight: 600; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p>Period ${escapeHtml(report.period.from)} to ${escapeHtml(report.period.to)} (UTC instants; ${escapeHtml(report.period.kind)} of the ${escapeHtml(report.period.time_zone ?? 'UTC')} calendar); generated ${escapeHtml(report.generated_at)}.</p>
<section class="totals" aria-label="Totals">
<div>GPU-hours<b>${t.gpu_hours.toFixed(1)}</b></div>
<div>Cost<b>${usd(t.cost_usd)}</b></div>
<div>Wasted<b>${usd(t.wasted_usd)}</b></div>
<div>Wasted share<b>${pct(t.wasted_usd, t.cost_usd)}</b></div>
<div>Lost to throttling<b>${usd(t.throttled_usd)}</b></div>
</section>
${changeLine(report)}
<p>${t.instances} instances, ${t.gpus} GPUs, ${t.idle_gpu_hours.toFixed(1)} GPU-hours idle (priced or not). Wasted by class: idle ${usd(t.by_class.idle)}, held idle ${usd(t.by_class.held_idle)}, underused ${usd(t.by_class.underused)}, broken ${usd(t.by_class.broken)}.</p>
<section class="method" aria-label="Method">
<h2>Method</h2>
<p>${escapeHtml(report.method.note)}</p>
${report.method.caveats.map((c) => `<p>${escapeHtml(c)}</p>`).join('\n')}
<p>Prices used: ${report.prices.map((p) => `${escapeHtml(p.source)} (${p.gpu_hours.toFixed(1)} GPU-hours)`).join('; ') || 'none'}. Untagged rows are shown as ${escapeHtml(UNATTRIBUTED)}.</p>
</section>
<h2>Rates used</h2>
${ratesTable(report)}
<h2>Top wasters</h2>
${wastersTable(report)}
<h2>Waste by cause</h2>
${causesTable(report)}
${figures}
<h2>By ${escapeHtml(groupTitle)}</h2>
${groupTable(`Waste by ${groupTitle}`, report.groups)}
<h2>Unpriced instances</h2>
${unpriced}
</body>
</html>
`;
}

/**
 * Renders the report page, charts included.
 *
 * @param report - the report
 * @returns the HTML document text
 */
export async function renderReportHtml(report: WasteReport): Promise<string> {
  return reportHtml(report, await renderReportCharts(report));
}
