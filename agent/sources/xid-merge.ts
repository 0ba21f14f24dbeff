import { normalizePciBusId } from '../../lambdas/contract/pci-bus-id';
import type { GpuEvent } from '../../lambdas/contract/schema';
import { epochMicros } from '../../lambdas/contract/timestamps';
import { systemClock } from '../clock';

/**
 * Merges the two views of the same XID and of the same lost GPU: NVML's event set (`source: 'nvml'`, with `gpu_index`
 * and `pci_bus_id`, read by `nvmlEventSetWait`) and the kernel log's NVRM Xid line
 * (`source: 'kmsg'`, `pci_bus_id` only, plus the pid and process name the driver blamed). The
 * driver raises both for one fault, so without a merge every XID would count twice. A lost GPU is
 * said by NVML (`NVML_ERROR_GPU_IS_LOST`) and, often many times, by the kernel log
 * (agent/sources/kmsg-gpu-lost.ts): one `gpu_lost` event per GPU goes out, whichever came first.
 */

/** Options of {@link XidMerger}. */
export interface XidMergerOptions {
  /**
   * Largest gap between the two sources' times (`at`) of one fault, ms, ≥ 0. Covers the kernel
   * log's boot-time rounding (`btime` is whole seconds) and NVML's event delivery delay.
   * @default 2000
   */
  readonly toleranceMs?: number;
  /** The clock, to forget entries that arrived more than `toleranceMs` ago. @default systemClock */
  readonly clock?: () => Date;
  /** Most unmatched events remembered (a burst of 629 Xid 13s fits); past it the oldest are forgotten. @default 4096 */
  readonly maxEntries?: number;
  /**
   * How long a GPU stays "already reported lost", ms, > 0: a `gpu_lost` event of the same GPU
   * (any source) within this span of the last one seen is dropped, and each dropped one extends
   * the span. The driver repeats `RmInitAdapter failed` every few seconds and
   * `NV_ERR_GPU_IS_LOST` on every call while the GPU stays gone; a GPU that comes back (a reset)
   * and is lost again after a quiet span is a new loss.
   * @default 3_600_000 (one hour)
   */
  readonly lostHoldMs?: number;
}

/** Default of {@link XidMergerOptions.lostHoldMs}: one hour. */
export const GPU_LOST_HOLD_MS = 3_600_000;

/** An emitted event still waiting for its twin from the other source. */
interface Entry {
  readonly source: GpuEvent['source'];
  readonly xid: number;
  readonly pci?: string;
  readonly index?: number;
  readonly atUs: number;
  readonly arrivedMs: number;
}

/**
 * Decides, per XID event, whether to emit it or drop it as the other source's twin.
 *
 * An event is a duplicate when an event of the **other** source (nvml ↔ kmsg) with the same
 * GPU (normalised PCI bus id when both carry one, else `gpu_index` when both carry one) and the
 * same Xid code, not yet paired, has an `at` within `toleranceMs`. The first arrival is kept
 * (and emitted at once; it is not enriched afterwards) and the pair is consumed, so each event
 * pairs with at most one: 9 NVML Xid 94s and 9 kmsg Xid 94s give 9 events. Events of the same
 * source are never merged (629 Xid 13 lines stay 629). Non-XID events and events of other
 * sources always pass. Memory is bounded: entries are forgotten `toleranceMs` after they
 * arrived (by the injected clock) and beyond `maxEntries`.
 *
 * @example
 * const merger = new XidMerger();
 * if (merger.add(event)) events.push(event);
 */
export class XidMerger {
  private readonly toleranceMs: number;
  private readonly clock: () => Date;
  private readonly maxEntries: number;
  private entries: Entry[] = [];
  private readonly lostHoldMs: number;
  /** GPU key (normalised PCI bus id, `#index`, or `*` for the instance) → when its last `gpu_lost` was seen, ms. */
  private readonly lost = new Map<string, number>();

