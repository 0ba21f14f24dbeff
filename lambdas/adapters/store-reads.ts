import type { GpuMetrics } from '../contract';
import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
  LEDGER_MEASURE_TYPES,
  type MeasureType,
} from '../domain/measure-types';
import type { LastSeen, NodeJobMeans, StoredGpuWindow, WasteGroup, WasteGroupRow } from '../domain/ports';
import { UNPRICED_SOURCE } from '../domain/pricing';
import { STRAGGLER_METRICS } from '../domain/rules/straggler';
import { DIAGNOSES, type Diagnosis, type LedgerEntry, type LedgerSums } from '../domain/types';

/**
 * The SQL and the row readers of the store port's reads, shared by the DuckDB, Athena and
 * Timestream adapters: one text in the subset all three speak (`max_by`, `CASE` inside `sum`,
 * quoted `"time"`), run over each store's own source of `gpu_windows` rows (DuckDB's table, Athena's
 * de-duplicated partitions, Timestream's `gpu` records). Values are read back through a getter
 * that accepts JS values (DuckDB) or text (Athena `VarCharValue`, Timestream `ScalarValue`).
 */

/** A result value by column name: a JS value, text, or `undefined`/`null` for SQL NULL. */
export type ColumnGetter = (column: string) => unknown;

/** Rows `recentWindows` returns when no `limit` is given, count. */
export const DEFAULT_RECENT_LIMIT = 1000;

/**
 * @param limit - a `recentWindows` limit
 * @returns a message when it is not an integer ≥ 1, undefined when it is absent or valid
 */
export function limitProblem(limit: number | undefined): string | undefined {
  if (limit === undefined || (Number.isInteger(limit) && limit >= 1)) return undefined;
  return `Expected \`limit\` to be an integer >= 1, got \`${String(limit)}\`; pass a whole number of rows.`;
}

/** The ledger's money and GPU-hours summed, one column each, named as the ledger fields. */
export const LEDGER_SUMS_SQL = `sum(gpu_hours) AS gpu_hours, sum(cost_usd) AS cost_usd, sum(idle_usd) AS idle_usd,
  sum(held_idle_usd) AS held_idle_usd, sum(underused_usd) AS underused_usd,
  sum(broken_usd) AS broken_usd, sum(wasted_usd) AS wasted_usd, sum(throttled_usd) AS throttled_usd`;

/**
 * @param get - a result row with the {@link LEDGER_SUMS_SQL} columns
 * @returns the sums as numbers (NULL, a sum over no row, as 0)
 */
export function ledgerSumsFrom(get: ColumnGetter): LedgerSums {
  const num = (c: string): number => Number(present(get(c)) ?? 0);
  return {
    gpu_hours: num('gpu_hours'),
    cost_usd: num('cost_usd'),
    idle_usd: num('idle_usd'),
    held_idle_usd: num('held_idle_usd'),
    underused_usd: num('underused_usd'),
    broken_usd: num('broken_usd'),
    wasted_usd: num('wasted_usd'),
    throttled_usd: num('throttled_usd'),
  };
}

/** Column alias of the wasted dollars of one diagnosis. */
/**
 * The result column holding the waste of one diagnosis.
 *
 * @param diagnosis - a diagnosis
 * @returns `wasted_<diagnosis>_usd`, e.g. `wasted_tensor_idle_usd`
 */
export const diagnosisColumn = (diagnosis: Diagnosis): string => `wasted_${diagnosis}_usd`;

/** `wasted_usd` summed per diagnosis, one column per {@link DIAGNOSES} entry (`wasted_<diagnosis>_usd`). */
export const WASTE_BY_DIAGNOSIS_SQL = DIAGNOSES.map(
  (d) => `sum(CASE WHEN diagnosis = '${d}' THEN wasted_usd END) AS ${diagnosisColumn(d)}`,
).join(',\n  ');

/** SQL NULL (`null`/`undefined`) → undefined, else the value. */
function present(value: unknown): unknown {
  return value === null || value === undefined ? undefined : value;
}

