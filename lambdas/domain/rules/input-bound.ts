import { diagnosisRule } from './diagnosis-rule';
import { percent, perGpu, round3 } from './window-finding';
import type { WindowRule } from './window-rule';

const gbPerS = (v: number): string => `${round3(v / 1e9)} GB/s`;

/**
 * Rule `input_bound` (efficiency tree: SM active < 30 % with PCIe RX high = data-loading bound): SM active below
 * `underutilizedSmActiveBelow` while host→GPU traffic is high (`pcie_rx_bytes_per_s ≥
 * inputBoundPcieRxBytesPerS` or a burst `max_pcie_rx_bytes_per_s ≥ inputBoundPcieRxBurstBytesPerS`).
 * Warning, to the owner.
 */
export const inputBoundRule: WindowRule<'input_bound'> = diagnosisRule({
  id: 'input_bound',
  leaf: 'input_bound',
  severity: 'warning',
  what: (_gpus, t) =>
    `waiting for input data (SM active < ${percent(t.underutilizedSmActiveBelow)} while PCIe RX streams batches)`,
  remedy:
    'Data-loading bound: more DataLoader workers (num_workers), pin_memory=True with non_blocking copies, prefetch (prefetch_factor) or NVIDIA DALI, and keep the dataset on local NVMe instead of a network mount.',
  evidence: (gpus, t) => ({
    sm_active: perGpu(gpus, (g) => g.window.metrics.sm_active),
    pcie_rx: perGpu(gpus, (g) => g.window.metrics.pcie_rx_bytes_per_s, gbPerS),
    max_pcie_rx: perGpu(gpus, (g) => g.window.metrics.max_pcie_rx_bytes_per_s, gbPerS),
    pcie_rx_high_bytes_per_s: t.inputBoundPcieRxBytesPerS,
  }),
});
