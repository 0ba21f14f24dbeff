import { diagnosisRule } from './diagnosis-rule';
import { percent, perGpu } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `fake_load` (docs/design.md §6): `gpu_util ≥ fakeLoadGpuUtilAtLeast` (0.9) while `sm_active <
 * underutilizedSmActiveBelow` (0.3): a kernel runs all the time but keeps few SMs busy (tiny kernels,
 * a spin loop, a keep-alive), so "GPU utilization" lies. Warning, to the job's owner.
 */
export const fakeLoadRule: WindowRule<'fake_load'> = diagnosisRule({
  id: 'fake_load',
  leaf: 'fake_load',
  severity: 'warning',
  what: (_gpus, t) =>
    `busy-looking (GPU util >= ${percent(t.fakeLoadGpuUtilAtLeast)}) but few SMs working (SM active < ${percent(t.underutilizedSmActiveBelow)})`,
  remedy:
    'The GPU runs tiny or serial kernels: batch the work into larger kernels (bigger batch, fused ops, CUDA graphs), remove keep-alive or polling kernels, and check the job is not stuck in a loop.',
  evidence: (gpus, t) => ({
    gpu_util: perGpu(gpus, (g) => g.window.metrics.gpu_util),
    sm_active: perGpu(gpus, (g) => g.window.metrics.sm_active),
    gpu_util_at_least: t.fakeLoadGpuUtilAtLeast,
    sm_active_below: t.underutilizedSmActiveBelow,
  }),
});
