import {
  type Batch,
  type GpuWindow,
  MAX_EFA_PORTS_PER_BATCH,
  MAX_EVENTS_PER_BATCH,
  MAX_WINDOWS_PER_BATCH,
} from '../../lambdas/contract';

/**
 * Most spooled batches merged into one request. Each spooled batch is one 10 s flush, so 64 is
 * 10 min 40 s of windows: a 60 s send interval merges 6, a replay after an outage 64 at a time (the
 * contract's 512 windows and the 1 MiB byte bound usually stop it earlier: 8 GPUs ≈ 50 flushes).
 */
export const MAX_MERGED_BATCHES = 64;

/**
 * How many of the leading `batches` fit one request: same host, and the merged batch within the
 * contract's per-batch counts (≤ 512 windows counting one horizon window per GPU, ≤ 384 EFA ports,
 * ≤ 256 events). Bytes are the caller's bound (the spool reads at most 1 MiB of records).
 *
 * @param batches - spooled batches, oldest first
 * @returns 0 for an empty list, else 1..`batches.length` (the first always fits: it is a valid batch)
 */
export function mergeableCount(batches: readonly Batch[]): number {
  const first = batches[0];
  if (!first) return 0;
  const horizonGpus = new Set<number>();
  let flush = 0;
  let efa = 0;
  let events = 0;
  let n = 0;
  for (const b of batches.slice(0, MAX_MERGED_BATCHES)) {
    if (b.host.instance_id !== first.host.instance_id) break;
    const gpus = new Set(horizonGpus);
    let f = flush;
    for (const w of b.windows) {
      if (w.kind === 'horizon') gpus.add(w.gpu.index);
      else f += 1;
    }
    const e = efa + (b.efa?.length ?? 0);
    const ev = events + (b.events?.length ?? 0);
    if (
      n > 0 &&
      (f + gpus.size > MAX_WINDOWS_PER_BATCH || e > MAX_EFA_PORTS_PER_BATCH || ev > MAX_EVENTS_PER_BATCH)
    )
      break;
    for (const g of gpus) horizonGpus.add(g);
    flush = f;
    efa = e;
    events = ev;
    n += 1;
  }
  return n;
}

/**
 * Merges consecutive batches of one agent into one request batch: every flush window, EFA window and
 * event in order, and only the newest horizon window of each GPU (horizon windows feed the rules,
 * which judge the newest, and are never stored, so an older one carries nothing the newest lacks).
 * The envelope (`batch_id`, `seq`, `sent_at`, `host`, `agent`) is the newest batch's, so the store's
 * record version (`seq`) is the highest merged.
 *
 * @param batches - 1..n batches, oldest first, as {@link mergeableCount} allows
 * @returns one contract batch
 * @throws {RangeError} when `batches` is empty
 */
export function mergeBatches(batches: readonly Batch[]): Batch {
  const newest = batches.at(-1);
  if (!newest) throw new RangeError('Expected at least one batch to merge, got none');
  if (batches.length === 1) return newest;
  const horizons = new Map<number, GpuWindow>();
  const windows: GpuWindow[] = [];
  for (const b of batches)
    for (const w of b.windows) {
      if (w.kind === 'flush') windows.push(w);
      else horizons.set(w.gpu.index, w);
    }
  windows.push(...horizons.values());
  const efa = batches.flatMap((b) => b.efa ?? []);
  const events = batches.flatMap((b) => b.events ?? []);
  const { efa: _e, events: _v, ...envelope } = newest;
  return {
    ...envelope,
    windows,
    ...(efa.length > 0 ? { efa } : {}),
    ...(events.length > 0 ? { events } : {}),
  };
}
