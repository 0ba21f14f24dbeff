import type { Batch } from '../../contract';
import type { Finding } from '../types';
import { describeGpu, flushWindows, type GpuRef, groupByGpu, resolveGpuRef } from './gpu-ref';
import type { PointRule } from './point-rule';

interface Sighting {
  readonly ref: GpuRef;
  readonly at: string;
  readonly failure: boolean;
  readonly retiredPending: boolean;
  readonly remapPending: boolean;
  readonly event: boolean;
}

/**
 * Rule `row_remap_failure` (docs/design.md §6, docs/nvml.md §9): `remapped_rows_failure` true in a flush
 * window, or a `remap_failure` event → critical `replace` (an RMA candidate; XID 64's state); else
 * `retired_pages_pending` true (pre-Ampere: retired pages wait for a reboot) → warning `reset`.
 * `remapped_rows_pending` alone is not a finding (XID 63 covers it as info) but is shown in the evidence.
 *
 * @param batch - a validated batch; reads flush windows and `remap_failure` events
 * @returns at most one finding per GPU (the worse of the two), ordered by GPU; `at` = first sighting
 */
function rowRemapFailureFindings(batch: Batch): Finding[] {
  const sightings: Sighting[] = [];
  for (const w of flushWindows(batch)) {
    const m = w.metrics;
    if (m.remapped_rows_failure !== true && m.retired_pages_pending !== true) continue;
    sightings.push({
      ref: resolveGpuRef(batch, w.gpu.index, w.gpu.pci_bus_id),
      at: w.end,
      failure: m.remapped_rows_failure === true,
      retiredPending: m.retired_pages_pending === true,
      remapPending: m.remapped_rows_pending === true,
      event: false,
    });
  }
  for (const e of batch.events ?? []) {
    if (e.kind !== 'remap_failure') continue;
    sightings.push({
      ref: resolveGpuRef(batch, e.gpu_index, e.pci_bus_id),
      at: e.at,
      failure: true,
      retiredPending: false,
      remapPending: false,
      event: true,
    });
  }
  return groupByGpu(sightings, (s) => s.ref).map(({ ref, items }) => {
    const failure = items.some((s) => s.failure);
    const relevant = items.filter((s) => (failure ? s.failure : s.retiredPending));
    const at = relevant.map((s) => s.at).sort((a, b) => Date.parse(a) - Date.parse(b))[0] as string;
    const evidence = {
      remapped_rows_failure: items.some((s) => s.failure && !s.event),
      remap_failure_events: items.filter((s) => s.event).length,
      retired_pages_pending: items.some((s) => s.retiredPending),
      remapped_rows_pending: items.some((s) => s.remapPending),
    };
    const base = {
      rule: 'row_remap_failure',
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      ...ref,
      at,
      evidence,
    } as const;
    return failure
      ? ({
          ...base,
          severity: 'critical',
          action: 'replace',
          summary: `Row remapping failed on ${describeGpu(ref)}: no spare rows for a bad memory row (RMA candidate)`,
          remedy:
            'Memory repair failed: checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.',
        } satisfies Finding)
      : ({
          ...base,
          severity: 'warning',
          action: 'reset',
          summary: `Retired pages pending on ${describeGpu(ref)}: retirement takes effect at the next reset`,
          remedy: 'Drain the GPU and reset it (nvidia-smi -r) or reboot the node when idle.',
        } satisfies Finding);
  });
}

/** Rule `row_remap_failure` as the registry runs it: always judges; its findings are {@link rowRemapFailureFindings}'s. */
export const rowRemapFailureRule: PointRule<'row_remap_failure'> = {
  id: 'row_remap_failure',
  reads: 'batch',
  evaluate: (batch) => ({ judged: true, findings: rowRemapFailureFindings(batch) }),
};
