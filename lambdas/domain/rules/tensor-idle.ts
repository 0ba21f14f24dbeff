import { diagnosisRule } from './diagnosis-rule';
import { percent, perGpu } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `tensor_idle` (efficiency tree, SM active 30–70 %): `tensor_active < tensorIdleBelow` (0.05) while SM active
 * is between `underutilizedSmActiveBelow` and `computeBoundSmActiveAtLeast`: the math runs on the FP32
 * pipes, not the tensor cores. Info, to the owner.
 */
export const tensorIdleRule: WindowRule<'tensor_idle'> = diagnosisRule({
  id: 'tensor_idle',
  leaf: 'tensor_idle',
  severity: 'info',
  what: (_gpus, t) => `tensor cores idle (tensor active < ${percent(t.tensorIdleBelow)})`,
  remedy:
    'Tensor active zero: enable mixed precision (torch.autocast / AMP, bf16 on Ampere and newer); tensor active low: pad matrix dimensions (hidden size, batch, vocabulary) to multiples of 8.',
  evidence: (gpus, t) => ({
    tensor_active: perGpu(gpus, (g) => g.window.metrics.tensor_active),
    sm_active: perGpu(gpus, (g) => g.window.metrics.sm_active),
    tensor_active_below: t.tensorIdleBelow,
  }),
});
