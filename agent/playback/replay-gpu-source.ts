import {
  type GpuEvent,
  type GpuIdentity,
  type GpuMetrics,
  type K8sWorkload,
  PROFILING_METRIC_NAMES,
} from '../../lambdas/contract';
import type { DcgmGpuReading } from '../sources/dcgm-exporter';
import { migSliceReadings } from '../sources/dcgm-mig';
import { workloadsFromDcgm } from '../sources/dcgm-workload';
import type { AgentSource, SampleSink, SourceSupport } from '../sources/source';
import type { GpuSample } from '../window/gpu-sample';
import type { MigSliceReading } from '../window/mig-slices';
import { DueEvents } from './due-events';

/**
 * Replayed readings as the GPU inventory {@link AgentSource} of a playback: a recorded host's dcgm-exporter scrapes played as
 * the 1 s readings its agent would have taken, and its kernel-log XIDs delivered when they happened,
 * so a replay goes through the agent loop (flush windows, horizons, batches) like live readings.
 */

/** Instant readings a scrape gives that a `GpuSample` carries under the same name and unit. */
const INSTANT_FIELDS = [
  'gpu_util',
  'mem_copy_util',
  ...PROFILING_METRIC_NAMES,
  'pcie_tx_bytes_per_s',
  'pcie_rx_bytes_per_s',
  'fb_used_bytes',
  'fb_total_bytes',
  'gpu_temp_c',
  'mem_temp_c',
  'power_w',
  'power_limit_w',
  'sm_clock_mhz',
  'mem_clock_mhz',
  'clocks_event_reasons',
  'ecc_sbe_volatile',
  'ecc_dbe_volatile',
  'ecc_sbe_aggregate',
  'ecc_dbe_aggregate',
  'retired_pages_pending',
  'remapped_rows_pending',
  'remapped_rows_failure',
  'pcie_replay_count',
  'nvlink_crc_errors',
  'compute_processes',
] as const satisfies readonly (keyof GpuMetrics & keyof GpuSample)[];

/** Options of {@link ReplayGpuSource}. */
export interface ReplayGpuSourceOptions {
  /** The scrapes, in play order: scrape `k % scrapes.length` holds during the k-th flush window. */
  readonly scrapes: readonly (readonly DcgmGpuReading[])[];
  /** Start of the first window, ms since the epoch. */
  readonly startMs: number;
  /** Length of one window, ms > 0. */
  readonly windowMs: number;
  /** XIDs with their (re-based) times, delivered in the first reading at or after each. @default none */
  readonly events?: readonly GpuEvent[];
}

/**
 * Plays scrapes as readings: every reading inside the k-th window gives scrape
 * `k % scrapes.length`'s instant values (the scrape is the GPUs' steady state over that window).
 * NVLink has no instant rate in a `GpuSample`, only byte counters: the scrape's NVLink rate is
 * integrated into a counter from the first reading, so the window's rate is the scrape's. Energy is
 * absent (a scrape's one energy reading gives no delta), so power is the mean of `power_w`; so are
 * the throttle-time counters (`violation_us`), so throttle ratios come from the clocks-event reasons
 * — except for a reading that has the ratios themselves (a flush window a real agent sent,
 * `parseCapturedBatches`): those are integrated into the violation counters the same way, so the
 * window's ratio is the reading's (a window throttled 19 % of the time is not replayed as 100 %
 * because its OR of the clocks-event reasons has the power-cap bit).
 */
