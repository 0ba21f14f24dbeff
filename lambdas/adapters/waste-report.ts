import { DIAGNOSES, type Diagnosis, type WasteReportRow } from '../domain/types';

/**
 * One GPU's aggregates as both store adapters' SQL returns them, before they become a
 * {@link WasteReportRow}. Every number already a JS number; absent values `undefined`.
 */
export interface WasteAggregate extends Omit<WasteReportRow, 'efficiency' | 'efficiency_source'> {
  /** Σ efficiency × gpu_hours over the windows where efficiency was measured. */
  readonly efficiency_weighted: number;
  /** Σ gpu_hours over the windows where efficiency was measured (0 when never). */
  readonly efficiency_hours: number;
  /** Distinct measured efficiency sources seen (`none` excluded), 0..2. */
  readonly source_count: number;
  /** One measured source (`sm_active` or `gpu_util`) when `source_count ≥ 1`. */
  readonly any_source?: string;
}

/**
 * The result column holding the waste of one diagnosis.
 *
 * @param diagnosis - a diagnosis
 * @returns `wasted_<diagnosis>_usd`, e.g. `wasted_tensor_idle_usd`
 */
export function wastedByDiagnosisColumn(diagnosis: Diagnosis): string {
  return `wasted_${diagnosis}_usd`;
}

/**
 * SQL select items, one per diagnosis, summing `wasted_usd` of the windows stored with it
 * (`coalesce(sum(CASE WHEN diagnosis = 'idle' THEN wasted_usd END), 0) AS wasted_idle_usd`, …): the
 * same text runs on DuckDB and Timestream, so both stores split waste alike.
 */
export const WASTE_BY_DIAGNOSIS_SQL: string = DIAGNOSES.map(
  (d) =>
    `coalesce(sum(CASE WHEN diagnosis = '${d}' THEN wasted_usd END), 0) AS ${wastedByDiagnosisColumn(d)}`,
).join(',\n  ');

/**
 * Reads the per-diagnosis sums of {@link WASTE_BY_DIAGNOSIS_SQL} from a result row.
 *
 * @param value - the number in a result column (0 or undefined when NULL)
 * @returns diagnosis → wasted USD, only the diagnoses with waste > 0
 */
export function wastedByDiagnosis(
  value: (column: string) => number | undefined,
): Partial<Record<Diagnosis, number>> {
  const out: Partial<Record<Diagnosis, number>> = {};
  for (const d of DIAGNOSES) {
    const usd = value(wastedByDiagnosisColumn(d)) ?? 0;
    if (usd > 0) out[d] = usd;
  }
  return out;
}

/**
 * Turns SQL aggregates into a report row: GPU-hour-weighted efficiency over the measured windows
 * (absent if never measured); `efficiency_source` the one measured source, `mixed` when windows
 * used both `sm_active` and `gpu_util`, `none` when none was measured. Windows without a
 * measurement do not make the source `mixed`.
 *
 * @param a - one GPU's aggregates
 * @returns the report row
 */
export function toWasteReportRow(a: WasteAggregate): WasteReportRow {
  const measured = a.efficiency_hours > 0;
  const efficiency_source =
    a.source_count === 0 ? 'none' : a.source_count > 1 ? 'mixed' : (a.any_source ?? 'none');
  return {
    instance_id: a.instance_id,
    instance_type: a.instance_type,
    gpu_index: a.gpu_index,
    ...(a.team !== undefined ? { team: a.team } : {}),
    ...(a.job !== undefined ? { job: a.job } : {}),
    gpu_hours: a.gpu_hours,
    cost_usd: a.cost_usd,
    idle_usd: a.idle_usd,
    held_idle_usd: a.held_idle_usd,
    underused_usd: a.underused_usd,
    broken_usd: a.broken_usd,
    wasted_usd: a.wasted_usd,
    ...(measured ? { efficiency: a.efficiency_weighted / a.efficiency_hours } : {}),
    efficiency_source,
    price_usd_per_hour: a.price_usd_per_hour,
    price_source: a.price_source,
    processes_unknown: a.processes_unknown,
    wasted_by_diagnosis_usd: a.wasted_by_diagnosis_usd,
  };
}

/**
 * Report order: `wasted_usd` descending, then instance id ascending, then GPU index ascending
 * (numeric), so both stores list the same report identically.
 *
 * @param a - a report row
 * @param b - another report row
 * @returns negative when `a` comes first, positive when `b` does, 0 when equal
 */
export function compareWasteRows(a: WasteReportRow, b: WasteReportRow): number {
  if (a.wasted_usd !== b.wasted_usd) return b.wasted_usd - a.wasted_usd;
  if (a.instance_id !== b.instance_id) return a.instance_id < b.instance_id ? -1 : 1;
  return a.gpu_index - b.gpu_index;
}

/**
 * Checks a report range.
 *
 * @param from - inclusive start
 * @param to - exclusive end, must be after `from`
 * @returns an error message, or undefined when the range is valid
 */
export function wasteRangeProblem(from: Date, to: Date): string | undefined {
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime())) {
    return `Expected \`from\` and \`to\` to be valid dates, got \`${String(from)}\` and \`${String(to)}\`; pass Date objects.`;
  }
  if (to.getTime() <= from.getTime()) {
    return `Expected \`to\` after \`from\`, got from=${from.toISOString()} to=${to.toISOString()}; swap them or widen the range.`;
  }
  return undefined;
}
