import { isUnpriced } from './pricing';
import { DIAGNOSES, type Diagnosis, type WasteReportRow } from './types';

/**
 * The finance report's line items (docs/finance.md, "Line items"): one row per instance and day, or
 * per GPU and day, with the tags, the place, the purchase option, the price used and its source,
 * the GPU-hours, the idle GPU-hours, the cost and the wasted dollars split by waste class and by
 * cause, so a spreadsheet's pivot table needs no reshaping. Pure: the per-day rows come from the
 * store (`TelemetryStore.queryWaste` over each day of the period).
 */

/** The grains a line item can have: one instance and day, or one GPU and day. */
export const LINE_ITEM_GRAINS = ['instance', 'gpu'] as const;
/** One of {@link LINE_ITEM_GRAINS}. */
export type LineItemGrain = (typeof LINE_ITEM_GRAINS)[number];

/**
 * A purchase option as the report says it: `on-demand` (list price, a Savings Plan, a reservation,
 * a Capacity Block or an override applied to an on-demand host) or `spot`.
 */
export type ReportLifecycle = 'on-demand' | 'spot';

/** The per-GPU sums of one day of the period (the day in the report's time zone). */
export interface ReportDayRows {
  /** The calendar day, `YYYY-MM-DD` (UTC, or the report's time zone). */
  readonly day: string;
  /** Per-GPU ledger sums over the part of that day inside the period. */
  readonly rows: readonly WasteReportRow[];
}

/** One line item: an instance (or one of its GPUs) over one day. Money in USD, unrounded. */
export interface ReportLineItem {
  /** The calendar day, `YYYY-MM-DD`. */
  readonly day: string;
  readonly instance_id: string;
  /** The GPU, for the `gpu` grain only. */
  readonly gpu_index?: number;
  /** The MIG slice (GPU instance id) of the `gpu` grain's item, where the GPU was split; absent for a whole GPU. */
  readonly gpu_instance_id?: number;
  /** The slice's profile (`1g.10gb`), with `gpu_instance_id`. */
  readonly gpu_instance_profile?: string;
  readonly instance_type: string;
  /** Tags of the GPU with the most GPU-hours that day (the latest window's); absent when untagged. */
  readonly team?: string;
  readonly job?: string;
  readonly namespace?: string;
  /** AWS region and Availability Zone; absent where the store keeps none. */
  readonly region?: string;
  readonly az?: string;
  /** Purchase option, from the price source (see {@link lifecycleOfPriceSource}); absent when unpriced. */
  readonly lifecycle?: ReportLifecycle;
  /** Instance price used (the latest window's), USD per instance-hour. */
  readonly price_usd_per_hour: number;
  /** Where that price came from (`builtin:<table>`, `savings_plan`, `spot`, `unpriced`, …). */
  readonly price_source: string;
  /** GPUs summed into the item (1 for the `gpu` grain). */
  readonly gpus: number;
  readonly gpu_hours: number;
  /** GPU-hours classed idle or held-idle, h; counted even where the host is unpriced. */
  readonly idle_gpu_hours: number;
  readonly cost_usd: number;
  readonly wasted_usd: number;
  readonly idle_usd: number;
  readonly held_idle_usd: number;
  readonly underused_usd: number;
  readonly broken_usd: number;
  /** Lost to thermal or power throttling, USD; not part of `wasted_usd`. */
  readonly throttled_usd: number;
  /** Wasted USD by the diagnosis stored with each window; only causes with waste > 0. */
  readonly wasted_by_diagnosis_usd: Readonly<Partial<Record<Diagnosis, number>>>;
}

/**
 * The purchase option a stored price source implies: `spot` for `spot`, `spot_discount:<d>` (the
 * ledger prices a spot host only from spot rates) and `cur:spot` (a CUR line item whose
 * `pricing_term` is `Spot`), `on-demand` for every other priced source (`cur` included)
 * (a Savings Plan, a reservation or a Capacity Block rate applies to on-demand hosts only), and
 * none for `unpriced` (a spot host without a rate and a type without a list price look alike).
 *
 * @param priceSource - a ledger row's `price_source`
 * @returns the purchase option, or undefined when the source cannot tell
 * @example
 * lifecycleOfPriceSource('spot_discount:0.6'); // 'spot'
 */
export function lifecycleOfPriceSource(priceSource: string): ReportLifecycle | undefined {
  if (isUnpriced(priceSource)) return undefined;
  return priceSource === 'spot' || priceSource === 'cur:spot' || priceSource.startsWith('spot_discount:')
    ? 'spot'
    : 'on-demand';
}

