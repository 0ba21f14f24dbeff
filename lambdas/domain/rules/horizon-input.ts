import type { Batch, GpuWindow } from '../../contract';
import { MS_PER_SECOND, SECONDS_PER_HOUR } from '../constants';
import { isGpuHeld } from '../gpu-holder';
import { computeLedger } from '../ledger';
import type { InstancePrice } from '../pricing';
import type { Diagnosis } from '../types';
import { diagnoseHorizon } from './diagnose';
import { type GpuRef, gpuKey, resolveGpuRef, windowSlotKey } from './gpu-ref';
import type { Thresholds } from './thresholds';

/** One GPU's horizon as the window rules read it: the window, who it is, how much it covers, its leaf. */
export interface HorizonGpu {
  /** The `kind: 'horizon'` window (trailing 15 min by default, docs/design.md §1). */
  readonly window: GpuWindow;
  /** Index and PCI bus id of the GPU. */
  readonly ref: GpuRef;
  /** Span the window covers, s (end − start), ≥ `thresholds.minHorizonSpanS`. */
  readonly spanS: number;
  /** The efficiency diagnosis of the horizon (see `diagnoseHorizon`). */
  readonly diagnosis: Diagnosis;
  /** What this GPU wastes at this horizon's rate, USD/hour (ledger of the horizon, per hour; 0 when unpriced). */
  readonly wastedUsdPerHour: number;
  /** What this GPU costs, USD/hour: its share of the instance price (`price / GPU count`; 0 when unpriced). */
  readonly costUsdPerHour: number;
  /**
   * Nothing holds the GPU, as far as the source can say (see `isGpuFree`): `true`, `false`, or
   * `undefined` when the source cannot tell.
   */
  readonly free: boolean | undefined;
}

/**
 * Whether nothing holds a GPU, from what the source can say (docs/detection.md §5): no compute
 * process (`compute_processes` = 0); or, processes unknown, framebuffer used below
 * `heldFbUsedBytesAtLeast`; or, processes and framebuffer unknown, no pod on a host whose exporter
 * maps pods (another GPU of the batch names one: dcgm-exporter labels every allocated GPU, so an
 * unlabelled one is allocated to no pod).
 *
 * @param window - the GPU's horizon
 * @param podHeld - a pod names this GPU on one of its windows
 * @param podsMapped - a pod names some GPU of the batch
 * @param thresholds - reads `heldFbUsedBytesAtLeast`
 * @returns `true` free, `false` held, `undefined` unknown
 */
export function isGpuFree(
  window: GpuWindow,
  podHeld: boolean,
  podsMapped: boolean,
  thresholds: Thresholds,
): boolean | undefined {
  if (podHeld) return false;
  const held = isGpuHeld(window, thresholds.heldFbUsedBytesAtLeast);
  if (held !== undefined) return !held;
  return podsMapped ? true : undefined;
}

/**
 * Everything a window rule reads (docs/design.md §6): the batch (host, agent, EFA deltas), its horizons that cover
 * enough to judge, the instance price, and since when each GPU has been idle (from the StateStore).
 */
export interface HorizonInput {
  readonly batch: Batch;
  /**
   * One per GPU that sent a horizon covering at least `thresholds.minHorizonSpanS` (the latest, when a
   * batch carries two), ordered by GPU index; on a MIG GPU one per slice (`gpu_instance_id`, its `ref`
   * names it), by instance id. A shorter horizon judges nothing and is not here.
   */
  readonly gpus: readonly HorizonGpu[];
  /** GPUs that sent a horizon too short to judge (their rules neither fire nor resolve). */
  readonly shortGpus: number;
  /** The instance price (see `priceFor`). */
  readonly price: InstancePrice;
  /** gpuKey → since when the GPU has been idle without a process, ISO 8601 (see `nextIdleSince`). */
  readonly idleSince: ReadonlyMap<string, string>;
}

/**
 * The horizons of a batch that cover enough to judge, each with its diagnosis and waste rate.
 *
 * @param batch - a validated batch
 * @param thresholds - reads `minHorizonSpanS` and the diagnosis thresholds
 * @param price - the instance price, for `wastedUsdPerHour`
 * @returns `gpus` (judged, by GPU index) and `shortGpus` (horizons too short to judge)
 */
