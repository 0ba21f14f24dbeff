import { isUnpriced } from './pricing';
import { ReportInputError } from './report-input-error';
import type { Diagnosis, WasteReportRow } from './types';

/**
 * The finance report model (DESIGN §9): over a period, GPU-hours, cost and wasted dollars by waste
 * class and by diagnosis, grouped by team, job, instance type or instance, with the method and the
 * prices used, the top wasters and every unpriced host by name. Pure: the rows come from the store,
 * the clock from the caller; renderers (CSV, HTML, text, SNS) only present it.
 */

/** What a report can be grouped by. */
export const REPORT_GROUPINGS = ['team', 'job', 'instance_type', 'instance', 'diagnosis'] as const;
/** One of {@link REPORT_GROUPINGS}. */
export type ReportGrouping = (typeof REPORT_GROUPINGS)[number];

/** Report period kinds: one day, seven days, one calendar month, ending at the report's end. */
export const REPORT_PERIODS = ['day', 'week', 'month'] as const;
/** One of {@link REPORT_PERIODS}, or `custom` for an explicit from/to. */
export type ReportPeriodKind = (typeof REPORT_PERIODS)[number] | 'custom';

/** The waste classes money is split into (DESIGN §5), in report order. */
export const REPORT_WASTE_CLASSES = ['idle', 'held_idle', 'underused', 'broken'] as const;
/** One of {@link REPORT_WASTE_CLASSES}. */
export type ReportWasteClass = (typeof REPORT_WASTE_CLASSES)[number];

/** Label of the rows whose tag or diagnosis is absent (never dropped, never merged into another). */
export const UNATTRIBUTED = '(none)';

/** Most wasters listed in a report. */
export const REPORT_TOP_WASTERS = 10;

/**
 * The ledger summed per UTC day and per the windows' own diagnosis, team, job, instance type and
 * price source (the store's slice read). Team and job are each window's tags at its time, so a GPU
 * that served two jobs in the period is split between them, never charged to its last one.
 */
export interface WasteSeriesRow {
  /** UTC day of the window end, `YYYY-MM-DD`. */
  readonly day: string;
  /** The windows' diagnosis; absent when they carried none. */
  readonly diagnosis?: Diagnosis;
  /** The windows' `team` tag; absent when untagged. */
  readonly team?: string;
  /** The windows' `job` tag; absent when untagged. */
  readonly job?: string;
  readonly instance_type: string;
  /** The windows' `price_source` (`builtin:<table>`, `savings_plan`, `unpriced`, …). */
  readonly price_source: string;
  readonly gpu_hours: number;
  readonly cost_usd: number;
  readonly idle_usd: number;
  readonly held_idle_usd: number;
  readonly underused_usd: number;
  readonly broken_usd: number;
  readonly wasted_usd: number;
  /** Σ efficiency × gpu_hours over the windows where efficiency was measured. */
  readonly efficiency_weighted: number;
  /** Σ gpu_hours over the windows where efficiency was measured. */
  readonly efficiency_hours: number;
}

/** Money and time of a slice of the fleet. All USD, unrounded. */
export interface ReportMoney {
  readonly gpu_hours: number;
  readonly cost_usd: number;
  /** idle + held_idle + underused + broken. */
  readonly wasted_usd: number;
  /** Wasted USD by class. */
  readonly by_class: Readonly<Record<ReportWasteClass, number>>;
}

/** One group of the report (a team, a job, an instance type, an instance, or a diagnosis). */
export interface ReportGroup extends ReportMoney {
  /** The group's key; {@link UNATTRIBUTED} when the tag or diagnosis is absent. */
  readonly key: string;
  /** GPUs in the group; only for instance groups (a GPU's windows may span several teams, jobs or causes). */
  readonly gpus?: number;
  /** GPU-hour-weighted efficiency over the measured windows, 0..1; absent when never measured. */
  readonly efficiency?: number;
  /** Distinct price sources used (`builtin:<table>`, `savings_plan`, `unpriced`, …). */
  readonly price_sources: readonly string[];
  /** True when part of the group is unpriced (its cost is then a lower bound). */
  readonly unpriced: boolean;
}

/** One instance of the top-wasters list. */
export interface ReportWaster extends ReportMoney {
  readonly instance_id: string;
  readonly instance_type: string;
  readonly team?: string;
  readonly job?: string;
  readonly price_usd_per_hour: number;
  readonly price_source: string;
}

