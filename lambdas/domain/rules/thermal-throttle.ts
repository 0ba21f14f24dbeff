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

/**
 * Rule `thermal_throttle` (docs/design.md §6): thermal clock-event reasons in ≥ `thermalThrottleRatioAtLeast`
 * (20 %) of the horizon's samples, or `max_gpu_temp_c > thermalThrottleTempC` (85 °C) → warning; else a
 * mean `gpu_temp_c > thermalWarnTempC` (80 °C, the usual alert level) → info. Notify only: cooling is
 * the host's side, a human decides.
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
      ? 'clocks throttled for heat: the job runs slower than it pays for'
      : `running hot (above ${t.thermalWarnTempC} C): close to thermal throttling`,
  remedy:
    'Heat: check the instance is not in a hot rack position (open an AWS support case with the instance id if it persists), lower the power limit only if asked by support, and compare with the instance’s other GPUs.',
  evidence: (gpus, t) => ({
    thermal_throttle_ratio: perGpu(gpus, (g) => g.window.metrics.thermal_throttle_ratio),
    max_gpu_temp_c: perGpu(gpus, (g) => g.window.metrics.max_gpu_temp_c, celsius),
    gpu_temp_c: perGpu(gpus, (g) => g.window.metrics.gpu_temp_c, celsius),
    throttle_ratio_at_least: percent(t.thermalThrottleRatioAtLeast),
    throttle_temp_c: t.thermalThrottleTempC,
  }),
});
