import { type ReportGroup, UNATTRIBUTED, type WasteReport } from '../domain/build-waste-report';
import { percentOf as pct, usdDisplay as usd } from '../domain/money-format';
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
        `<td>${g.efficiency === undefined ? '–' : `${(100 * g.efficiency).toFixed(1)} %`}</td></tr>`,
    )
    .join('\n');
  return `<table><caption>${escapeHtml(title)}</caption>
<thead><tr><th scope="col">Group</th><th scope="col">GPUs</th><th scope="col">GPU-hours</th><th scope="col">Cost</th><th scope="col">Wasted</th><th scope="col">Wasted %</th><th scope="col">Idle</th><th scope="col">Held idle</th><th scope="col">Underused</th><th scope="col">Broken</th><th scope="col">Efficiency</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="11">No GPU windows in this period.</td></tr>'}
</tbody></table>`;
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
              `<li>${escapeHtml(h.instance_id)} (${escapeHtml(h.instance_type)}), ${h.gpu_hours.toFixed(1)} GPU-hours costed at $0</li>`,
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
</section>
<p>${t.instances} instances, ${t.gpus} GPUs. Wasted by class: idle ${usd(t.by_class.idle)}, held idle ${usd(t.by_class.held_idle)}, underused ${usd(t.by_class.underused)}, broken ${usd(t.by_class.broken)}.</p>
<section class="method" aria-label="Method">
<h2>Method</h2>
<p>${escapeHtml(report.method.note)}</p>
${report.method.caveats.map((c) => `<p>${escapeHtml(c)}</p>`).join('\n')}
<p>Prices used: ${report.prices.map((p) => `${escapeHtml(p.source)} (${p.gpu_hours.toFixed(1)} GPU-hours)`).join('; ') || 'none'}. Untagged rows are shown as ${escapeHtml(UNATTRIBUTED)}.</p>
</section>
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
