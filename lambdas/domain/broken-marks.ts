import { type GpuWindow, normalizePciBusId } from '../contract';
import { gpuKey } from './rules/gpu-ref';
import type { Finding } from './types';

/** A GPU known broken from a time: the `broken_gpus` mark of the state store. */
export interface BrokenMark {
  /** `gpuKey`: GPU index, PCI bus id, or `*` for the whole instance. */
  readonly key: string;
  /** ISO 8601. */
  readonly at: string;
}

/**
 * The broken marks a batch's findings make: one per GPU key with a `replace` finding, at the
 * earliest finding time of that key.
 *
 * @param findings - the batch's findings
 * @returns the marks, in first-seen order
 */
export function brokenMarksOf(findings: readonly Finding[]): BrokenMark[] {
  const earliest = new Map<string, string>();
  for (const f of findings) {
    if (f.action !== 'replace') continue;
    const key = gpuKey(f);
    const seen = earliest.get(key);
    if (seen === undefined || Date.parse(f.at) < Date.parse(seen)) earliest.set(key, f.at);
  }
  return [...earliest].map(([key, at]) => ({ key, at }));
}

/**
 * Stored marks plus a batch's new marks, the earliest time kept per key: what the ledger of the
 * batch uses before anything is persisted (marks are written only after the store write succeeded).
 *
 * @param stored - gpuKey → since when broken, as the state store has it
 * @param marks - the batch's marks
 * @returns gpuKey → since when broken (ISO 8601)
 */
export function withBrokenMarks(
  stored: ReadonlyMap<string, string>,
  marks: readonly BrokenMark[],
): ReadonlyMap<string, string> {
  const merged = new Map(stored);
  for (const { key, at } of marks) {
    const seen = merged.get(key);
    if (seen === undefined || Date.parse(at) < Date.parse(seen)) merged.set(key, at);
  }
  return merged;
}

/**
 * Since when a window's GPU is known broken: the earliest of the marks under its index, its PCI bus
 * id and the whole instance (`*`).
 *
 * @param broken - gpuKey → since when broken, ISO 8601 (see {@link withBrokenMarks})
 * @param window - a GPU window of the batch
 * @returns the earliest mark that applies, ISO 8601, or undefined when the GPU is not marked
 */
export function brokenSinceFor(broken: ReadonlyMap<string, string>, window: GpuWindow): string | undefined {
  if (broken.size === 0) return undefined; // nearly every batch: no GPU of the instance is marked
  const candidates = [
    broken.get(String(window.gpu.index)),
    broken.get(gpuKey({ pci_bus_id: normalizePciBusId(window.gpu.pci_bus_id) })),
    broken.get('*'),
  ].filter((t): t is string => t !== undefined);
  return candidates.sort()[0];
}
