import type { GpuMetrics } from '../../contract';
import type { HorizonGpu } from './horizon-input';
import { NOT_JUDGED } from './rule';
import { windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/** Consistency constant of the modified z-score: 0.6745 ≈ Φ⁻¹(0.75), so MAD / 0.6745 estimates σ. */
const MODIFIED_Z_CONSTANT = 0.6745;

/** The metrics a straggler is judged on: work (SM active), power and temperature (a cooler GPU works less). */
export const STRAGGLER_METRICS = [
  'sm_active',
  'power_w',
  'gpu_temp_c',
] as const satisfies readonly (keyof GpuMetrics)[];

function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** One GPU's standing on one metric against its peers. */
export interface PeerStanding {
  /** The GPU's value. */
  readonly value: number;
  /** The median of all GPUs' values. */
  readonly median: number;
  /** Modified z-score, 0.6745 (x − median) / MAD; −∞ when MAD is 0 and x is below the median. */
  readonly z: number;
  /** (median − x) / median, the fraction it is below its peers (0 when not below). */
  readonly gap: number;
}

/**
 * Modified z-scores of values against their median (Iglewicz & Hoaglin): robust to the outlier itself,
 * unlike a mean and standard deviation. MAD = 0 (all peers equal) gives ±∞ for a differing value.
 *
 * @param values - one value per GPU
 * @returns one standing per value, same order
 */
export function peerStandings(values: readonly number[]): PeerStanding[] {
  const med = median(values);
  const mad = median(values.map((v) => Math.abs(v - med)));
  return values.map((value) => {
    const diff = value - med;
    const z = mad > 0 ? (MODIFIED_Z_CONSTANT * diff) / mad : diff === 0 ? 0 : diff > 0 ? Infinity : -Infinity;
    const gap = med > 0 && value < med ? (med - value) / med : 0;
    return { value, median: med, z, gap };
  });
}

/**
 * Rule `straggler` (docs/design.md §6; in a synchronous job one GPU 10 % slower slows the whole synchronous job; a cooler GPU
 * is doing less work): one GPU of an instance against its peers on SM active, power and temperature. For
 * each metric present on ≥ `stragglerMinGpus` (3) judged GPUs, a GPU is low when its modified z-score is
 * ≤ `stragglerModifiedZBelow` (−3.5) **and** it is ≥ `stragglerMinGap` (10 %) below the median. A GPU low
 * on SM active, or on every other metric present (power and temperature when SM active is absent), is a
 * straggler. Fewer than 3 GPUs: not judged. Only a busy instance (median SM active, or median power where
 * SM is absent, above idle) is judged. Warning, to the owner.
 */
export const stragglerRule: WindowRule<'straggler'> = {
  id: 'straggler',
  reads: 'horizons',
  kind: 'efficiency',
  evaluate: (input, ctx) => {
    const t = ctx.thresholds;
    const lows = new Map<number, Set<string>>();
    const evidence: Record<string, string | number> = {};
    let metricsJudged = 0;
    let smJudged = false;
    for (const metric of STRAGGLER_METRICS) {
      const gpus = input.gpus.filter((g) => g.window.metrics[metric] !== undefined);
      if (gpus.length < t.stragglerMinGpus) continue;
      const standings = peerStandings(gpus.map((g) => g.window.metrics[metric] as number));
      const med = (standings[0] as PeerStanding).median;
      if (metric === 'sm_active') {
        if (med < t.idleSmActiveBelow) return { judged: true, findings: [] };
        smJudged = true;
      }
      metricsJudged++;
      standings.forEach((s, i) => {
        if (s.z > t.stragglerModifiedZBelow || s.gap < t.stragglerMinGap) return;
        const index = (gpus[i] as HorizonGpu).window.gpu.index;
        const set = lows.get(index) ?? new Set<string>();
        set.add(metric);
        lows.set(index, set);
        evidence[`${metric}_gpu${index}`] = Number(s.value.toPrecision(3));
        evidence[`${metric}_median`] = Number(med.toPrecision(3));
        evidence[`${metric}_z_gpu${index}`] = Number.isFinite(s.z)
          ? Number(s.z.toFixed(1))
          : '-inf (peers equal)';
      });
    }
    if (metricsJudged === 0) return NOT_JUDGED;
    const flagged = input.gpus.filter((g) => {
      const low = lows.get(g.window.gpu.index);
      if (low === undefined) return false;
      return low.has('sm_active') || (!smJudged && low.size >= Math.min(2, metricsJudged));
    });
    if (flagged.length === 0) return { judged: true, findings: [] };
    // The whole job waits for the slowest GPU: what the straggler costs is the other GPUs' wait.
    const gpuPrice = input.price.price_usd_per_hour / input.price.gpu_count;
    const worstGap = Math.max(
      ...flagged.map((g) => {
        const sm = g.window.metrics.sm_active;
        const med = evidence.sm_active_median;
        return sm !== undefined && typeof med === 'number' && med > 0 ? (med - sm) / med : t.stragglerMinGap;
      }),
    );
    const peers = Math.max(0, input.gpus.length - flagged.length);
    return {
      judged: true,
      findings: [
        windowFinding(input, {
          rule: 'straggler',
          severity: 'warning',
          gpus: flagged,
          what: `working less than the ${peers} peers (SM active, power, temperature): the synchronous job runs at the straggler's pace`,
          remedy:
            'Inspect the slow GPU (nvidia-smi -q: clocks, throttle reasons, PCIe link width/speed, NVLink state); if it stays behind after a reset, drain the node and have it replaced.',
          evidence: { ...evidence, z_at_most: t.stragglerModifiedZBelow, gap_at_least: t.stragglerMinGap },
          wastedUsdPerHour: gpuPrice * peers * worstGap,
        }),
      ],
    };
  },
};