export class ReplayGpuSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'replay';
  readonly #options: ReplayGpuSourceOptions;
  readonly #identities: readonly GpuIdentity[];
  readonly #nvlink = new Map<number, { tx: number; rx: number; atMs: number }>();
  /** Per GPU index: the throttle-time counters integrated from readings that carry throttle ratios, µs. */
  readonly #violation = new Map<number, { power: number; thermal: number; atMs: number }>();
  readonly #events: DueEvents;
  /** The scrape played at the last sample, and the pods its labels name by GPU index (computed once per scrape). */
  #scrape: readonly DcgmGpuReading[] | undefined;
  readonly #pods = new WeakMap<readonly DcgmGpuReading[], ReadonlyMap<number, K8sWorkload>>();

  /** @param options - see {@link ReplayGpuSourceOptions} */
  constructor(options: ReplayGpuSourceOptions) {
    this.#options = options;
    const byIndex = new Map<number, GpuIdentity>();
    for (const scrape of options.scrapes)
      for (const r of scrape) if (!byIndex.has(r.gpu.index)) byIndex.set(r.gpu.index, r.gpu);
    this.#identities = [...byIndex.values()].sort((a, b) => a.index - b.index);
    this.#events = new DueEvents(options.events);
  }

  /** The GPUs of every scrape (first scrape that names an index wins). */
  identity(): readonly GpuIdentity[] {
    return this.#identities;
  }

  /** Nothing to open: the captures are read and parsed already. @returns supported, with the GPU count */
  open(): SourceSupport {
    return { supported: true, detail: `${this.#identities.length} replayed GPUs` };
  }

  /** Writes the readings of the scrape that holds at `now`, and the XIDs due by `now`, into `into`. Never throws. */
  sample(into: SampleSink, now: Date): void {
    const nowMs = now.getTime();
    const { scrapes, startMs, windowMs } = this.#options;
    const k = Math.max(0, Math.ceil((nowMs - startMs) / windowMs) - 1);
    const scrape = scrapes.length > 0 ? (scrapes[k % scrapes.length] ?? []) : [];
    this.#scrape = scrape;
    for (const reading of scrape) into.gpu(this.#toSample(reading, nowMs));
    for (const event of this.#events.take(nowMs)) into.event(event);
  }

  /**
   * The pod holding a GPU in the scrape played now, from its `namespace` / `pod` / `container` labels
   * (as on a host, `workloadsFromDcgm`), so a replayed Kubernetes node keeps its pods: the window's
   * `k8s`, held-idle instead of idle, `report --by pod`. Labels outside the contract are left out.
   *
   * @param gpu - the GPU, by index
   * @returns the pod, or `undefined` when no pod holds it or nothing was played yet
   */
  workload(gpu: GpuIdentity): K8sWorkload | undefined {
    const scrape = this.#scrape;
    if (scrape === undefined) return undefined;
    let pods = this.#pods.get(scrape);
    if (pods === undefined) {
      pods = new Map(workloadsFromDcgm(scrape).held.map(({ gpu: g, k8s }) => [g.index, k8s]));
      this.#pods.set(scrape, pods);
    }
    return pods.get(gpu.index);
  }

  /**
   * The MIG slices of a GPU in the scrape played now (`migSliceReadings`): one window per slice.
   *
   * @param gpu - the GPU, by index
   * @returns its slices, or `undefined` when it is not in MIG mode or nothing was played yet
   */
  migSlices(gpu: GpuIdentity): readonly MigSliceReading[] | undefined {
    const reading = this.#scrape?.find((r) => r.gpu.index === gpu.index);
    return reading === undefined ? undefined : migSliceReadings(reading);
  }

  /** Nothing to free. */
  close(): void {}

  #toSample(reading: DcgmGpuReading, nowMs: number): GpuSample {
    const sample: Record<string, unknown> = { gpu_index: reading.gpu.index, at_ms: nowMs };
    for (const field of INSTANT_FIELDS) {
      const value = reading.metrics[field];
      if (value !== undefined) sample[field] = value;
    }
    const tx = reading.metrics.nvlink_tx_bytes_per_s;
    const rx = reading.metrics.nvlink_rx_bytes_per_s;
    if (tx !== undefined || rx !== undefined) {
      const prev = this.#nvlink.get(reading.gpu.index);
      const dtS = prev ? Math.max(0, (nowMs - prev.atMs) / 1000) : 0;
      const next = {
        tx: (prev?.tx ?? 0) + (tx ?? 0) * dtS,
        rx: (prev?.rx ?? 0) + (rx ?? 0) * dtS,
        atMs: nowMs,
      };
      this.#nvlink.set(reading.gpu.index, next);
      if (tx !== undefined) sample.nvlink_tx_bytes_total = Math.round(next.tx);
      if (rx !== undefined) sample.nvlink_rx_bytes_total = Math.round(next.rx);
    }
    const power = reading.metrics.power_throttle_ratio;
    const thermal = reading.metrics.thermal_throttle_ratio;
    if (power !== undefined || thermal !== undefined) {
      const prev = this.#violation.get(reading.gpu.index);
      const dtUs = prev ? Math.max(0, (nowMs - prev.atMs) * 1000) : 0;
      const next = {
        power: (prev?.power ?? 0) + (power ?? 0) * dtUs,
        thermal: (prev?.thermal ?? 0) + (thermal ?? 0) * dtUs,
        atMs: nowMs,
      };
      this.#violation.set(reading.gpu.index, next);
      if (power !== undefined) sample.power_violation_us_total = Math.round(next.power);
      if (thermal !== undefined) sample.thermal_violation_us_total = Math.round(next.thermal);
    }
    return sample as unknown as GpuSample;
  }
}
