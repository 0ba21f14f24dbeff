import { type CurCoverage, curCoverageNote } from './cur-columns';
import { HELD_FB_USED_BYTES_AT_LEAST } from './gpu-holder';
import { WASTE_GROUPS, type WasteGroupRow } from './ports';
import { isUnpriced, onDemandPrice } from './pricing';
import type { ReportPeriod } from './report-calendar';
import { explainCause } from './report-causes';
import { ReportInputError } from './report-input-error';
import { type ReportDayRows, type ReportLineItem, reportLineItems } from './report-line-items';
import type { LedgerSums, WasteReportRow } from './types';

/**
 * The finance report model (docs/design.md §9): over a period, GPU-hours, cost and wasted dollars by waste
 * class and by diagnosis, grouped by team, job, Kubernetes namespace or pod, instance type or
 * instance, with the method and the
 * prices used, the top wasters and every unpriced host by name. Pure: the rows come from the store,
 * the clock from the caller; renderers (CSV, HTML, text, SNS) only present it.
 */

/**
 * What a report can be grouped by: the store's groupings ({@link WASTE_GROUPS}), then `gpu` (one
 * group per GPU, made from the per-GPU sums like `instance`; its CSV is one line item per GPU and day).
 */
export const REPORT_GROUPINGS = [...WASTE_GROUPS, 'gpu'] as const;
/** One of {@link REPORT_GROUPINGS}. */
export type ReportGrouping = (typeof REPORT_GROUPINGS)[number];

/** The waste classes money is split into (docs/design.md §5), in report order. */
export const REPORT_WASTE_CLASSES = ['idle', 'held_idle', 'underused', 'broken'] as const;
/** One of {@link REPORT_WASTE_CLASSES}. */
export type ReportWasteClass = (typeof REPORT_WASTE_CLASSES)[number];

/** Label of the rows whose tag or diagnosis is absent (never dropped, never merged into another). */
export const UNATTRIBUTED = '(none)';

/** Most wasters listed in a report. */
export const REPORT_TOP_WASTERS = 10;

