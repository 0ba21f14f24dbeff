import { gpuConditionRule } from './gpu-condition-rule';
import type { HorizonGpu } from './horizon-input';
import type { Thresholds } from './thresholds';
import { percent, perGpu, round3 } from './window-finding';
import type { WindowRule } from './window-rule';

/** Seconds until the framebuffer is full at the horizon's growth, or undefined when it does not grow. */
export function timeToFullS(g: HorizonGpu): number | undefined {
  const m = g.window.metrics;
  if (m.fb_used_bytes === undefined || m.fb_total_bytes === undefined) return undefined;
  const growth = m.fb_used_growth_bytes_per_s;
  if (growth === undefined || growth <= 0) return undefined;
  return (m.fb_total_bytes - m.fb_used_bytes) / growth;
}

function full(g: HorizonGpu, t: Thresholds): boolean {
  const m = g.window.metrics;
  return (m.fb_used_bytes as number) / (m.fb_total_bytes as number) >= t.memoryPressureUsedAtLeast;
}

function leaking(g: HorizonGpu, t: Thresholds): boolean {
  const ttf = timeToFullS(g);
  return (
    ttf !== undefined &&
    ttf <= t.memoryLeakTimeToFullS &&
    (g.window.metrics.fb_used_growth_bytes_per_s as number) >= t.memoryLeakMinGrowthBytesPerS
  );
}

/**
 * Rule `memory_pressure` (docs/design.md §6): GPU memory nearly full (`fb_used_bytes / fb_total_bytes ≥
 * memoryPressureUsedAtLeast`, 0.95), or a steady leak: `fb_used_growth_bytes_per_s` (the steady trend
 * over the horizon) ≥ `memoryLeakMinGrowthBytesPerS` and the time to full at that slope ≤
 * `memoryLeakTimeToFullS` (1 h). Warning (OOM risk), to the owner.
 */
export const memoryPressureRule: WindowRule<'memory_pressure'> = gpuConditionRule({
  id: 'memory_pressure',
  kind: 'health',
  judges: (g) =>
    g.window.metrics.fb_used_bytes !== undefined &&
    g.window.metrics.fb_total_bytes !== undefined &&
    g.window.metrics.fb_total_bytes > 0,
  fires: (g, t) => full(g, t) || leaking(g, t),
  severity: () => 'warning',
  what: (gpus, t) =>
    gpus.some((g) => leaking(g, t))
      ? 'GPU memory grows steadily (leak): out-of-memory soon'
      : `GPU memory almost full (>= ${percent(t.memoryPressureUsedAtLeast)}): out-of-memory risk`,
  remedy:
    'Out-of-memory risk: look for tensors kept across steps (losses accumulated with their graph, caches, lists of outputs), call torch.cuda.empty_cache only after freeing them, and lower the batch size or enable activation checkpointing.',
  evidence: (gpus, t) => ({
    fb_used: perGpu(
      gpus,
      (g) => (g.window.metrics.fb_used_bytes as number) / (g.window.metrics.fb_total_bytes as number),
    ),
    fb_growth_mib_per_min: perGpu(
      gpus,
      (g) => g.window.metrics.fb_used_growth_bytes_per_s,
      (v) => String(round3((v * 60) / 1_048_576)),
    ),
    time_to_full_min: perGpu(
      gpus,
      (g) => timeToFullS(g),
      (v) => String(round3(v / 60)),
    ),
    fb_used_at_least: t.memoryPressureUsedAtLeast,
  }),
});