/**
 * @param get - result columns by name
 * @returns the `wasted_<diagnosis>_usd` columns with waste > 0, as a map
 */
export function wasteByDiagnosisFrom(get: ColumnGetter): Partial<Record<Diagnosis, number>> {
  const out: Partial<Record<Diagnosis, number>> = {};
  for (const d of DIAGNOSES) {
    const v = present(get(diagnosisColumn(d)));
    if (v !== undefined && Number(v) > 0) out[d] = Number(v);
  }
  return out;
}

/** The `gpu_windows` column each grouping sums by. */
const GROUP_COLUMNS: { readonly [G in WasteGroup]: string } = {
  team: 'team',
  job: 'job',
  namespace: 'namespace',
  pod: 'pod',
  instance_type: 'instance_type',
  instance: 'instance_id',
  diagnosis: 'diagnosis',
};

/**
 * @param by - a grouping
 * @returns the `gpu_windows` column it sums by (`instance` → `instance_id`)
 */
export function wasteGroupColumn(by: WasteGroup): string {
  return GROUP_COLUMNS[by];
}

/**
 * @param source - a relation of `gpu_windows` rows already limited to the range (a table or a subquery)
 * @param by - the grouping
 * @param extra - more aggregate columns, each `expression AS name` (the fleet evaluator's CUR pricing)
 * @default extra - none
 * @returns the query: `group_key`, the ledger sums, the unpriced GPU-hours and the per-diagnosis
 *   waste per group (and the `extra` columns)
 */
export function wasteGroupSql(source: string, by: WasteGroup, extra: readonly string[] = []): string {
  const column = GROUP_COLUMNS[by];
  return `SELECT ${column} AS group_key,
  ${LEDGER_SUMS_SQL},
  sum(CASE WHEN price_source = '${UNPRICED_SOURCE}' THEN gpu_hours END) AS unpriced_gpu_hours,
  ${[WASTE_BY_DIAGNOSIS_SQL, ...extra].join(',\n  ')}
FROM ${source} AS w
GROUP BY ${column}`;
}

/**
 * @param get - one result row of {@link wasteGroupSql}
 * @returns the group row
 */
export function wasteGroupRowFrom(get: ColumnGetter): WasteGroupRow {
  const group = present(get('group_key'));
  const unpriced = Number(present(get('unpriced_gpu_hours')) ?? 0);
  return {
    ...(group !== undefined ? { group: String(group) } : {}),
    ...ledgerSumsFrom(get),
    wasted_by_diagnosis_usd: wasteByDiagnosisFrom(get),
    ...(unpriced > 0 ? { unpriced_gpu_hours: unpriced } : {}),
  };
}

/**
 * Report order of group rows: `wasted_usd` descending, then group ascending, the unknown group last.
 *
 * @returns negative when `a` comes first
 */
export function compareWasteGroups(a: WasteGroupRow, b: WasteGroupRow): number {
  if (a.wasted_usd !== b.wasted_usd) return b.wasted_usd - a.wasted_usd;
  if (a.group === b.group) return 0;
  if (a.group === undefined) return 1;
  if (b.group === undefined) return -1;
  return a.group < b.group ? -1 : 1;
}

/**
 * @param source - a relation of `gpu_windows` rows already limited to the range
 * @returns the query: per instance its latest window end and that window's instance type
 */
export function lastSeenSql(source: string): string {
  return `SELECT instance_id, max_by(instance_type, "time") AS instance_type, max("time") AS last_seen
FROM ${source} AS w
GROUP BY instance_id
ORDER BY instance_id`;
}

/**
 * @param source - a relation of `gpu_windows` rows already limited to the range (and de-duplicated)
 * @returns the query: per instance and `job` tag the `avg` of each straggler metric (NULL, read as
 *   absent, when no window carried it); windows without a job tag left out
 */
export function nodeJobMeansSql(source: string): string {
  return `SELECT instance_id, job,
  ${STRAGGLER_METRICS.map((m) => `avg(${m}) AS ${m}`).join(', ')}
FROM ${source} AS w
WHERE job IS NOT NULL
GROUP BY instance_id, job
ORDER BY instance_id, job`;
}

