import { healthRateRule } from './health-rate-rule';
import type { WindowRule } from './window-rule';

/**
 * Rule `pcie_replay_rate`: the PCIe replay counter (`nvmlDeviceGetPcieReplayCounter`, DCGM 202) grows at
 * ≥ `pcieReplaysPerMinAtLeast` per minute over the horizon: link-level retries of a degrading PCIe link.
 */
export const pcieReplayRateRule: WindowRule<'pcie_replay_rate'> = healthRateRule({
  id: 'pcie_replay_rate',
  delta: 'pcie_replay_delta',
  counter: 'pcie_replay_count',
  threshold: 'pcieReplaysPerMinAtLeast',
  what: 'PCIe transfers retried at a growing rate (link errors)',
  remedy:
    'A degrading PCIe link slows host-GPU copies and can end in Xid 79 (fallen off the bus): drain the node at the next checkpoint and have it replaced if the rate keeps up.',
});
