import { diagnosisRule } from './diagnosis-rule';
import { percent, perGpu } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `low_occupancy` (efficiency tree: occupancy < 20 % is worth telling the developer): `sm_occupancy <
 * lowOccupancyBelow` (0.2) on a GPU that is working (the diagnosis leaf `low_occupancy`: SM active ≥ 30 %
 * with tensor cores in use, or SM active < 30 % where PCIe traffic is not measured). Info, to the owner.
 */
export const lowOccupancyRule: WindowRule<'low_occupancy'> = diagnosisRule({
  id: 'low_occupancy',
  leaf: 'low_occupancy',
  severity: 'info',
  what: (_gpus, t) => `few resident warps per SM (occupancy < ${percent(t.lowOccupancyBelow)})`,
  remedy:
    'Kernels launch too few threads to hide latency: increase the batch size, fuse small ops (torch.compile), and check register/shared-memory use per block that limits occupancy.',
  evidence: (gpus, t) => ({
    sm_occupancy: perGpu(gpus, (g) => g.window.metrics.sm_occupancy),
    sm_active: perGpu(gpus, (g) => g.window.metrics.sm_active),
    sm_occupancy_below: t.lowOccupancyBelow,
  }),
});
