import type { Batch, GpuEvent } from '../../contract';
import type { Finding } from '../types';
import { describeGpu, groupByGpu, resolveGpuRef } from './gpu-ref';
import type { PointRule } from './point-rule';

/** Cause of one event: the kernel log's pattern name (`fallen_off_bus: …` detail), else the source (`nvml`). */
function causeOf(event: GpuEvent): string {
  const m = event.source === 'kmsg' ? /^([a-z_]+): /.exec(event.detail ?? '') : null;
  return m?.[1] ?? event.source;
}

/**
 * Rule `gpu_lost` (docs/design.md §6, docs/detection.md): NVML answered GPU_IS_LOST, or the kernel
 * log said a GPU is gone (fell off the bus with or without an Xid, `NV_ERR_GPU_IS_LOST`,
 * `RmInitAdapter failed`, a failed probe, a fatal NVSwitch SXid: agent/sources/kmsg-gpu-lost.ts).
 * Critical, action `replace`: the GPU is gone until the node is repaired. An event naming no GPU
 * (NV_ERR_GPU_IS_LOST without a PCI id, a fatal SXid) is about the whole instance.
 *
 * @param batch - a validated batch; reads `gpu_lost` events
 * @returns one finding per GPU, ordered by GPU; `at` = first event; evidence `count`, `first_at`,
 *   `last_at`, `causes` (kernel-log pattern names and/or `nvml`), `detail`
 */
function gpuLostFindings(batch: Batch): Finding[] {
  const lost = (batch.events ?? []).filter((e) => e.kind === 'gpu_lost');
  return groupByGpu(lost, (e) => resolveGpuRef(batch, e.gpu_index, e.pci_bus_id)).map(({ ref, items }) => {
    const sorted = [...items].sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    const first = sorted[0] as GpuEvent;
    const last = sorted[sorted.length - 1] as GpuEvent;
    const detail = sorted.find((e) => e.detail !== undefined)?.detail;
    const causes = [...new Set(sorted.map(causeOf))].join(',');
    return {
      rule: 'gpu_lost',
      severity: 'critical',
      action: 'replace',
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      ...ref,
      at: first.at,
      summary: `${describeGpu(ref)} is lost (${causes.replaceAll(',', ', ')}), ${sorted.length} event(s)`,
      remedy:
        'The GPU is gone until the node reboots: checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.',
      evidence: {
        count: sorted.length,
        first_at: first.at,
        last_at: last.at,
        causes,
        ...(detail === undefined ? {} : { detail }),
      },
    } satisfies Finding;
  });
}

/** Rule `gpu_lost` as the registry runs it: always judges; its findings are {@link gpuLostFindings}'s. */
export const gpuLostRule: PointRule<'gpu_lost'> = {
  id: 'gpu_lost',
  reads: 'batch',
  evaluate: (batch) => ({ judged: true, findings: gpuLostFindings(batch) }),
};
