import { HELD_FB_USED_BYTES_AT_LEAST } from '../domain/gpu-holder';
import type { Diagnosis, WasteReportRow } from '../domain/types';

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
  const throttled = rows.reduce((s, r) => s + r.throttled_usd, 0);
  if (throttled >= 0.005)
    out.push(`  lost to thermal or power throttling (not in wasted): $${throttled.toFixed(2)}`);
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
      `  note: where compute process counts were unknown, framebuffer used decided: an idle GPU with ≥ ${HELD_FB_USED_BYTES_AT_LEAST / 2 ** 20} MiB used is held-idle, less is idle.`,
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