/** An instance costed at 0 because nobody priced it. */
export interface UnpricedHost {
  readonly instance_id: string;
  readonly instance_type: string;
  readonly gpu_hours: number;
}

/** The report period: `from ≤ window end < to`, ISO 8601 UTC. */
export interface ReportPeriod {
  readonly kind: ReportPeriodKind;
  readonly from: string;
  readonly to: string;
}

/** How efficiency and money were measured, in words finance can read. */
export interface ReportMethod {
  /** `sm_active`, `gpu_util`, `mixed` (both, by GPU), or `none`. */
  readonly efficiency_source: 'sm_active' | 'gpu_util' | 'mixed' | 'none';
  /** The method note: where efficiency comes from and what that means for the waste. */
  readonly note: string;
  /** Further notes (idle vs held-idle not told apart, unpriced hosts). */
  readonly caveats: readonly string[];
}

/** The finance report (DESIGN §9). */
export interface WasteReport {
  readonly period: ReportPeriod;
  /** When the report was made, ISO 8601 (the caller's clock). */
  readonly generated_at: string;
  readonly method: ReportMethod;
  /** The price sources used, with GPU-hours priced by each (`builtin:<table id>`, `savings_plan`, …). */
  readonly prices: readonly { readonly source: string; readonly gpu_hours: number }[];
  /** The whole fleet over the period. */
  readonly totals: ReportMoney & { readonly gpus: number; readonly instances: number };
  /** Wasted share of cost, 0..1 (0 when nothing was spent). */
  readonly wasted_share: number;
  /** The grouping asked for, and its groups by wasted USD descending. */
  readonly by: ReportGrouping;
  readonly groups: readonly ReportGroup[];
  /** Always present for the HTML page and the SNS message: by team and by diagnosis. */
  readonly by_team: readonly ReportGroup[];
  readonly by_diagnosis: readonly ReportGroup[];
  /** Per UTC day of the period that has data, ascending. */
  readonly daily: readonly { readonly day: string; readonly cost_usd: number; readonly wasted_usd: number }[];
  /** Instances by wasted USD descending, at most {@link REPORT_TOP_WASTERS}. */
  readonly top_wasters: readonly ReportWaster[];
  /** Every unpriced instance, by id. */
  readonly unpriced: readonly UnpricedHost[];
}

const MS_PER_DAY = 86_400_000;

/**
 * The period of a report ending at `end`: one day, seven days, or one calendar month (UTC) back.
 *
 * @param kind - `day`, `week` or `month`
 * @param end - exclusive end
 * @returns `{ kind, from, to }`
 * @throws {ReportInputError} when `end` is not a valid date
 * @example
 * reportPeriod('month', new Date('2026-03-31T00:00:00Z')); // from 2026-02-28T00:00:00.000Z (day clamped)
 */
export function reportPeriod(kind: (typeof REPORT_PERIODS)[number], end: Date): ReportPeriod {
  if (Number.isNaN(end.getTime())) throw new ReportInputError('end', end, 'Expected a valid end date.');
  let from: Date;
  if (kind === 'day') from = new Date(end.getTime() - MS_PER_DAY);
  else if (kind === 'week') from = new Date(end.getTime() - 7 * MS_PER_DAY);
  else {
    const y = end.getUTCFullYear();
    const m = end.getUTCMonth() - 1;
    const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
    from = new Date(
      Date.UTC(
        y,
        m,
        Math.min(end.getUTCDate(), lastDay),
        end.getUTCHours(),
        end.getUTCMinutes(),
        end.getUTCSeconds(),
        end.getUTCMilliseconds(),
      ),
    );
  }
  return { kind, from: from.toISOString(), to: end.toISOString() };
}

interface Acc {
  gpus: number;
  gpu_hours: number;
  cost_usd: number;
  idle: number;
  held_idle: number;
  underused: number;
  broken: number;
  eff_weighted: number;
  eff_hours: number;
  price_sources: Set<string>;
}

const emptyAcc = (): Acc => ({
  gpus: 0,
  gpu_hours: 0,
  cost_usd: 0,
  idle: 0,
  held_idle: 0,
  underused: 0,
  broken: 0,
  eff_weighted: 0,
  eff_hours: 0,
  price_sources: new Set(),
});