  /**
   * @param opts - see {@link XidMergerOptions}
   * @throws {RangeError} when `toleranceMs` is negative or not finite, or `maxEntries` < 1
   */
  constructor(opts: XidMergerOptions = {}) {
    this.toleranceMs = opts.toleranceMs ?? 2000;
    this.clock = opts.clock ?? systemClock;
    this.maxEntries = opts.maxEntries ?? 4096;
    this.lostHoldMs = opts.lostHoldMs ?? GPU_LOST_HOLD_MS;
    if (!Number.isFinite(this.lostHoldMs) || this.lostHoldMs <= 0)
      throw new RangeError(`Expected \`lostHoldMs\` to be a number > 0, got \`${this.lostHoldMs}\``);
    if (!Number.isFinite(this.toleranceMs) || this.toleranceMs < 0)
      throw new RangeError(`Expected \`toleranceMs\` to be a number >= 0, got \`${this.toleranceMs}\``);
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1)
      throw new RangeError(`Expected \`maxEntries\` to be an integer >= 1, got \`${this.maxEntries}\``);
  }

  /** Unpaired events remembered now (for tests and self-metrics). */
  get size(): number {
    return this.entries.length;
  }

  /**
   * Offers one event.
   *
   * @param event - a contract event; `kind: 'xid'` from `nvml` or `kmsg` and `kind: 'gpu_lost'` take part
   * @returns `true` to emit it, `false` when it is the twin of an event already emitted
   */
  add(event: GpuEvent): boolean {
    if (event.kind === 'gpu_lost') return this.addLost(event);
    if (
      event.kind !== 'xid' ||
      event.xid === undefined ||
      (event.source !== 'nvml' && event.source !== 'kmsg')
    )
      return true;
    const nowMs = this.clock().getTime();
    this.prune(nowMs);
    let atUs: number;
    try {
      atUs = epochMicros(event.at);
    } catch {
      return true;
    }
    const pci = normalizePciBusId(event.pci_bus_id);
    const index = event.gpu_index;
    const toleranceUs = this.toleranceMs * 1000;
    let best = -1;
    let bestGap = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i];
      if (e === undefined || e.source === event.source || e.xid !== event.xid) continue;
      const sameGpu =
        pci !== undefined && e.pci !== undefined
          ? pci === e.pci
          : index !== undefined && e.index !== undefined && index === e.index;
      if (!sameGpu) continue;
      const gap = Math.abs(e.atUs - atUs);
      if (gap <= toleranceUs && gap < bestGap) {
        best = i;
        bestGap = gap;
      }
    }
    if (best >= 0) {
      this.entries.splice(best, 1);
      return false;
    }
    this.entries.push({
      source: event.source,
      xid: event.xid,
      ...(pci !== undefined ? { pci } : {}),
      ...(index !== undefined ? { index } : {}),
      atUs,
      arrivedMs: nowMs,
    });
    if (this.entries.length > this.maxEntries) this.entries.splice(0, this.entries.length - this.maxEntries);
    return true;
  }

  /**
   * One `gpu_lost` per GPU, whichever source says it first: NVML's GPU_IS_LOST and the kernel
   * log's lines about the same GPU (same PCI bus id, else same index) within `lostHoldMs` are one
   * loss. An event naming no GPU is dropped while any GPU of the instance is reported lost, and
   * the other way round a GPU's own event still passes after an instance-wide one (it says which).
   */
  private addLost(event: GpuEvent): boolean {
    const nowMs = this.clock().getTime();
    for (const [key, seenMs] of this.lost) if (nowMs - seenMs > this.lostHoldMs) this.lost.delete(key);
    const pci = normalizePciBusId(event.pci_bus_id);
    const keys: string[] = [];
    if (pci !== undefined) keys.push(pci);
    if (event.gpu_index !== undefined) keys.push(`#${event.gpu_index}`);
    const seen = keys.length === 0 ? this.lost.size > 0 : keys.some((k) => this.lost.has(k));
    for (const k of keys.length === 0 ? ['*'] : keys) this.lost.set(k, nowMs);
    return !seen;
  }

  private prune(nowMs: number): void {
    const cutoff = nowMs - this.toleranceMs;
    let drop = 0;
    while (drop < this.entries.length && (this.entries[drop]?.arrivedMs ?? 0) < cutoff) drop++;
    if (drop > 0) this.entries.splice(0, drop);
  }
}
