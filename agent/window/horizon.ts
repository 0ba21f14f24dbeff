import { type GpuIdentity, type GpuWindow, MAX_HORIZON_WINDOW_S } from '../../lambdas/contract';
import { WindowAggregationError, WindowOptionsError } from './errors';
import { GpuRow, rowFromSample } from './gpu-row';
import type { GpuSample } from './gpu-sample';
import { ColumnScratch, SampleRing } from './sample-ring';
import { windowFromColumns } from './window-from-columns';

/** The row {@link HorizonTracker.add} encodes a sample object into (used synchronously, then overwritten). */
const ADD_SCRATCH = new GpuRow(0);

/** Default horizon, seconds: the trailing 15 minutes the window rules judge (docs/design.md §1, §6). */
export const DEFAULT_HORIZON_S = 900;
/** Highest GPU index a sample may carry (contract `gpu.index` 0..63). */
const MAX_GPU_INDEX = 63;
/** Upper bound of `maxSamplesPerGpu`: 10 samples a second over the longest horizon, plus one. */
const MAX_SAMPLES_PER_GPU_LIMIT = 10 * MAX_HORIZON_WINDOW_S + 1;

/** Options of {@link HorizonTracker}. */
export interface HorizonTrackerOptions {
  /**
   * Length of the trailing horizon, seconds, 1..3600 (`MAX_HORIZON_WINDOW_S`): samples older
   * than the newest minus this are evicted, and a window covers at most this span.
   * @default 900
   */
  readonly horizonS?: number;
  /**
   * Most samples kept per GPU, an integer 2..36,001; beyond it the oldest are dropped even inside
   * the horizon (the window then starts at the oldest kept). A hard memory bound when samples
   * come faster than expected.
   * @default 2 × ceil(horizonS) + 1 (1801: the whole horizon at one sample per 0.5 s)
   */
  readonly maxSamplesPerGpu?: number;
  /**
   * The expected time between two samples of a GPU, ms (the poll interval), 1..3,600,000: each
   * GPU's ring is sized at its first sample for the whole horizon at this rate (`horizonS × 1000 /
   * sampleIntervalMs + 2` rows, at most `maxSamplesPerGpu`), so it never grows, and never holds an
   * old and a new set of arrays at once, while the horizon fills. Without it a ring starts at 64
   * rows and doubles. Faster samples still fit: the ring then doubles up to `maxSamplesPerGpu`.
   */
  readonly sampleIntervalMs?: number;
}

/**
 * Keeps, per GPU, the samples of the trailing horizon and summarises them into a contract
 * `kind: 'horizon'` window with the same statistics as `aggregateWindow` (both call
 * `windowFromColumns`, so the same samples give the same numbers).
 *
 * Storage: per GPU one ring of typed arrays holding a record of the sample's fields per row (`NaN` =
 * absent, flags 1/0; `SampleRing`) rather than an array of sample objects, plus a ring of process entries (`Uint32Array` pid +
 * `Float64Array` memory). A field column takes 0, 4 or 8 bytes a row by the values it has held
 * (`SampleRing`: nothing while absent, 32-bit while every value is exact in 32 bits, else 64-bit),
 * and every row 17 bytes more (time, process-entry index and count). Memory per GPU, arithmetic, at
 * 1 Hz (902 rows): all 35 columns 64-bit, 297 B a row, 262 KiB; an H100 with GPM as read (ratios,
 * power, energy and the PCIe and NVLink counters 64-bit, 20 columns 32-bit), 217 B, 191 KiB, 1.5 MiB for
 * 8 GPUs (the fake NVML's round ratios fit 32 bits: 1.14 MiB measured); plus 12 B per process entry. Worst case
 * under the defaults (1,801 rows of 64 processes each, every column 64-bit): 1,801 × 297 B +
 * 131,072 × 12 B ≈ 2.0 MiB per GPU, 16 MiB for 8, plus one shared scratch (≤ one ring's columns)
 * used when a window's rows wrap around the ring's end or a column is 32-bit. The same 7,200
 * samples as objects would take ≈ 800 B each in V8 (35 properties, most boxed doubles) ≈ 5.8 MB
 * and feed the garbage collector every second. At most 64 GPUs (index 0..63) are tracked.
 *
 * Samples of one GPU must come in time order; a sample older than that GPU's newest (the clock
 * stepped back) clears the GPU's horizon and starts it again from that sample.
 *
 * @example
 * const horizon = new HorizonTracker({ horizonS: 900 });
 * for (const sample of source.sample(now).gpus) horizon.add(sample);
 * const windows = identities.map((gpu) => horizon.window(gpu, now)).filter((w) => w !== undefined);
 */
export class HorizonTracker {
  /** The horizon, seconds (see {@link HorizonTrackerOptions.horizonS}). */
  readonly horizonS: number;
  /** Most samples kept per GPU (see {@link HorizonTrackerOptions.maxSamplesPerGpu}). */
  readonly maxSamplesPerGpu: number;
  readonly #rings = new Map<number, SampleRing>();
  readonly #scratch = new ColumnScratch();
  /** Rows a GPU's ring is given at its first sample (from `sampleIntervalMs`); undefined: the ring's default. */
  readonly #initialRows: number | undefined;

