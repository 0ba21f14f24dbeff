import { epochMs, type GpuWindow, migComputeShare, migComputeSlices } from '../contract';
import {
  FULLY_USED_EFFICIENCY_AT_LEAST,
  IDLE_EFFICIENCY_BELOW,
  KERNELS_RUNNING_GPU_UTIL_AT_LEAST,
  MS_PER_SECOND,
  SECONDS_PER_HOUR,
} from './constants';
import { LedgerInputError } from './errors';
import { isGpuHeld } from './gpu-holder';
import type { InstancePrice } from './pricing';
import type { Diagnosis, EfficiencySource, LedgerEntry, WasteClass } from './types';

/** Options of {@link computeLedger}. */
export interface LedgerOptions {
  /**
   * Since when this GPU (or the whole instance) is known broken, ISO 8601 (the first fatal hardware
   * event). A window ending after it is `broken`: its whole cost goes to `broken_usd`.
   * @default undefined (not broken)
   */
  readonly brokenSince?: string;
  /**
   * The GPU's efficiency diagnosis from its horizon, stored with the entry so wasted dollars have a
   * cause. @default undefined (no horizon for this GPU in the batch)
   */
  readonly diagnosis?: Diagnosis;
}

/**
 * Computes the waste ledger of one GPU window (docs/design.md §5). No rounding: sums over many windows stay exact
 * to floating point.
 *
 * - `cost_usd = P / N × s × Δt / 3600`, with `P` = `price.price_usd_per_hour`, `N` = `price.gpu_count`,
 *   Δt = end − start in seconds, and `s` the compute share of what the window measures: 1 for a whole
 *   GPU; for a MIG slice (`gpu_instance_profile` `<n>g.<mem>gb`) n / the GPU's compute slices (7 on
 *   A100/H100/H200, 4 on an A30, from `gpu.name`; NVIDIA MIG user guide), so a `1g.10gb` slice of an
 *   H100 costs 1/7 of the GPU's price share and slices covering the whole GPU sum to the GPU's cost.
 *   A GPU's unallocated slices belong to no window and are not priced.
 * - `efficiency` = `sm_active` when measured (source `sm_active`); else `gpu_util` (source `gpu_util`:
 *   an upper bound on efficiency, so the waste is a lower bound); else absent (source `none`, class
 *   `unknown`, no waste counted).
 * - class, first match wins: `broken` (window end after `brokenSince`) → `broken_usd` = cost;
 *   efficiency < {@link IDLE_EFFICIENCY_BELOW}, kernels not running (efficiency from `sm_active` with
 *   `gpu_util` ≥ {@link KERNELS_RUNNING_GPU_UTIL_AT_LEAST} is launch-bound work, classed `underused`)
 *   and no compute process → `idle_usd` = cost;
 *   … held by a process or by a Kubernetes pod (`window.k8s`, even with `compute_processes` 0 or
 *   unknown: see `isGpuHeld`) → `held_idle_usd` = cost; … with `compute_processes` unknown and no
 *   pod → `idle_usd` = cost and `processes_known: false`; otherwise `underused_usd` = cost × (1 − efficiency), class
 *   `underused`, or `none` when efficiency ≥ {@link FULLY_USED_EFFICIENCY_AT_LEAST} (the small
 *   remainder is still counted in `underused_usd`, so the sum over classes stays the formula).
 * - `wasted_usd` = idle + held_idle + underused + broken, so 0 ≤ wasted_usd ≤ cost_usd.
 * - `throttled_usd` = (cost_usd − wasted_usd) × max(`thermal_throttle_ratio`, `power_throttle_ratio`)
 *   (absent ratios count 0): the dollars of the time the clocks were held down by heat or the power
 *   cap, lost rather than wasted. The max is the share of time throttled for at least one reason (a
 *   lower bound: the two can overlap, and their union is unknown); it is taken only on the dollars
 *   not already counted as waste, so wasted_usd + throttled_usd ≤ cost_usd and no dollar is both.
 *
 * @param window - a validated GPU window (flush; a horizon window would double-count the money)
 * @param price - the instance price (see `priceFor`)
 * @param opts - `brokenSince` and `diagnosis`, see {@link LedgerOptions}
 * @returns the ledger entry; money in USD, `window_s` in s, `gpu_hours` in h of whole GPUs (a slice's × its share)
 * @throws {LedgerInputError} when the window end is not after its start, or the price is negative,
 *   non-finite, or split over fewer than 1 GPU
 * @example
 * computeLedger(window10s, priceFor('p5.48xlarge', 'us-east-1')).cost_usd; // 55.04 / 8 × 10 / 3600
 */