/**
 * @param get - one result row of {@link nodeJobMeansSql}
 * @returns the entry; a NULL mean is absent
 */
export function nodeJobMeansFrom(get: ColumnGetter): NodeJobMeans {
  const means: Record<string, number> = {};
  for (const m of STRAGGLER_METRICS) {
    const v = present(get(m));
    if (v !== undefined) means[m] = Number(v);
  }
  return { instance_id: String(get('instance_id')), job: String(get('job')), ...means };
}

/**
 * A stored time as ISO 8601 UTC with ms: a JS Date (DuckDB), or the text Athena and Timestream
 * print (`2026-03-10 12:00:10.000`, up to 9 fractional digits, UTC).
 *
 * @param value - the time
 * @returns e.g. `2026-03-10T12:00:10.000Z`
 */
export function storedTimeToIso(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  const text = String(value);
  const m = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d+))?/.exec(text);
  if (m === null) return new Date(Date.parse(text)).toISOString();
  return `${m[1]}T${m[2]}.${(m[3] ?? '').slice(0, 3).padEnd(3, '0')}Z`;
}

/**
 * @param get - one result row of `lastSeenSql`
 * @returns the entry
 */
export function lastSeenFrom(get: ColumnGetter): LastSeen {
  return {
    instance_id: String(get('instance_id')),
    instance_type: String(get('instance_type')),
    last_seen: storedTimeToIso(get('last_seen')),
  };
}

/** A value of a typed column as JS: numbers, booleans (`true`/`'true'`), text. */
function typed(type: MeasureType, value: unknown): string | number | boolean {
  if (type === 'BOOLEAN') return value === true || value === 'true';
  if (type === 'VARCHAR') return String(value);
  return Number(value);
}

/**
 * One `gpu_windows` row read back: identity, every present metric and ledger field with its
 * type; columns a store does not keep are left absent (see {@link StoredGpuWindow}). `start` is
 * read, or derived from `time − window_s` where the store keeps no start (Timestream).
 *
 * @param get - the row's columns by name
 * @returns the window
 */
export function gpuWindowFrom(get: ColumnGetter): StoredGpuWindow {
  const metrics: Record<string, number | boolean> = {};
  for (const n of GPU_METRIC_NAMES) {
    const v = present(get(n));
    if (v !== undefined) metrics[n] = typed(GPU_METRIC_TYPES[n], v) as number | boolean;
  }
  const ledger: Record<string, string | number | boolean> = {};
  for (const n of LEDGER_FIELD_NAMES) {
    const v = present(get(n));
    if (v !== undefined) ledger[n] = typed(LEDGER_MEASURE_TYPES[n], v);
  }
  const text = (c: string): string | undefined => {
    const v = present(get(c));
    return v === undefined ? undefined : String(v);
  };
  const time = storedTimeToIso(get('time'));
  const start = present(get('start'));
  const seq = present(get('seq'));
  const optional = (c: string): Record<string, string> => {
    const v = text(c);
    return v === undefined ? {} : { [c]: v };
  };
  return {
    time,
    start:
      start !== undefined
        ? storedTimeToIso(start)
        : new Date(Date.parse(time) - Number(ledger.window_s ?? 0) * 1000).toISOString(),
    instance_id: String(get('instance_id')),
    instance_type: String(get('instance_type')),
    ...optional('region'),
    ...optional('az'),
    gpu_index: Number(get('gpu_index')),
    ...optional('gpu_uuid'),
    ...optional('gpu_name'),
    ...(present(get('gpu_instance_id')) !== undefined
      ? { gpu_instance_id: Number(get('gpu_instance_id')) }
      : {}),
    ...optional('gpu_instance_profile'),
    ...optional('team'),
    ...optional('job'),
    ...optional('namespace'),
    ...optional('pod'),
    ...optional('container'),
    ...optional('batch_id'),
    ...(seq !== undefined ? { seq: Number(seq) } : {}),
    metrics: metrics as GpuMetrics,
    ledger: ledger as unknown as LedgerEntry,
  };
}
