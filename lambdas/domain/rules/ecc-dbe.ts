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
}

/**
 * Rule `ecc_dbe` (docs/design.md §6): an uncorrectable (double-bit) ECC error. Fires when a flush window reports
 * `ecc_dbe_volatile > 0` (volatile = since driver load, so any DBE since the last reset/reboot) or the
 * batch has an `ecc_dbe` event. Critical, action `replace`. Stateless: it fires in every batch while the
 * volatile counter stays above 0; the alert cooldown and "one replacement per instance" absorb the repeats.
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
    return {
      rule: 'ecc_dbe',
      severity: 'critical',
      action: 'replace',
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      ...ref,
      at,
      summary: `Double-bit (uncorrectable) ECC errors on ${describeGpu(ref)}: ${what}`,
      remedy:
        'Hardware memory fault: checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.',
      evidence: {
        ...(volatile === undefined ? {} : { ecc_dbe_volatile: volatile }),
        ...(aggregates.length > 0 ? { ecc_dbe_aggregate: Math.max(...aggregates) } : {}),
        dbe_events: events,
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