/** A row's MIG slice fields, where it has them. */
function sliceOf(r: WasteReportRow): Pick<WasteReportRow, 'gpu_instance_id' | 'gpu_instance_profile'> {
  return {
    ...(r.gpu_instance_id !== undefined ? { gpu_instance_id: r.gpu_instance_id } : {}),
    ...(r.gpu_instance_profile !== undefined ? { gpu_instance_profile: r.gpu_instance_profile } : {}),
  };
}

function itemOf(day: string, r: WasteReportRow, grain: LineItemGrain): ReportLineItem {
  const lifecycle = lifecycleOfPriceSource(r.price_source);
  return {
    day,
    instance_id: r.instance_id,
    ...(grain === 'gpu' ? { gpu_index: r.gpu_index, ...sliceOf(r) } : {}),
    instance_type: r.instance_type,
    ...(r.team !== undefined ? { team: r.team } : {}),
    ...(r.job !== undefined ? { job: r.job } : {}),
    ...(r.namespace !== undefined ? { namespace: r.namespace } : {}),
    ...(r.region !== undefined ? { region: r.region } : {}),
    ...(r.az !== undefined ? { az: r.az } : {}),
    ...(lifecycle !== undefined ? { lifecycle } : {}),
    price_usd_per_hour: r.price_usd_per_hour,
    price_source: r.price_source,
    gpus: 1,
    gpu_hours: r.gpu_hours,
    idle_gpu_hours: r.idle_gpu_hours ?? 0,
    cost_usd: r.cost_usd,
    wasted_usd: r.wasted_usd,
    idle_usd: r.idle_usd,
    held_idle_usd: r.held_idle_usd,
    underused_usd: r.underused_usd,
    broken_usd: r.broken_usd,
    throttled_usd: r.throttled_usd,
    wasted_by_diagnosis_usd: { ...r.wasted_by_diagnosis_usd },
  };
}

/** Adds `b`'s money into `a` (same instance and day); descriptive fields stay those of `a`. */
function merged(a: ReportLineItem, b: ReportLineItem): ReportLineItem {
  const causes: Partial<Record<Diagnosis, number>> = { ...a.wasted_by_diagnosis_usd };
  for (const d of DIAGNOSES) {
    const usd = b.wasted_by_diagnosis_usd[d];
    if (usd !== undefined) causes[d] = (causes[d] ?? 0) + usd;
  }
  return {
    ...a,
    gpus: a.gpus + b.gpus,
    gpu_hours: a.gpu_hours + b.gpu_hours,
    idle_gpu_hours: a.idle_gpu_hours + b.idle_gpu_hours,
    cost_usd: a.cost_usd + b.cost_usd,
    wasted_usd: a.wasted_usd + b.wasted_usd,
    idle_usd: a.idle_usd + b.idle_usd,
    held_idle_usd: a.held_idle_usd + b.held_idle_usd,
    underused_usd: a.underused_usd + b.underused_usd,
    broken_usd: a.broken_usd + b.broken_usd,
    throttled_usd: a.throttled_usd + b.throttled_usd,
    wasted_by_diagnosis_usd: causes,
  };
}

/**
 * The line items of a period: per day, one item per GPU (`gpu`) or per instance (`instance`: its
 * GPUs summed; tags, place and price those of its GPU with the most GPU-hours that day, the lower
 * GPU index on a tie). Ordered by day, then instance id, then GPU index, so the same store gives
 * the same file. The items' money sums to the per-GPU sums' money exactly (no rounding here).
 *
 * @param days - per day of the period, its per-GPU sums
 * @param grain - `instance` or `gpu`
 * @returns the items
 * @example
 * reportLineItems([{ day: '2026-03-10', rows }], 'instance'); // one item per instance on 2026-03-10
 */
export function reportLineItems(days: readonly ReportDayRows[], grain: LineItemGrain): ReportLineItem[] {
  const out: ReportLineItem[] = [];
  for (const { day, rows } of [...days].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0))) {
    const byId = (a: WasteReportRow, b: WasteReportRow): number =>
      a.instance_id < b.instance_id ? -1 : a.instance_id > b.instance_id ? 1 : 0;
    if (grain === 'gpu') {
      const perGpu = [...rows].sort(
        (a, b) =>
          byId(a, b) || a.gpu_index - b.gpu_index || (a.gpu_instance_id ?? -1) - (b.gpu_instance_id ?? -1),
      );
      out.push(...perGpu.map((r) => itemOf(day, r, 'gpu')));
      continue;
    }
    const ordered = [...rows].sort(
      (a, b) => byId(a, b) || b.gpu_hours - a.gpu_hours || a.gpu_index - b.gpu_index,
    );
    const byInstance = new Map<string, ReportLineItem>();
    for (const r of ordered) {
      const item = itemOf(day, r, 'instance');
      const seen = byInstance.get(r.instance_id);
      byInstance.set(r.instance_id, seen === undefined ? item : merged(seen, item));
    }
    out.push(...byInstance.values());
  }
  return out;
}
