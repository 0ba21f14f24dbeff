import { gpuConditionRule } from './gpu-condition-rule';
import { perGpu, round3 } from './window-finding';
import type { WindowRule } from './window-rule';

const cv = (v: number): string => String(round3(v));

/**
 * Rule `power_sawtooth` (a power sawtooth means data starvation: the GPU idles between steps): over the horizon, board power
 * swings (`power_cv ≥ powerSawtoothCvAtLeast`, 0.25) while SM activity swings with it (`sm_active_cv ≥
 * powerSawtoothSmActiveCvAtLeast`, 0.5) on a GPU that is not idle: compute, wait, compute. Needs both
 * spreads (horizon statistics). Info, to the owner.
 */
export const powerSawtoothRule: WindowRule<'power_sawtooth'> = gpuConditionRule({
  id: 'power_sawtooth',
  kind: 'efficiency',
  judges: (g) =>
    g.window.metrics.power_cv !== undefined &&
    g.window.metrics.sm_active_cv !== undefined &&
    g.diagnosis !== 'unknown',
  fires: (g, t) =>
    g.diagnosis !== 'idle' &&
    g.diagnosis !== 'held_idle' &&
    (g.window.metrics.power_cv as number) >= t.powerSawtoothCvAtLeast &&
    (g.window.metrics.sm_active_cv as number) >= t.powerSawtoothSmActiveCvAtLeast,
  severity: () => 'info',
  what: () => 'swinging between full power and idle (power sawtooth): starved for data between steps',
  remedy:
    'Data starvation between steps: overlap loading with compute (more DataLoader workers, prefetch, pin_memory), and move host-side work (logging, checkpoint writes, metric syncs) off the step path.',
  evidence: (gpus, t) => ({
    power_cv: perGpu(gpus, (g) => g.window.metrics.power_cv, cv),
    sm_active_cv: perGpu(gpus, (g) => g.window.metrics.sm_active_cv, cv),
    min_power_w: perGpu(
      gpus,
      (g) => g.window.metrics.min_power_w,
      (v) => `${Math.round(v)} W`,
    ),
    max_power_w: perGpu(
      gpus,
      (g) => g.window.metrics.max_power_w,
      (v) => `${Math.round(v)} W`,
    ),
    power_cv_at_least: t.powerSawtoothCvAtLeast,
  }),
});
