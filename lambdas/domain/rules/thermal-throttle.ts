import { gpuConditionRule } from './gpu-condition-rule';
import type { HorizonGpu } from './horizon-input';
import type { Thresholds } from './thresholds';
import { percent, perGpu } from './window-finding';
import type { WindowRule } from './window-rule';

function throttling(g: HorizonGpu, t: Thresholds): boolean {
  const m = g.window.metrics;
  return (
    (m.thermal_throttle_ratio !== undefined && m.thermal_throttle_ratio >= t.thermalThrottleRatioAtLeast) ||
    (m.max_gpu_temp_c !== undefined && m.max_gpu_temp_c > t.thermalThrottleTempC)
  );
}

const celsius = (v: number): string => `${Math.round(v)} C`;

/** ` ($x.xx/h of GPU time throttled)`, or nothing when no throttled time is measured (never "$0.00"). */
const lostPhrase = (usd: number): string =>
  usd >= 0.005 ? ` ($${usd.toFixed(2)}/h of GPU time throttled)` : '';

/**
 * Dollars an hour lost to thermal throttling: each throttled GPU's price share × the fraction of the
 * horizon's samples with a thermal clocks-event reason (`thermal_throttle_ratio`) — the time the GPU
 * ran below the clocks it is billed for. A GPU throttled by temperature alone (no ratio) counts 0.
 */
function throttledUsdPerHour(gpus: readonly HorizonGpu[], t: Thresholds): number {
  return gpus
    .filter((g) => throttling(g, t))
    .reduce((sum, g) => sum + g.costUsdPerHour * (g.window.metrics.thermal_throttle_ratio ?? 0), 0);
}

/**
 * Rule `thermal_throttle` (docs/design.md §6): thermal clock-event reasons in ≥ `thermalThrottleRatioAtLeast`
 * (20 %) of the horizon's samples, or `max_gpu_temp_c > thermalThrottleTempC` (85 °C) → warning; else a
 * mean `gpu_temp_c > thermalWarnTempC` (80 °C, the usual alert level) → info. Notify only: cooling is
 * the host's side, a human decides. The throttled time is priced: `throttled_usd_per_hour` = Σ price
 * share × `thermal_throttle_ratio` of the throttled GPUs (docs/detection.md §3).
 */
export const thermalThrottleRule: WindowRule<'thermal_throttle'> = gpuConditionRule({
  id: 'thermal_throttle',
  kind: 'health',
  judges: (g) =>
    g.window.metrics.thermal_throttle_ratio !== undefined ||
    g.window.metrics.max_gpu_temp_c !== undefined ||
    g.window.metrics.gpu_temp_c !== undefined,
  fires: (g, t) =>
    throttling(g, t) ||
    (g.window.metrics.gpu_temp_c !== undefined && g.window.metrics.gpu_temp_c > t.thermalWarnTempC),
  severity: (gpus, t) => (gpus.some((g) => throttling(g, t)) ? 'warning' : 'info'),
  what: (gpus, t) =>
    gpus.some((g) => throttling(g, t))
      ? `clocks throttled for heat: the job runs slower than it pays for${lostPhrase(throttledUsdPerHour(gpus, t))}`
      : `running hot (above ${t.thermalWarnTempC} C): close to thermal throttling`,
  remedy:
    'Heat: check the instance is not in a hot rack position (open an AWS support case with the instance id if it persists), lower the power limit only if asked by support, and compare with the instance’s other GPUs.',
  evidence: (gpus, t) => ({
    thermal_throttle_ratio: perGpu(gpus, (g) => g.window.metrics.thermal_throttle_ratio),
    max_gpu_temp_c: perGpu(gpus, (g) => g.window.metrics.max_gpu_temp_c, celsius),
    gpu_temp_c: perGpu(gpus, (g) => g.window.metrics.gpu_temp_c, celsius),
    throttle_ratio_at_least: percent(t.thermalThrottleRatioAtLeast),
    throttle_temp_c: t.thermalThrottleTempC,
    throttled_usd_per_hour: Math.round(throttledUsdPerHour(gpus, t) * 1000) / 1000,
  }),
});