function add(acc: Acc, r: WasteReportRow | WasteSeriesRow, gpus: number): void {
  acc.gpus += gpus;
  acc.gpu_hours += r.gpu_hours;
  acc.cost_usd += r.cost_usd;
  acc.idle += r.idle_usd;
  acc.held_idle += r.held_idle_usd;
  acc.underused += r.underused_usd;
  acc.broken += r.broken_usd;
  if ('efficiency_weighted' in r) {
    acc.eff_weighted += r.efficiency_weighted;
    acc.eff_hours += r.efficiency_hours;
  } else if (r.efficiency !== undefined) {
    acc.eff_weighted += r.efficiency * r.gpu_hours;
    acc.eff_hours += r.gpu_hours;
  }
  acc.price_sources.add(r.price_source);
}

function money(acc: Acc): ReportMoney {
  const by_class = { idle: acc.idle, held_idle: acc.held_idle, underused: acc.underused, broken: acc.broken };
  return {
    gpu_hours: acc.gpu_hours,
    cost_usd: acc.cost_usd,
    wasted_usd: by_class.idle + by_class.held_idle + by_class.underused + by_class.broken,
    by_class,
  };
}

function byWastedDesc<T extends { wasted_usd: number; key?: string; instance_id?: string }>(
  a: T,
  b: T,
): number {
  if (a.wasted_usd !== b.wasted_usd) return b.wasted_usd - a.wasted_usd;
  const ka = a.key ?? a.instance_id ?? '';
  const kb = b.key ?? b.instance_id ?? '';
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

function groupBy<R extends WasteReportRow | WasteSeriesRow>(
  rows: readonly R[],
  keyOf: (r: R) => string,
  countGpus: boolean,
): ReportGroup[] {
  const accs = new Map<string, Acc>();
  for (const r of rows) {
    const key = keyOf(r);
    const acc = accs.get(key) ?? emptyAcc();
    add(acc, r, 1);
    accs.set(key, acc);
  }
  return [...accs.entries()]
    .map(([key, acc]) => ({
      key,
      ...(countGpus ? { gpus: acc.gpus } : {}),
      ...money(acc),
      ...(acc.eff_hours > 0 ? { efficiency: acc.eff_weighted / acc.eff_hours } : {}),
      price_sources: [...acc.price_sources].sort(),
      unpriced: [...acc.price_sources].some(isUnpriced),
    }))
    .sort(byWastedDesc);
}

/** Group keys of the slice read, each the window's own value. */
const SLICE_KEY_OF: Readonly<Record<Exclude<ReportGrouping, 'instance'>, (r: WasteSeriesRow) => string>> = {
  team: (r) => r.team ?? UNATTRIBUTED,
  job: (r) => r.job ?? UNATTRIBUTED,
  instance_type: (r) => r.instance_type,
  diagnosis: (r) => r.diagnosis ?? UNATTRIBUTED,
};

function methodOf(rows: readonly WasteReportRow[], unpriced: readonly UnpricedHost[]): ReportMethod {
  const sources = new Set(rows.map((r) => r.efficiency_source).filter((s) => s !== 'none'));
  const efficiency_source =
    sources.size === 0
      ? 'none'
      : sources.size > 1 || sources.has('mixed')
        ? 'mixed'
        : (([...sources][0] as 'sm_active' | 'gpu_util') ?? 'none');
  const note = {
    sm_active:
      'Efficiency is SM activity (NVML GPM or DCGM profiling): the share of time the GPU’s streaming multiprocessors had work.',
    gpu_util:
      'Efficiency is NVML GPU utilization (no profiling counters on these GPUs): an upper bound on real efficiency, so the waste shown is a lower bound.',
    mixed:
      'Efficiency is SM activity where profiling counters exist, and NVML GPU utilization elsewhere (an upper bound there, so the waste shown is a lower bound).',
    none: 'No efficiency was measured in this period: only idle, held-idle and broken time can be costed.',
  }[efficiency_source];
  const caveats: string[] = [];
  if (rows.some((r) => r.processes_unknown)) {
    caveats.push('Where compute process counts were unknown, idle GPUs are counted as idle (not held-idle).');
  }
  if (unpriced.length > 0) {
    caveats.push(
      `${unpriced.length} instance(s) are unpriced (no list price for their type and region, or a spot host without a spot price): costed at $0, listed below. Set price rates to price them.`,
    );
  }
  return { efficiency_source, note, caveats };
}

/**
 * Builds the finance report from the store's per-GPU sums and daily series.
 *
 * @param input.rows - per-GPU ledger sums over the period (`TelemetryStore.queryWaste`): instances,
 *   GPUs, top wasters and unpriced hosts
 * @param input.series - the slice read over the same period: days, and the team, job, instance type
 *   and diagnosis groups by each window's own values
 * @param input.period - the period the rows cover
 * @param input.by - the grouping asked for
 * @param input.generatedAt - the caller's clock
 * @returns the report; every sum unrounded (renderers round)
 * @throws {ReportInputError} when `by` is not one of {@link REPORT_GROUPINGS}, or the period is empty
 */
export function buildWasteReport(input: {
  readonly rows: readonly WasteReportRow[];
  readonly series: readonly WasteSeriesRow[];
  readonly period: ReportPeriod;
  readonly by: ReportGrouping;
  readonly generatedAt: Date;
}): WasteReport {
  const { rows, series, period, by } = input;
  if (!(REPORT_GROUPINGS as readonly string[]).includes(by)) {
    throw new ReportInputError(
      'by',
      by,
      `Expected the report grouping to be one of ${REPORT_GROUPINGS.join(', ')}, got \`${String(by)}\`.`,
    );
  }
  if (!(Date.parse(period.from) < Date.parse(period.to))) {
    throw new ReportInputError(
      'period',
      period,
      `Expected the period to start before it ends, got ${period.from} to ${period.to}.`,
    );
  }
  const all = emptyAcc();
  for (const r of rows) add(all, r, 1);
  const instances = groupBy(rows, (r) => r.instance_id, true);
  const unpricedHosts: UnpricedHost[] = [];
  const wasters: ReportWaster[] = [];
  for (const g of instances) {
    const first = rows.find((r) => r.instance_id === g.key) as WasteReportRow;
    if (g.unpriced) {
      unpricedHosts.push({ instance_id: g.key, instance_type: first.instance_type, gpu_hours: g.gpu_hours });
    }
    wasters.push({
      instance_id: g.key,
      instance_type: first.instance_type,
      ...(first.team !== undefined ? { team: first.team } : {}),
      ...(first.job !== undefined ? { job: first.job } : {}),
      gpu_hours: g.gpu_hours,
      cost_usd: g.cost_usd,
      wasted_usd: g.wasted_usd,
      by_class: g.by_class,
      price_usd_per_hour: first.price_usd_per_hour,
      price_source: first.price_source,
    });
  }
  const prices = new Map<string, number>();
  for (const r of rows) prices.set(r.price_source, (prices.get(r.price_source) ?? 0) + r.gpu_hours);
  const days = new Map<string, { cost_usd: number; wasted_usd: number }>();
  for (const s of series) {
    const d = days.get(s.day) ?? { cost_usd: 0, wasted_usd: 0 };
    d.cost_usd += s.cost_usd;
    d.wasted_usd += s.wasted_usd;
    days.set(s.day, d);
  }
  const byTeam = groupBy(series, SLICE_KEY_OF.team, false);
  const byDiagnosis = groupBy(series, SLICE_KEY_OF.diagnosis, false);
  const totals = { ...money(all), gpus: all.gpus, instances: instances.length };
  return {
    period,
    generated_at: input.generatedAt.toISOString(),
    method: methodOf(rows, unpricedHosts),
    prices: [...prices.entries()]
      .map(([source, gpu_hours]) => ({ source, gpu_hours }))
      .sort((a, b) => b.gpu_hours - a.gpu_hours || (a.source < b.source ? -1 : 1)),
    totals,
    wasted_share: totals.cost_usd > 0 ? totals.wasted_usd / totals.cost_usd : 0,
    by,
    groups: by === 'instance' ? instances : groupBy(series, SLICE_KEY_OF[by], false),
    by_team: byTeam,
    by_diagnosis: byDiagnosis,
    daily: [...days.entries()].map(([day, d]) => ({ day, ...d })).sort((a, b) => (a.day < b.day ? -1 : 1)),
    top_wasters: wasters.sort(byWastedDesc).slice(0, REPORT_TOP_WASTERS),
    unpriced: unpricedHosts.sort((a, b) => (a.instance_id < b.instance_id ? -1 : 1)),
  };
}
