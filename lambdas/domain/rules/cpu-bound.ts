import { diagnosisRule } from './diagnosis-rule';
import { percent, perGpu, round3 } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `cpu_bound` (efficiency tree: SM active < 30 % with PCIe RX low = CPU preprocessing bound): SM active below
 * `underutilizedSmActiveBelow` and PCIe RX measured below `inputBoundPcieRxBytesPerS` with no burst: the
 * GPU waits on the host's CPU, not the bus. Warning, to the owner.
 */
export const cpuBoundRule: WindowRule<'cpu_bound'> = diagnosisRule({
  id: 'cpu_bound',
  leaf: 'cpu_bound',
  severity: 'warning',
  what: (_gpus, t) =>
    `waiting on the CPU (SM active < ${percent(t.underutilizedSmActiveBelow)}, little PCIe traffic)`,
  remedy:
    'CPU preprocessing bound: move augmentation to the GPU (DALI, torchvision v2 on CUDA tensors), cache decoded samples, optimize the transforms, and check the host CPUs are not saturated by other processes.',
  evidence: (gpus, t) => ({
    sm_active: perGpu(gpus, (g) => g.window.metrics.sm_active),
    pcie_rx: perGpu(
      gpus,
      (g) => g.window.metrics.pcie_rx_bytes_per_s,
      (v) => `${round3(v / 1e6)} MB/s`,
    ),
    pcie_rx_high_bytes_per_s: t.inputBoundPcieRxBytesPerS,
  }),
});
