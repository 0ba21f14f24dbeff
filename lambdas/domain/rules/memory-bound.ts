import { diagnosisRule } from './diagnosis-rule';
import { percent, perGpu } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `memory_bound` (efficiency tree: DRAM active > 80 % is memory bound, whether SM is high — the tree — or
 * low — the dashboard rule): `dram_active ≥ memoryBoundDramActiveAtLeast` (0.8). Info, to the owner.
 */
export const memoryBoundRule: WindowRule<'memory_bound'> = diagnosisRule({
  id: 'memory_bound',
  leaf: 'memory_bound',
  severity: 'info',
  what: (_gpus, t) => `waiting on HBM bandwidth (DRAM active >= ${percent(t.memoryBoundDramActiveAtLeast)})`,
  remedy:
    'Memory bound: quantize (INT8 / FP8) to move fewer bytes, use gradient checkpointing or fused kernels (FlashAttention) to cut memory traffic, or increase arithmetic intensity (larger batch per kernel).',
  evidence: (gpus, t) => ({
    dram_active: perGpu(gpus, (g) => g.window.metrics.dram_active),
    sm_active: perGpu(gpus, (g) => g.window.metrics.sm_active),
    dram_active_at_least: t.memoryBoundDramActiveAtLeast,
  }),
});