export function computeLedger(window: GpuWindow, price: InstancePrice, opts?: LedgerOptions): LedgerEntry {
  const endMs = epochMs(window.end);
  const window_s = (endMs - epochMs(window.start)) / MS_PER_SECOND;
  if (!Number.isFinite(window_s) || window_s <= 0) {
    throw new LedgerInputError(
      'window.end',
      window.end,
      `Expected window end after start, got start ${window.start} and end ${window.end}; pass a validated window.`,
    );
  }
  const P = price.price_usd_per_hour;
  if (!Number.isFinite(P) || P < 0) {
    throw new LedgerInputError('price.price_usd_per_hour', P, `Expected a price in USD/hour >= 0, got ${P}.`);
  }
  const N = price.gpu_count;
  if (!Number.isFinite(N) || N < 1) {
    throw new LedgerInputError('price.gpu_count', N, `Expected a GPU count >= 1, got ${N}.`);
  }
  const share =
    window.gpu_instance_profile === undefined
      ? 1
      : (migComputeShare(window.gpu_instance_profile, migComputeSlices(window.gpu.name)) ?? 1);
  const gpu_hours = (share * window_s) / SECONDS_PER_HOUR;
  const cost_usd = (P / N) * gpu_hours;
  const m = window.metrics;
  let efficiency: number | undefined;
  let efficiency_source: EfficiencySource = 'none';
  if (m.sm_active !== undefined) {
    efficiency = m.sm_active;
    efficiency_source = 'sm_active';
  } else if (m.gpu_util !== undefined) {
    efficiency = m.gpu_util;
    efficiency_source = 'gpu_util';
  }
  const held = isGpuHeld(window);
  const processes_known = held !== undefined;
  let idle_usd = 0;
  let held_idle_usd = 0;
  let underused_usd = 0;
  let broken_usd = 0;
  let waste_class: WasteClass;
  const brokenMs = opts?.brokenSince === undefined ? Number.NaN : Date.parse(opts.brokenSince);
  if (!Number.isNaN(brokenMs) && endMs > brokenMs) {
    waste_class = 'broken';
    broken_usd = cost_usd;
  } else if (efficiency === undefined) {
    waste_class = 'unknown';
  } else if (
    efficiency < IDLE_EFFICIENCY_BELOW &&
    !(efficiency_source === 'sm_active' && (m.gpu_util ?? 0) >= KERNELS_RUNNING_GPU_UTIL_AT_LEAST)
  ) {
    if (held === true) {
      waste_class = 'held_idle';
      held_idle_usd = cost_usd;
    } else {
      waste_class = 'idle';
      idle_usd = cost_usd;
    }
  } else {
    waste_class = efficiency >= FULLY_USED_EFFICIENCY_AT_LEAST ? 'none' : 'underused';
    underused_usd = cost_usd * (1 - efficiency);
  }
  const wasted_usd = idle_usd + held_idle_usd + underused_usd + broken_usd;
  const throttleShare = Math.max(m.thermal_throttle_ratio ?? 0, m.power_throttle_ratio ?? 0);
  const base = {
    window_s,
    gpu_hours,
    price_usd_per_hour: P,
    price_source: price.price_source,
    gpu_count: N,
    cost_usd,
    efficiency_source,
    processes_known,
    waste_class,
    idle_usd,
    held_idle_usd,
    underused_usd,
    broken_usd,
    wasted_usd,
    throttled_usd: Math.max(0, cost_usd - wasted_usd) * throttleShare,
  };
  const withDiagnosis = opts?.diagnosis === undefined ? base : { ...base, diagnosis: opts.diagnosis };
  return efficiency === undefined ? withDiagnosis : { ...withDiagnosis, efficiency };
}
