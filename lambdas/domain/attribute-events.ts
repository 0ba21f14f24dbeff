import type { Batch, GpuEvent } from '../contract';
import { resolveGpuRef } from './rules/gpu-ref';

/**
 * Gives kernel-log events (which know only the PCI bus id) the GPU index of the window with the
 * same bus id (and the other way round), so rules, alerts, the store and the ledger see one GPU
 * under one key.
 *
 * @param batch - a validated batch
 * @returns the batch with every event's GPU reference completed; the same object when it has no
 *   events or no windows
 */
export function attributeEventsToGpus(batch: Batch): Batch {
  if (!batch.events?.length || batch.windows.length === 0) return batch;
  const events: GpuEvent[] = batch.events.map((e) => ({
    ...e,
    ...resolveGpuRef(batch, e.gpu_index, e.pci_bus_id),
  }));
  return { ...batch, events };
}
