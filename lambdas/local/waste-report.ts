import { wastedByDiagnosisColumn } from '../adapters/waste-report';
import { DIAGNOSES, type Diagnosis, type WasteReportRow } from '../domain/types';

/** The fixed columns of `waste.csv`. */
const BASE_COLUMNS = [
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
 * Column order of `waste.csv`: one row per instance and GPU; after the fixed columns one
 * `wasted_<diagnosis>_usd` column per diagnosis (why the dollars were wasted; 0 when none).
 */
export const WASTE_CSV_COLUMNS: readonly string[] = [
  ...BASE_COLUMNS,
  ...DIAGNOSES.map(wastedByDiagnosisColumn),
];

/**
 * Renders the waste report as CSV (RFC 4180: comma-separated, CRLF-free `\n` lines, fields quoted
 * when they hold a comma, quote or newline). Money is rounded to 6 decimals (micro-dollars) and
 * GPU-hours to 6 decimals only here, at presentation; the stored ledger is unrounded.
 *
 * @param rows - per-GPU sums from `TelemetryStore.queryWaste`
 * @returns the CSV text, header first
 */
export function wasteCsv(rows: readonly WasteReportRow[]): string {
  const lines = [WASTE_CSV_COLUMNS.join(',')];
  for (const r of rows) {
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
    for (const d of DIAGNOSES)
      cells[wastedByDiagnosisColumn(d)] = (r.wasted_by_diagnosis_usd[d] ?? 0).toFixed(6);
    lines.push(WASTE_CSV_COLUMNS.map((c) => csvField(cells[c] ?? '')).join(','));
  }
  return `${lines.join('\n')}\n`;
}

function csvField(value: string): string {
  return /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/**
 * A console summary of the waste report: totals, wasted dollars by cause (diagnosis), then one line
 * per instance (GPUs summed, with its causes), with
 * the method notes a reader needs (efficiency source; idle vs held-idle not told apart when
 * process counts were unknown; unpriced instance types).
 *
 * @param rows - per-GPU sums
 * @returns multi-line text
 */
export function wasteSummary(rows: readonly WasteReportRow[]): string {
  const byInstance = new Map<
    string,
    {
      type: string;
      gpus: number;
      hours: number;
      cost: number;
      wasted: number;
      src: Set<string>;
      price: string;
      causes: Map<Diagnosis, number>;
    }
  >();
  const causes = new Map<Diagnosis, number>();
  for (const r of rows) {
    const e = byInstance.get(r.instance_id) ?? {
      type: r.instance_type,
      gpus: 0,
      hours: 0,
      cost: 0,
      wasted: 0,
      src: new Set<string>(),
      price: r.price_source,
      causes: new Map<Diagnosis, number>(),
    };
    for (const [d, usd] of Object.entries(r.wasted_by_diagnosis_usd) as [Diagnosis, number][]) {
      e.causes.set(d, (e.causes.get(d) ?? 0) + usd);
      causes.set(d, (causes.get(d) ?? 0) + usd);
    }
    e.gpus += 1;
    e.hours += r.gpu_hours;
    e.cost += r.cost_usd;
    e.wasted += r.wasted_usd;
    e.src.add(r.efficiency_source);
    byInstance.set(r.instance_id, e);
  }
  const cost = rows.reduce((s, r) => s + r.cost_usd, 0);
  const wasted = rows.reduce((s, r) => s + r.wasted_usd, 0);
  const hours = rows.reduce((s, r) => s + r.gpu_hours, 0);
  const out = [
    `Waste report: ${rows.length} GPUs, ${hours.toFixed(2)} GPU-hours, cost $${cost.toFixed(2)}, wasted $${wasted.toFixed(2)} (${cost > 0 ? ((100 * wasted) / cost).toFixed(1) : '0.0'}%)`,
  ];
  if (causes.size > 0) out.push(`  wasted by cause: ${byCause(causes)}`);
  for (const [id, e] of [...byInstance.entries()].sort((a, b) => b[1].wasted - a[1].wasted)) {
    out.push(
      `  ${id} ${e.type}: ${e.gpus} GPUs, ${e.hours.toFixed(2)} GPU-h, cost $${e.cost.toFixed(2)}, wasted $${e.wasted.toFixed(2)} (efficiency from ${[...e.src].join('/')}; price ${e.price})${e.causes.size > 0 ? `; by cause: ${byCause(e.causes)}` : ''}`,
    );
  }
  if (rows.some((r) => r.efficiency_source === 'gpu_util' || r.efficiency_source === 'mixed')) {
    out.push(
      '  note: where efficiency comes from gpu_util (no profiling counters) it is an upper bound, so waste is a lower bound.',
    );
  }
  if (rows.some((r) => r.processes_unknown)) {
    out.push(
      '  note: where compute process counts were unknown, idle GPUs are counted as idle (not held-idle).',
    );
  }
  if (rows.some((r) => r.price_source === 'unpriced')) {
    out.push('  note: unpriced instance types are costed at $0, never guessed; set price overrides.');
  }
  return out.join('\n');
}

/** `idle $12.00, tensor_idle $3.10`: causes by wasted dollars, largest first. */
function byCause(causes: ReadonlyMap<Diagnosis, number>): string {
  return [...causes]
    .sort((a, b) => b[1] - a[1])
    .map(([d, usd]) => `${d} $${usd.toFixed(2)}`)
    .join(', ');
}
