import type { WasteReportRow } from '../domain/types';
import {
  type ColumnGetter,
  LEDGER_SUMS_SQL,
  ledgerSumsFrom,
  WASTE_BY_DIAGNOSIS_SQL,
  wasteByDiagnosisFrom,
} from './store-reads';

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
    ...(a.gpu_instance_id !== undefined ? { gpu_instance_id: a.gpu_instance_id } : {}),
    ...(a.gpu_instance_profile !== undefined ? { gpu_instance_profile: a.gpu_instance_profile } : {}),
    ...(a.team !== undefined ? { team: a.team } : {}),
    ...(a.job !== undefined ? { job: a.job } : {}),
    ...(a.region !== undefined ? { region: a.region } : {}),
    ...(a.az !== undefined ? { az: a.az } : {}),
    ...(a.namespace !== undefined ? { namespace: a.namespace } : {}),
    ...(a.idle_gpu_hours !== undefined ? { idle_gpu_hours: a.idle_gpu_hours } : {}),
    gpu_hours: a.gpu_hours,
    cost_usd: a.cost_usd,
    idle_usd: a.idle_usd,
    held_idle_usd: a.held_idle_usd,
    underused_usd: a.underused_usd,
    broken_usd: a.broken_usd,
    wasted_usd: a.wasted_usd,
    throttled_usd: a.throttled_usd,
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
 * (numeric), then MIG instance id (a whole GPU first), so every store lists the same report identically.
 *
 * @param a - a report row
 * @param b - another report row
 * @returns negative when `a` comes first, positive when `b` does, 0 when equal
 */
export function compareWasteRows(a: WasteReportRow, b: WasteReportRow): number {
  if (a.wasted_usd !== b.wasted_usd) return b.wasted_usd - a.wasted_usd;
  if (a.instance_id !== b.instance_id) return a.instance_id < b.instance_id ? -1 : 1;
  return a.gpu_index - b.gpu_index || (a.gpu_instance_id ?? -1) - (b.gpu_instance_id ?? -1);
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

/**
 * The MIG slice columns of a waste report grouped by `instance_id, gpu_index, gpu_instance_slot`
 * (DuckDB and Athena, whose tables declare the columns; Timestream adds a dimension only once a
 * record carries it, so its report stays per GPU): one row per slice, with its profile.
 */
export const WASTE_SLICE_SQL = `gpu_instance_slot,
  max_by(gpu_instance_profile, "time") AS gpu_instance_profile`;

/**
 * The aggregate columns of a waste report over `gpu_windows`, grouped by `instance_id, gpu_index`,
 * in the SQL both Trino dialects speak (Timestream for LiveAnalytics and Athena engine v3; DuckDB
 * too, which tests the Athena SQL locally): `max_by` instead of DuckDB's `arg_max`, `CASE` inside
 * aggregates instead of `FILTER (WHERE …)` (Timestream has no `FILTER`). `"time"` is the window end.
 * The result columns are the fields of {@link WasteAggregate}, read back by {@link wasteAggregateFromText}.
 */
export const WASTE_AGGREGATES_SQL = `max_by(instance_type, "time") AS instance_type,
  max_by(team, "time") AS team,
  max_by(job, "time") AS job,
  max_by(region, "time") AS region,
  max_by(az, "time") AS az,
  max_by(namespace, "time") AS namespace,
  ${LEDGER_SUMS_SQL},
  coalesce(sum(CASE WHEN waste_class IN ('idle', 'held_idle') THEN gpu_hours END), 0) AS idle_gpu_hours,
  coalesce(sum(CASE WHEN efficiency IS NOT NULL THEN efficiency * gpu_hours END), 0) AS efficiency_weighted,
  coalesce(sum(CASE WHEN efficiency IS NOT NULL THEN gpu_hours END), 0) AS efficiency_hours,
  count(DISTINCT CASE WHEN efficiency_source <> 'none' THEN efficiency_source END) AS source_count,
  max(CASE WHEN efficiency_source <> 'none' THEN efficiency_source END) AS any_source,
  max_by(price_usd_per_hour, "time") AS price_usd_per_hour,
  max_by(price_source, "time") AS price_source,
  max(CASE WHEN processes_known THEN 0 ELSE 1 END) AS processes_unknown,
  ${WASTE_BY_DIAGNOSIS_SQL}`;

/**
 * Reads one result row of {@link WASTE_AGGREGATES_SQL} (plus `instance_id`, `gpu_index`, and where the
 * store groups by MIG slice {@link WASTE_SLICE_SQL}'s `gpu_instance_slot` and `gpu_instance_profile`), from a
 * store that answers JS values (DuckDB) or text (Timestream `ScalarValue`, Athena `VarCharValue`).
 *
 * @param get - a column's value by name; `undefined` or `null` for SQL NULL
 * @returns the report row
 */
export function wasteRowFromText(get: ColumnGetter): WasteReportRow {
  const str = (n: string): string | undefined => {
    const v = get(n);
    return v === undefined || v === null ? undefined : String(v);
  };
  const num = (n: string): number => {
    const s = str(n);
    return s === undefined ? 0 : Number(s);
  };
  const team = str('team');
  const job = str('job');
  const region = str('region');
  const az = str('az');
  const namespace = str('namespace');
  const anySource = str('any_source');
  const slot = str('gpu_instance_slot');
  const profile = str('gpu_instance_profile');
  return toWasteReportRow({
    instance_id: str('instance_id') ?? '',
    instance_type: str('instance_type') ?? '',
    gpu_index: num('gpu_index'),
    ...(slot !== undefined && Number(slot) >= 0 ? { gpu_instance_id: Number(slot) } : {}),
    ...(profile !== undefined ? { gpu_instance_profile: profile } : {}),
    ...(team !== undefined ? { team } : {}),
    ...(job !== undefined ? { job } : {}),
    ...(region !== undefined ? { region } : {}),
    ...(az !== undefined ? { az } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(str('idle_gpu_hours') !== undefined ? { idle_gpu_hours: num('idle_gpu_hours') } : {}),
    ...ledgerSumsFrom(get),
    efficiency_weighted: num('efficiency_weighted'),
    efficiency_hours: num('efficiency_hours'),
    source_count: num('source_count'),
    ...(anySource !== undefined ? { any_source: anySource } : {}),
    price_usd_per_hour: num('price_usd_per_hour'),
    price_source: str('price_source') ?? 'unpriced',
    processes_unknown: num('processes_unknown') > 0,
    wasted_by_diagnosis_usd: wasteByDiagnosisFrom(get),
  });
}
