import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { REPORT_WASTE_CLASSES, type WasteReport } from '../domain/build-waste-report';

/**
 * The report's charts: Vega-Lite specs made from the report, rendered server-side to SVG by Vega
 * (`View.toSVG()`, no browser, no canvas), so the HTML page embeds them inline and fetches nothing.
 */

/** The charts of the report page, in page order. */
export const REPORT_CHARTS = ['wasted_over_time', 'top_wasters', 'waste_by_team', 'waste_by_cause'] as const;
/** One of {@link REPORT_CHARTS}. */
export type ReportChart = (typeof REPORT_CHARTS)[number];

/** Chart width, CSS px (the page's content column). */
const CHART_WIDTH_PX = 640;

/** Longest axis label before Vega truncates it, CSS px (fits an instance id and its type). */
const LABEL_LIMIT_PX = 320;

/** Colour per waste class, the same on every chart (Tableau 10 hues). */
const CLASS_COLOURS: Readonly<Record<(typeof REPORT_WASTE_CLASSES)[number], string>> = {
  idle: '#e15759',
  held_idle: '#f28e2b',
  underused: '#edc948',
  broken: '#76b7b2',
};

const usdAxis = { title: 'Wasted USD', format: '$,.2f' } as const;

/**
 * The Vega-Lite spec of each chart, with the report's numbers inlined (no data URL).
 *
 * @param report - the report
 * @returns spec per chart name
 */
export function reportChartSpecs(report: WasteReport): Record<ReportChart, TopLevelSpec> {
  const classColour = {
    field: 'class',
    type: 'nominal',
    title: 'Waste class',
    scale: { domain: [...REPORT_WASTE_CLASSES], range: REPORT_WASTE_CLASSES.map((c) => CLASS_COLOURS[c]) },
  } as const;
  const byClass = (key: string, money: { by_class: Readonly<Record<string, number>> }) =>
    REPORT_WASTE_CLASSES.map((c) => ({ key, class: c, usd: money.by_class[c] ?? 0 }));
  return {
    wasted_over_time: {
      width: CHART_WIDTH_PX,
      height: 220,
      data: { values: report.daily.map((d) => ({ day: d.day, usd: d.wasted_usd, cost: d.cost_usd })) },
      mark: { type: 'bar', color: CLASS_COLOURS.idle, tooltip: true },
      encoding: {
        x: { field: 'day', type: 'ordinal', title: 'Day (UTC)' },
        y: { field: 'usd', type: 'quantitative', axis: usdAxis },
      },
    },
    top_wasters: {
      width: CHART_WIDTH_PX - 200,
      data: {
        values: report.top_wasters.flatMap((w) => byClass(`${w.instance_id} (${w.instance_type})`, w)),
      },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: {
          field: 'key',
          type: 'nominal',
          title: null,
          sort: { field: 'usd', op: 'sum', order: 'descending' },
          axis: { labelLimit: LABEL_LIMIT_PX },
        },
        x: { field: 'usd', type: 'quantitative', aggregate: 'sum', axis: usdAxis },
        color: classColour,
      },
    },
    waste_by_team: {
      width: CHART_WIDTH_PX - 200,
      data: { values: report.by_team.flatMap((g) => byClass(g.key, g)) },
      mark: { type: 'bar', tooltip: true },
      encoding: {
        y: {
          field: 'key',
          type: 'nominal',
          title: 'Team',
          sort: { field: 'usd', op: 'sum', order: 'descending' },
        },
        x: { field: 'usd', type: 'quantitative', aggregate: 'sum', axis: usdAxis },
        color: classColour,
      },
    },
    waste_by_cause: {
      width: CHART_WIDTH_PX - 200,
      data: { values: report.by_diagnosis.map((g) => ({ key: g.key, usd: g.wasted_usd })) },
      mark: { type: 'bar', color: '#4e79a7', tooltip: true },
      encoding: {
        y: { field: 'key', type: 'nominal', title: 'Diagnosis', sort: '-x' },
        x: { field: 'usd', type: 'quantitative', axis: usdAxis },
      },
    },
  };
}

/**
 * Renders a Vega-Lite spec to an SVG document string, headless.
 *
 * @param spec - a Vega-Lite spec with inline data
 * @returns the `<svg …>…</svg>` text
 */
export async function renderChartSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * Renders every chart of the report to SVG.
 *
 * @param report - the report
 * @returns SVG text per chart name
 */
export async function renderReportCharts(report: WasteReport): Promise<Record<ReportChart, string>> {
  const specs = reportChartSpecs(report);
  const out = {} as Record<ReportChart, string>;
  for (const name of REPORT_CHARTS) out[name] = await renderChartSvg(specs[name]);
  return out;
}