export function judgedHorizons(
  batch: Batch,
  thresholds: Thresholds,
  price: InstancePrice,
): { gpus: HorizonGpu[]; shortGpus: number } {
  // By GPU, or by MIG slice where the windows are per slice (`windowSlotKey`).
  const latest = new Map<string, GpuWindow>();
  // A pod named on any of the GPU's (slice's) windows holds it (the agent may label the flush window only).
  const podHeld = new Set<string>();
  for (const w of batch.windows) {
    const key = windowSlotKey(w);
    if (w.k8s !== undefined) podHeld.add(key);
    if (w.kind !== 'horizon') continue;
    const seen = latest.get(key);
    if (seen === undefined || Date.parse(w.end) > Date.parse(seen.end)) latest.set(key, w);
  }
  const gpus: HorizonGpu[] = [];
  let shortGpus = 0;
  const ordered = [...latest.entries()].sort(
    ([, a], [, b]) => a.gpu.index - b.gpu.index || (a.gpu_instance_id ?? -1) - (b.gpu_instance_id ?? -1),
  );
  for (const [index, window] of ordered) {
    const spanS = (Date.parse(window.end) - Date.parse(window.start)) / MS_PER_SECOND;
    if (spanS < thresholds.minHorizonSpanS) {
      shortGpus++;
      continue;
    }
    const ledger = computeLedger(window, price);
    gpus.push({
      window,
      ref: {
        ...resolveGpuRef(batch, window.gpu.index, window.gpu.pci_bus_id),
        ...(window.gpu_instance_id === undefined ? {} : { gpu_instance_id: window.gpu_instance_id }),
      },
      spanS,
      diagnosis: diagnoseHorizon(
        window.metrics,
        batch.agent.profiling_source,
        thresholds,
        podHeld.has(index),
      ),
      wastedUsdPerHour: (ledger.wasted_usd / ledger.window_s) * SECONDS_PER_HOUR,
      costUsdPerHour: (ledger.cost_usd / ledger.window_s) * SECONDS_PER_HOUR,
      free: isGpuFree(window, podHeld.has(index), podHeld.size > 0, thresholds),
    });
  }
  return { gpus, shortGpus };
}

/** What {@link nextIdleSince} changes in the StateStore. */
export interface IdleSinceUpdate {
  /** gpuKey → idle since, ISO 8601, after this batch. */
  readonly since: ReadonlyMap<string, string>;
  /** Marks to write (a GPU that became idle): gpuKey → since. */
  readonly mark: ReadonlyMap<string, string>;
  /** Marks to clear (a GPU judged busy again). */
  readonly clear: readonly string[];
}

/**
 * Keeps "idle since" across batches (the horizon is 15 min, `idle_billed` needs 30): a judged GPU whose
 * whole horizon was idle with nothing holding it (diagnosis `idle`, `max_sm_active` — or the mean when the
 * spread is absent, or `gpu_util` where SM activity is not measured — below `idleSmActiveBelow`,
 * and free as far as the source can say: `HorizonGpu.free`, from `compute_processes` = 0, else the
 * framebuffer, else the host's pod mapping) is idle since the
 * horizon start, or since the earlier mark; a judged GPU that is not idle is cleared. A GPU with no
 * judged horizon keeps its mark unchanged (absent is not busy).
 *
 * @param previous - the marks in the StateStore, gpuKey → ISO 8601
 * @param gpus - the judged horizons
 * @param thresholds - reads `idleSmActiveBelow`
 * @returns the marks after this batch and the writes to make
 */
export function nextIdleSince(
  previous: ReadonlyMap<string, string>,
  gpus: readonly HorizonGpu[],
  thresholds: Thresholds,
): IdleSinceUpdate {
  const since = new Map(previous);
  const mark = new Map<string, string>();
  const clear: string[] = [];
  for (const g of gpus) {
    const key = gpuKey(g.ref);
    const m = g.window.metrics;
    // Where SM activity is not measured (an A100 without DCGM), GPU util is its upper bound.
    const peak = m.max_sm_active ?? m.sm_active ?? m.gpu_util;
    const idle =
      g.diagnosis === 'idle' && g.free === true && peak !== undefined && peak < thresholds.idleSmActiveBelow;
    if (idle) {
      if (!since.has(key)) {
        since.set(key, g.window.start);
        mark.set(key, g.window.start);
      }
    } else if (since.has(key)) {
      since.delete(key);
      clear.push(key);
    }
  }
  return { since, mark, clear };
}
