import { type Batch, normalizePciBusId } from '../../contract';

/** Which GPU something is about: its index, its PCI bus id, both, or neither (the whole instance). */
export interface GpuRef {
  readonly gpu_index?: number;
  /** Canonical form `dddd:bb:dd.f`, lower-case hex (see the contract's `normalizePciBusId`). */
  readonly pci_bus_id?: string;
  /** The MIG GPU instance (slice) of the GPU, for what a slice's window says (its idle mark, its diagnosis). */
  readonly gpu_instance_id?: number;
}

/**
 * Completes a GPU reference from the batch's windows: an event with only a PCI bus id gets the index
 * of the window with that bus id, and the other way round.
 *
 * @param batch - the batch the reference comes from
 * @param gpuIndex - the index the source gave, if any
 * @param pciBusId - the PCI bus id the source gave, if any (any accepted form)
 * @returns the completed reference
 */
export function resolveGpuRef(
  batch: Batch,
  gpuIndex: number | undefined,
  pciBusId: string | undefined,
): GpuRef {
  const { byPci, byIndex } = windowIndex(batch.windows);
  let pci = normalizePciBusId(pciBusId);
  let index = gpuIndex;
  if (index === undefined && pci !== undefined) index = byPci.get(pci);
  if (pci === undefined && index !== undefined) pci = byIndex.get(index);
  return {
    ...(index === undefined ? {} : { gpu_index: index }),
    ...(pci === undefined ? {} : { pci_bus_id: pci }),
  };
}

/** GPU index ↔ normalised PCI bus id of a batch's windows (first window wins), built once per windows array. */
interface WindowIndex {
  readonly byPci: ReadonlyMap<string, number>;
  readonly byIndex: ReadonlyMap<number, string>;
}

const windowIndexCache = new WeakMap<readonly Batch['windows'][number][], WindowIndex>();

/** Events are resolved one by one against the same windows: index them once, not once per event. */
function windowIndex(windows: Batch['windows']): WindowIndex {
  const cached = windowIndexCache.get(windows);
  if (cached) return cached;
  const byPci = new Map<string, number>();
  const byIndex = new Map<number, string>();
  for (const w of windows) {
    const wPci = normalizePciBusId(w.gpu.pci_bus_id);
    if (wPci === undefined) continue;
    if (!byPci.has(wPci)) byPci.set(wPci, w.gpu.index);
    if (!byIndex.has(w.gpu.index)) byIndex.set(w.gpu.index, wPci);
  }
  const built = { byPci, byIndex };
  windowIndexCache.set(windows, built);
  return built;
}

/**
 * The grouping key of a GPU reference: the index (`3`; a MIG slice `3/gi7`, GPU 3's instance 7),
 * else the PCI bus id, else `*` (the instance). Stored idle marks use it, so a slice keeps its own.
 *
 * @param ref - the reference
 * @returns the key, a string
 */
export function gpuKey(ref: GpuRef): string {
  if (ref.gpu_index !== undefined)
    return ref.gpu_instance_id === undefined
      ? String(ref.gpu_index)
      : `${ref.gpu_index}/gi${ref.gpu_instance_id}`;
  return ref.pci_bus_id ?? '*';
}

/**
 * The key of what a window measures: its GPU (`3`), or its MIG slice (`3/gi7`) where the window
 * carries `gpu_instance_id` ({@link gpuKey} of both). Maps of per-GPU results (diagnoses, horizons)
 * key by it, since a MIG GPU sends one window per slice.
 *
 * @param window - a validated window
 * @returns the key
 */
export function windowSlotKey(window: Batch['windows'][number]): string {
  return gpuKey({
    gpu_index: window.gpu.index,
    ...(window.gpu_instance_id === undefined ? {} : { gpu_instance_id: window.gpu_instance_id }),
  });
}

/**
 * Orders GPU references: by index (known first), then by PCI bus id, then the instance-wide one.
 *
 * @param a - one reference
 * @param b - the other
 * @returns negative, 0 or positive, as `Array.prototype.sort` wants
 */
export function compareGpuRefs(a: GpuRef, b: GpuRef): number {
  const ai = a.gpu_index ?? Number.POSITIVE_INFINITY;
  const bi = b.gpu_index ?? Number.POSITIVE_INFINITY;
  if (ai !== bi) return ai < bi ? -1 : 1;
  const ag = a.gpu_instance_id ?? -1;
  const bg = b.gpu_instance_id ?? -1;
  if (ag !== bg) return ag < bg ? -1 : 1;
  const ap = a.pci_bus_id ?? '~';
  const bp = b.pci_bus_id ?? '~';
  return ap < bp ? -1 : ap > bp ? 1 : 0;
}

/**
 * Names a GPU for people: `GPU 3 (0000:19:00.0)`, `GPU 3`, `GPU at 0000:19:00.0`, or `an unidentified GPU`;
 * a MIG slice as `GPU 3 MIG instance 7 (0000:19:00.0)`.
 *
 * @param ref - the reference
 * @returns the phrase
 */
export function describeGpu(ref: GpuRef): string {
  if (ref.gpu_instance_id !== undefined && ref.gpu_index !== undefined) {
    const gpu = describeGpu({ gpu_index: ref.gpu_index });
    const pci = ref.pci_bus_id === undefined ? '' : ` (${ref.pci_bus_id})`;
    return `${gpu} MIG instance ${ref.gpu_instance_id}${pci}`;
  }
  if (ref.gpu_index !== undefined && ref.pci_bus_id !== undefined)
    return `GPU ${ref.gpu_index} (${ref.pci_bus_id})`;
  if (ref.gpu_index !== undefined) return `GPU ${ref.gpu_index}`;
  if (ref.pci_bus_id !== undefined) return `GPU at ${ref.pci_bus_id}`;
  return 'an unidentified GPU';
}

/**
 * Groups items by the GPU they are about, in {@link compareGpuRefs} order; items keep their input order.
 *
 * @param items - the items
 * @param refOf - the GPU reference of an item
 * @returns one `{ ref, items }` per GPU
 */
export function groupByGpu<T>(
  items: readonly T[],
  refOf: (item: T) => GpuRef,
): { ref: GpuRef; items: T[] }[] {
  const groups = new Map<string, { ref: GpuRef; items: T[] }>();
  for (const item of items) {
    const ref = refOf(item);
    const key = gpuKey(ref);
    const group = groups.get(key);
    if (group) group.items.push(item);
    else groups.set(key, { ref, items: [item] });
  }
  return [...groups.values()].sort((a, b) => compareGpuRefs(a.ref, b.ref));
}

/**
 * Flush windows only: horizon windows are for the window rules (docs/design.md §6).
 *
 * @param batch - a validated batch
 * @returns its `kind: "flush"` windows, in batch order
 */
export function flushWindows(batch: Batch): Batch['windows'] {
  return batch.windows.filter((w) => w.kind === 'flush');
}