  /** @throws {WindowOptionsError} when an option is outside its documented range */
  constructor(options: HorizonTrackerOptions = {}) {
    const horizonS = options.horizonS ?? DEFAULT_HORIZON_S;
    if (typeof horizonS !== 'number' || !(horizonS >= 1 && horizonS <= MAX_HORIZON_WINDOW_S)) {
      throw new WindowOptionsError('horizonS', `a number in 1..${MAX_HORIZON_WINDOW_S}`, horizonS);
    }
    const maxSamples = options.maxSamplesPerGpu ?? 2 * Math.ceil(horizonS) + 1;
    if (!Number.isInteger(maxSamples) || maxSamples < 2 || maxSamples > MAX_SAMPLES_PER_GPU_LIMIT) {
      throw new WindowOptionsError(
        'maxSamplesPerGpu',
        `an integer in 2..${MAX_SAMPLES_PER_GPU_LIMIT}`,
        maxSamples,
      );
    }
    const interval = options.sampleIntervalMs;
    if (interval !== undefined && !(Number.isFinite(interval) && interval >= 1 && interval <= 3_600_000)) {
      throw new WindowOptionsError('sampleIntervalMs', 'a number in 1..3600000', interval);
    }
    this.horizonS = horizonS;
    this.maxSamplesPerGpu = maxSamples;
    this.#initialRows =
      interval === undefined ? undefined : Math.min(maxSamples, Math.ceil((horizonS * 1000) / interval) + 2);
  }

  /**
   * Adds one sample to its GPU's horizon, then evicts that GPU's samples older than
   * `sample.at_ms − horizonS` (a sample exactly `horizonS` older than the newest is kept).
   * Values outside the contract's range are stored as absent, as `aggregateWindow` leaves them out.
   *
   * @param sample - a sample of GPU `gpu_index` 0..63, `at_ms` finite
   * @throws {WindowAggregationError} when `gpu_index` is not an integer 0..63 or `at_ms` is not finite
   */
  add(sample: GpuSample): void {
    this.addRow(rowFromSample(sample, ADD_SCRATCH));
  }

  /**
   * {@link add} for a source's row (`GpuRow`, the allocation-free form of a sample): the same
   * checks and eviction; the row is copied, the caller may reuse it.
   *
   * @throws {WindowAggregationError} when `gpuIndex` is not an integer 0..63 or `atMs` is not finite
   */
  addRow(row: GpuRow): void {
    const index = row.gpuIndex;
    if (!Number.isInteger(index) || index < 0 || index > MAX_GPU_INDEX) {
      throw new WindowAggregationError(
        `Expected a sample with gpu_index an integer in 0..${MAX_GPU_INDEX}, got ${String(index)}. Fix the source that produced it.`,
      );
    }
    if (!Number.isFinite(row.atMs)) {
      throw new WindowAggregationError(
        `Expected a sample with a finite at_ms, got ${String(row.atMs)}. Take times from the injected clock.`,
      );
    }
    let ring = this.#rings.get(index);
    if (ring === undefined) {
      ring = new SampleRing(this.maxSamplesPerGpu, this.#initialRows);
      this.#rings.set(index, ring);
    }
    if (ring.isAfter(row.atMs)) ring.clear();
    ring.pushRow(row);
    ring.dropOldest(ring.lowerBound(row.atMs - this.horizonS * 1000));
  }

  /**
   * The horizon window of one GPU ending at `end`: the samples with `at_ms` in
   * [end − horizonS, end], summarised by `windowFromColumns` (see its TSDoc for the method of
   * each statistic) into a `kind: 'horizon'` window over [max(oldest such sample, end − horizonS), end],
   * never longer than `MAX_HORIZON_WINDOW_S`.
   *
   * @param gpu - the GPU's identity (its `index` selects the samples), copied into the window
   * @param end - the window end, usually the flush time
   * @returns a window that passes `GpuWindowSchema`, or `undefined` when the GPU has no sample in
   *   the span or the only ones are at `end` itself (a window must not be empty in time)
   * @throws {WindowAggregationError} when `end` is an invalid date
   */
  window(gpu: GpuIdentity, end: Date): GpuWindow | undefined {
    const endMs = end.getTime();
    if (Number.isNaN(endMs)) {
      throw new WindowAggregationError('Expected a valid end date for the horizon window, got Invalid Date.');
    }
    const ring = this.#rings.get(gpu.index);
    if (ring === undefined) return undefined;
    const horizonStartMs = endMs - this.horizonS * 1000;
    const from = ring.lowerBound(horizonStartMs);
    const to = ring.upperBound(endMs);
    if (from >= to) return undefined;
    const startMs = Math.max(ring.atMs(from), horizonStartMs);
    if (startMs >= endMs) return undefined;
    return windowFromColumns('horizon', ring.columns(from, to, this.#scratch), new Date(startMs), end, gpu);
  }

  /** Indexes of the GPUs with at least one sample kept, ascending. */
  gpus(): number[] {
    return [...this.#rings]
      .filter(([, ring]) => ring.length > 0)
      .map(([index]) => index)
      .sort((a, b) => a - b);
  }

  /** Forgets one GPU's samples and frees its arrays (a GPU lost or reset); unknown indexes are ignored. */
  clear(gpuIndex: number): void {
    this.#rings.delete(gpuIndex);
  }

  /** Samples kept for one GPU, 0..`maxSamplesPerGpu`. */
  sampleCount(gpuIndex: number): number {
    return this.#rings.get(gpuIndex)?.length ?? 0;
  }

  /** Bytes allocated by the typed arrays of every GPU's ring (not the shared scratch). */
  bytes(): number {
    let total = 0;
    for (const ring of this.#rings.values()) total += ring.bytes;
    return total;
  }
}