/** One UTC day of the period: what was spent and wasted (the trend chart). */
export interface ReportDay {
  /** UTC day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly cost_usd: number;
  readonly wasted_usd: number;
}

/** What the store answers for a report (see `gatherReportInput`). */
export interface ReportInput {
  /** Per-GPU ledger sums over the period (`TelemetryStore.queryWaste`): instances, top wasters, unpriced hosts. */
  readonly rows: readonly WasteReportRow[];
  /**
   * The store's grouped sums (`TelemetryStore.queryWasteBy`) for the groupings the report shows:
   * at least `team`, `diagnosis` and the one asked for (except `instance`, made from `rows`). Each
   * window counts for its own tags, so a GPU that served two jobs is split between them.
   */
  readonly groups: Readonly<Partial<Record<ReportGrouping, readonly WasteGroupRow[]>>>;
  /**
   * Per day of the period that has data, its per-GPU sums (`queryWaste` over the day): the line
   * items and the trend. A day without windows may be left out.
   */
  readonly days: readonly ReportDayRows[];
  /**
   * The previous period's totals (`previousReportPeriod`), for the change against it; absent when
   * not read. @default undefined
   */
  readonly previous?: ReportPreviousPeriod;
}

/** What was spent and wasted in the period before the report's. */
export interface ReportPreviousPeriod {
  readonly period: ReportPeriod;
  readonly cost_usd: number;
  readonly wasted_usd: number;
}

/** The change of the wasted dollars against the previous period. */
export interface ReportChange extends ReportPreviousPeriod {
  /** This period's wasted USD minus the previous one's. */
  readonly wasted_change_usd: number;
  /** That change as a share of the previous wasted USD (0.25 = +25 %); absent when nothing was wasted before. */
  readonly wasted_change_share?: number;
}

/** One price used in the period: an instance type at a price from a source. */
export interface ReportRate {
  readonly instance_type: string;
  /** USD per instance-hour. */
  readonly price_usd_per_hour: number;
  /** `builtin:<table>` (list price), `savings_plan`, `capacity_block`, `override`, `spot`, `cur`, `unpriced`, … */
  readonly price_source: string;
  /** GPU-hours priced at it (the latest price of each GPU over the period). */
  readonly gpu_hours: number;
}

/** Money and time of a slice of the fleet. All USD, unrounded. */
export interface ReportMoney {
  readonly gpu_hours: number;
  readonly cost_usd: number;
  /** idle + held_idle + underused + broken. */
  readonly wasted_usd: number;
  /** Wasted USD by class. */
  readonly by_class: Readonly<Record<ReportWasteClass, number>>;
  /**
   * Lost to thermal or power throttling, USD: Σ of the ledger's `throttled_usd` ((cost − wasted) ×
   * the larger throttle ratio of each window). Not waste and not in `wasted_usd`: wasted +
   * throttled ≤ cost, no dollar in both (docs/detection.md §3).
   */
  readonly throttled_usd: number;
}

/** One group of the report (a team, a job, a namespace, a pod, an instance type, an instance, or a diagnosis). */
export interface ReportGroup extends ReportMoney {
  /** The group's key; {@link UNATTRIBUTED} when the tag or diagnosis is absent. */
  readonly key: string;
  /** GPUs in the group; instance groups only (a GPU's windows may span several teams, jobs or causes). */
  readonly gpus?: number;
  /** GPU-hour-weighted efficiency over the measured windows, 0..1; instance groups only, absent when never measured. */
  readonly efficiency?: number;
  /**
   * True when the group holds unpriced GPU-hours (costed at $0, so its cost is understated): an
   * unpriced instance, or a team, job, namespace, … with windows of one. Absent only in a report
   * built from group sums that do not say (never from a store).
   */
  readonly unpriced?: boolean;
}

/** One instance of the top-wasters list. */
export interface ReportWaster extends ReportMoney {
  readonly instance_id: string;
  readonly instance_type: string;
  readonly team?: string;
  readonly job?: string;
  readonly price_usd_per_hour: number;
  readonly price_source: string;
  /** The cause of most of its wasted dollars (a diagnosis, or `(none)`); absent when nothing was wasted. */
  readonly cause?: string;
  /** What fixes that cause (see `explainCause`); absent with `cause`. */
  readonly fix?: string;
}

/** An instance costed at 0 because nobody priced it. */
export interface UnpricedHost {
  readonly instance_id: string;
  readonly instance_type: string;
  readonly gpu_hours: number;
  /** Idle and held-idle GPU-hours of it, h: idle time shown even where it has no price. */
  readonly idle_gpu_hours: number;
  /** Why nobody priced it, in words (no list price for its type and region, or a spot host without a spot price). */
  readonly reason: string;
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

/** The finance report (docs/design.md §9). */
export interface WasteReport {
  readonly period: ReportPeriod;
  /** When the report was made, ISO 8601 (the caller's clock). */
  readonly generated_at: string;
  readonly method: ReportMethod;
  /** The price sources used, with GPU-hours priced by each (`builtin:<table id>`, `savings_plan`, …). */
  readonly prices: readonly { readonly source: string; readonly gpu_hours: number }[];
  /** The whole fleet over the period; `idle_gpu_hours`: GPU-hours idle or held idle, priced or not. */
  readonly totals: ReportMoney & {
    readonly gpus: number;
    readonly instances: number;
    readonly idle_gpu_hours: number;
  };
  /** The prices used, by instance type, price and source, most GPU-hours first. */
  readonly rates: readonly ReportRate[];
  /** The wasted dollars against the previous period; absent when it was not read. */
  readonly change?: ReportChange;
  /** Wasted share of cost, 0..1 (0 when nothing was spent). */
  readonly wasted_share: number;
  /** The grouping asked for, and its groups by wasted USD descending. */
  readonly by: ReportGrouping;
  readonly groups: readonly ReportGroup[];
  /** Always present for the HTML page and the SNS message: by team and by diagnosis. */
  readonly by_team: readonly ReportGroup[];
  readonly by_diagnosis: readonly ReportGroup[];
  /** Per day of the period that has data, ascending. */
  readonly daily: readonly ReportDay[];
  /**
   * The line items: one per instance and day, or per GPU and day when the report is grouped by
   * `gpu` (see `reportLineItems`); by day, then instance, then GPU.
   */
  readonly line_items: readonly ReportLineItem[];
  /** Instances by wasted USD descending, at most {@link REPORT_TOP_WASTERS}. */
  readonly top_wasters: readonly ReportWaster[];
  /** Every unpriced instance, by id. */
  readonly unpriced: readonly UnpricedHost[];
  /** How much of the period a Cost and Usage Report priced; absent when the report read none. */
  readonly cur?: CurCoverage;
}

interface Acc {
  gpus: number;
  gpu_hours: number;
  cost_usd: number;
  idle: number;
  held_idle: number;
  underused: number;
  broken: number;
  throttled: number;
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
  throttled: 0,
  eff_weighted: 0,
  eff_hours: 0,
  price_sources: new Set(),
});

function add(acc: Acc, r: WasteReportRow, gpus: number): void {
  acc.gpus += gpus;
  acc.gpu_hours += r.gpu_hours;
  acc.cost_usd += r.cost_usd;
  acc.idle += r.idle_usd;
  acc.held_idle += r.held_idle_usd;
  acc.underused += r.underused_usd;
  acc.broken += r.broken_usd;
  acc.throttled += r.throttled_usd;
  if (r.efficiency !== undefined) {
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
    throttled_usd: acc.throttled,
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

/**
 * The key of a GPU's group when a report is grouped by `gpu`; a MIG slice's names its instance and profile.
 *
 * @param instanceId - EC2 instance id
 * @param gpuIndex - NVML device index, ≥ 0
 * @param slice - the MIG slice, where the row is one (`gpu_instance_id`, `gpu_instance_profile`)
 * @returns `<instance id>:<GPU index>`, e.g. `i-0abc:3`; a slice `i-0abc:3/gi7 1g.10gb`
 */
export function gpuGroupKey(
  instanceId: string,
  gpuIndex: number,
  slice?: { readonly gpu_instance_id?: number; readonly gpu_instance_profile?: string },
): string {
  const gpu = `${instanceId}:${gpuIndex}`;
  if (slice?.gpu_instance_id === undefined) return gpu;
  const profile = slice.gpu_instance_profile === undefined ? '' : ` ${slice.gpu_instance_profile}`;
  return `${gpu}/gi${slice.gpu_instance_id}${profile}`;
}

function byInstance(rows: readonly WasteReportRow[], perGpu = false): ReportGroup[] {
  const accs = new Map<string, Acc>();
  for (const r of rows) {
    const key = perGpu ? gpuGroupKey(r.instance_id, r.gpu_index, r) : r.instance_id;
    const acc = accs.get(key) ?? emptyAcc();
    add(acc, r, 1);
    accs.set(key, acc);
  }
  return [...accs.entries()]
    .map(([key, acc]) => ({
      key,
      gpus: acc.gpus,
      ...money(acc),
      ...(acc.eff_hours > 0 ? { efficiency: acc.eff_weighted / acc.eff_hours } : {}),
      unpriced: [...acc.price_sources].some(isUnpriced),
    }))
    .sort(byWastedDesc);
}

/** The store's grouped sums as report groups: untagged windows under {@link UNATTRIBUTED}. */
function fromStore(rows: readonly WasteGroupRow[] | undefined, by: ReportGrouping): ReportGroup[] {
  if (rows === undefined) {
    throw new ReportInputError(
      'groups',
      by,
      `Expected the store's sums grouped by ${by}, got none; query them.`,
    );
  }
  return rows
    .map((r) => {
      const sums: LedgerSums = r;
      return {
        key: r.group ?? UNATTRIBUTED,
        gpu_hours: sums.gpu_hours,
        cost_usd: sums.cost_usd,
        wasted_usd: sums.wasted_usd,
        by_class: {
          idle: sums.idle_usd,
          held_idle: sums.held_idle_usd,
          underused: sums.underused_usd,
          broken: sums.broken_usd,
        },
        throttled_usd: sums.throttled_usd,
        unpriced: (r.unpriced_gpu_hours ?? 0) > 0,
      };
    })
    .sort(byWastedDesc);
}

/** The diagnosis behind most of the wasted dollars of an instance's GPUs, `(none)` for undiagnosed waste. */
function mainCause(rows: readonly WasteReportRow[]): string | undefined {
  const byCause = new Map<string, number>();
  let diagnosed = 0;
  let wasted = 0;
  for (const r of rows) {
    wasted += r.wasted_usd;
    for (const [d, usd] of Object.entries(r.wasted_by_diagnosis_usd)) {
      byCause.set(d, (byCause.get(d) ?? 0) + (usd ?? 0));
      diagnosed += usd ?? 0;
    }
  }
  if (wasted - diagnosed > 1e-12) byCause.set(UNATTRIBUTED, wasted - diagnosed);
  let best: [string, number] | undefined;
  for (const entry of byCause) if (best === undefined || entry[1] > best[1]) best = entry;
  return best?.[0];
}

/** Why a host is unpriced: a spot host where the type has a list price, else no list price for its type and region. */
function unpricedReason(r: WasteReportRow): string {
  if (r.region === undefined)
    return `no price for ${r.instance_type} (its region is not stored: no list price could be looked up)`;
  if (onDemandPrice(r.instance_type, r.region) !== undefined) {
    return `a spot host with no spot price, spot rate or spot_discount for ${r.instance_type} in ${r.region}`;
  }
  return `no list price for ${r.instance_type} in ${r.region} (set a rate: Capacity Blocks, Savings Plans or an override)`;
}

/** The prices used: GPU-hours per instance type, price and source. */
function ratesOf(rows: readonly WasteReportRow[]): ReportRate[] {
  const rates = new Map<string, ReportRate>();
  for (const r of rows) {
    const key = `${r.instance_type}\u0000${r.price_usd_per_hour}\u0000${r.price_source}`;
    const seen = rates.get(key);
    rates.set(key, {
      instance_type: r.instance_type,
      price_usd_per_hour: r.price_usd_per_hour,
      price_source: r.price_source,
      gpu_hours: (seen?.gpu_hours ?? 0) + r.gpu_hours,
    });
  }
  return [...rates.values()].sort(
    (a, b) => b.gpu_hours - a.gpu_hours || (a.instance_type < b.instance_type ? -1 : 1),
  );
}

/** The change of wasted dollars against the previous period. */
function changeOf(wastedUsd: number, previous: ReportPreviousPeriod | undefined): ReportChange | undefined {
  if (previous === undefined) return undefined;
  const delta = wastedUsd - previous.wasted_usd;
  return {
    ...previous,
    wasted_change_usd: delta,
    ...(previous.wasted_usd > 0 ? { wasted_change_share: delta / previous.wasted_usd } : {}),
  };
}

/** The trend: per day with data, the cost and wasted dollars of its rows, ascending. */
function dailyOf(days: readonly ReportDayRows[]): ReportDay[] {
  return days
    .filter((d) => d.rows.length > 0)
    .map((d) => ({
      day: d.day,
      cost_usd: d.rows.reduce((s, r) => s + r.cost_usd, 0),
      wasted_usd: d.rows.reduce((s, r) => s + r.wasted_usd, 0),
    }))
    .sort((a, b) => (a.day < b.day ? -1 : 1));
}

function methodOf(
  rows: readonly WasteReportRow[],
  unpriced: readonly UnpricedHost[],
  cur: CurCoverage | undefined,
): ReportMethod {
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
    caveats.push(
      `Where compute process counts were unknown (dcgm-exporter gives none), framebuffer used decided: an idle GPU with ≥ ${HELD_FB_USED_BYTES_AT_LEAST / 2 ** 20} MiB used counts as held-idle, less as idle.`,
    );
  }
  if (cur !== undefined) caveats.push(curCoverageNote(cur));
  const throttled = rows.reduce((sum, r) => sum + r.throttled_usd, 0);
  if (throttled >= 0.005) {
    caveats.push(
      `$${throttled.toFixed(2)} was lost to thermal or power throttling (clocks held down below what is billed): shown apart as throttled, not in the wasted total; wasted + throttled never exceeds the cost.`,
    );
  }
  if (unpriced.length > 0) {
    caveats.push(
      `${unpriced.length} instance(s) are unpriced (no list price for their type and region, or a spot host without a spot price): costed at $0, listed below. Set price rates to price them.`,
    );
  }
  return { efficiency_source, note, caveats };
}

/**
 * Builds the finance report from the store's answers.
 *
 * @param input - per-GPU sums, grouped sums and days (see {@link ReportInput})
 * @param input.period - the period the rows cover
 * @param input.by - the grouping asked for
 * @param input.generatedAt - the caller's clock
 * @returns the report; every sum unrounded (renderers round)
 * @throws {ReportInputError} when `by` is not one of {@link REPORT_GROUPINGS}, the period is empty,
 *   or a grouping the report shows was not given
 */
export function buildWasteReport(
  input: ReportInput & {
    readonly period: ReportPeriod;
    readonly by: ReportGrouping;
    readonly generatedAt: Date;
    /** What the CUR priced, when the rows were priced from one. @default undefined */
    readonly cur?: CurCoverage;
  },
): WasteReport {
  const { rows, groups, period, by } = input;
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
  const instances = byInstance(rows);
  const unpricedHosts: UnpricedHost[] = [];
  const wasters: ReportWaster[] = [];
  for (const g of instances) {
    const first = rows.find((r) => r.instance_id === g.key) as WasteReportRow;
    const own = rows.filter((r) => r.instance_id === g.key);
    if (g.unpriced) {
      unpricedHosts.push({
        instance_id: g.key,
        instance_type: first.instance_type,
        gpu_hours: g.gpu_hours,
        idle_gpu_hours: own.reduce((sum, r) => sum + (r.idle_gpu_hours ?? 0), 0),
        reason: unpricedReason(first),
      });
    }
    const cause = mainCause(own);
    wasters.push({
      instance_id: g.key,
      instance_type: first.instance_type,
      ...(first.team !== undefined ? { team: first.team } : {}),
      ...(first.job !== undefined ? { job: first.job } : {}),
      gpu_hours: g.gpu_hours,
      cost_usd: g.cost_usd,
      wasted_usd: g.wasted_usd,
      by_class: g.by_class,
      throttled_usd: g.throttled_usd,
      price_usd_per_hour: first.price_usd_per_hour,
      price_source: first.price_source,
      ...(cause !== undefined && g.wasted_usd > 0 ? { cause, fix: explainCause(cause).fix } : {}),
    });
  }
  const prices = new Map<string, number>();
  for (const r of rows) prices.set(r.price_source, (prices.get(r.price_source) ?? 0) + r.gpu_hours);
  const byTeam = fromStore(groups.team, 'team');
  const byDiagnosis = fromStore(groups.diagnosis, 'diagnosis');
  const totals = {
    ...money(all),
    gpus: all.gpus,
    instances: instances.length,
    idle_gpu_hours: rows.reduce((sum, r) => sum + (r.idle_gpu_hours ?? 0), 0),
  };
  const change = changeOf(totals.wasted_usd, input.previous);
  return {
    period,
    generated_at: input.generatedAt.toISOString(),
    method: methodOf(rows, unpricedHosts, input.cur),
    prices: [...prices.entries()]
      .map(([source, gpu_hours]) => ({ source, gpu_hours }))
      .sort((a, b) => b.gpu_hours - a.gpu_hours || (a.source < b.source ? -1 : 1)),
    totals,
    rates: ratesOf(rows),
    ...(change !== undefined ? { change } : {}),
    wasted_share: totals.cost_usd > 0 ? totals.wasted_usd / totals.cost_usd : 0,
    by,
    groups: by === 'instance' ? instances : by === 'gpu' ? byInstance(rows, true) : fromStore(groups[by], by),
    by_team: byTeam,
    by_diagnosis: byDiagnosis,
    daily: dailyOf(input.days),
    line_items: reportLineItems(input.days, by === 'gpu' ? 'gpu' : 'instance'),
    top_wasters: wasters.sort(byWastedDesc).slice(0, REPORT_TOP_WASTERS),
    unpriced: unpricedHosts.sort((a, b) => (a.instance_id < b.instance_id ? -1 : 1)),
    ...(input.cur !== undefined ? { cur: input.cur } : {}),
  };
}
