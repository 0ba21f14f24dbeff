import type { Batch } from '../../contract';
import type { Finding } from '../types';
import { describeGpu, flushWindows, type GpuRef, groupByGpu, resolveGpuRef } from './gpu-ref';
import type { PointRule } from './point-rule';

interface Sighting {
  readonly ref: GpuRef;
  readonly at: string;
  readonly volatile?: number;
  readonly aggregate?: number;
  readonly event: boolean;
  /** The window's `remapped_rows_failure` (a row remap failed: the DBE cannot be absorbed). */
  readonly remapFailed?: boolean;
}

/**
 * Rule `ecc_dbe` (docs/design.md §6): an uncorrectable (double-bit) ECC error. Fires when a flush window reports
 * `ecc_dbe_volatile > 0` (volatile = since driver load, so any DBE since the last reset/reboot) or the
 * batch has an `ecc_dbe` event. Critical. Action, as NVIDIA's Xid catalog resolves Xid 48 (its
 * `WORKFLOW_XID_48`: a GPU reset or node reboot clears it; on A100/H100 the row remap the DBE recorded
 * applies at the reset): `reset` — the remediation ladder reboots the instance, and replaces it when a
 * DBE comes back within its window after the reboot (the volatile counter starts at 0 again after
 * it) — or `replace` at once when a window of the GPU also reports `remapped_rows_failure` (the remap
 * that would absorb the error failed: an RMA candidate). Stateless: it fires in every batch while the
 * volatile counter stays above 0; the alert cooldown and the ladder's settle time (a fault stamped
 * just after the reboot decision is the reboot's to clear) absorb the repeats.
 *
 * @param batch - a validated batch; reads flush windows and `ecc_dbe` events
 * @returns one finding per GPU, ordered by GPU; `at` = the earliest event time or window end;
 *   evidence `ecc_dbe_volatile` (max seen), `ecc_dbe_aggregate` when known, `dbe_events`
 */
function eccDbeFindings(batch: Batch): Finding[] {
  const sightings: Sighting[] = [];
  for (const w of flushWindows(batch)) {
    const v = w.metrics.ecc_dbe_volatile;
    if (v === undefined || v <= 0) continue;
    sightings.push({
      ref: resolveGpuRef(batch, w.gpu.index, w.gpu.pci_bus_id),
      at: w.end,
      volatile: v,
      ...(w.metrics.ecc_dbe_aggregate === undefined ? {} : { aggregate: w.metrics.ecc_dbe_aggregate }),
      event: false,
      ...(w.metrics.remapped_rows_failure === undefined
        ? {}
        : { remapFailed: w.metrics.remapped_rows_failure }),
    });
  }
  for (const e of batch.events ?? []) {
    if (e.kind !== 'ecc_dbe') continue;
    sightings.push({ ref: resolveGpuRef(batch, e.gpu_index, e.pci_bus_id), at: e.at, event: true });
  }
  return groupByGpu(sightings, (s) => s.ref).map(({ ref, items }) => {
    const at = items.map((s) => s.at).sort((a, b) => Date.parse(a) - Date.parse(b))[0] as string;
    const volatiles = items.flatMap((s) => (s.volatile === undefined ? [] : [s.volatile]));
    const aggregates = items.flatMap((s) => (s.aggregate === undefined ? [] : [s.aggregate]));
    const events = items.filter((s) => s.event).length;
    const volatile = volatiles.length > 0 ? Math.max(...volatiles) : undefined;
    const what = volatile === undefined ? `${events} DBE event(s)` : `ecc_dbe_volatile = ${volatile}`;
    const remapFailed = items.some((s) => s.remapFailed === true);
    return {
      rule: 'ecc_dbe',
      severity: 'critical',
      action: remapFailed ? 'replace' : 'reset',
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      ...ref,
      at,
      summary: `Double-bit (uncorrectable) ECC errors on ${describeGpu(ref)}: ${what}${remapFailed ? ', and the row remap failed' : ''}`,
      remedy: remapFailed
        ? 'Hardware memory fault the row remap could not absorb (RMA candidate): checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.'
        : 'Uncorrectable memory error: the job on this GPU is lost; the instance is rebooted (a reboot resets every GPU and applies the pending row remap on A100/H100), and replaced if the error comes back after it.',
      evidence: {
        ...(volatile === undefined ? {} : { ecc_dbe_volatile: volatile }),
        ...(aggregates.length > 0 ? { ecc_dbe_aggregate: Math.max(...aggregates) } : {}),
        dbe_events: events,
        remapped_rows_failure: remapFailed,
      },
    } satisfies Finding;
  });
}

/** Rule `ecc_dbe` as the registry runs it: always judges; its findings are {@link eccDbeFindings}'s. */
export const eccDbeRule: PointRule<'ecc_dbe'> = {
  id: 'ecc_dbe',
  reads: 'batch',
  evaluate: (batch) => ({ judged: true, findings: eccDbeFindings(batch) }),
};
