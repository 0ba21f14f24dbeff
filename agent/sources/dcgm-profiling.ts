import { PROFILING_METRIC_NAMES } from '../../lambdas/contract';
import { nodeFetch } from '../send/node-fetch';
import type { GpuSample } from '../window/gpu-sample';
import { type DcgmExporterParse, scrapeDcgmExporter } from './dcgm-exporter';

/**
 * Profiling counters from a local dcgm-exporter, for GPUs without NVML GPM (A100 / p4d):
 * `DCGM_FI_PROF_SM_ACTIVE` (1002), `SM_OCCUPANCY` (1003), `PIPE_TENSOR_ACTIVE` (1004),
 * `DRAM_ACTIVE` (1005), `PIPE_FP64/FP32/FP16_ACTIVE` (1006/1007/1008), and their DCGM 4
 * `*_RATIO` names, all 0..1. Only these: `sm_active` is never filled from `DCGM_FI_DEV_GPU_UTIL`
 * (docs/design.md §3). Field ids: docs/nvml.md §8. Parsing: {@link scrapeDcgmExporter}.
 */

/** Default dcgm-exporter endpoint (its default listen address is `:9400`). */
export const DCGM_PROFILING_DEFAULT_URL = 'http://127.0.0.1:9400/metrics';

/** The profiling fields of a {@link GpuSample} this source fills. */
export const DCGM_PROFILING_FIELDS = PROFILING_METRIC_NAMES;

/** One GPU's profiling ratios, 0..1; a field the exporter does not export is absent. */
export type DcgmProfilingReading = Partial<Pick<GpuSample, (typeof DCGM_PROFILING_FIELDS)[number]>>;

/** Options of {@link DcgmProfilingSource}. */
export interface DcgmProfilingSourceOptions {
  /** The dcgm-exporter metrics URL. @default 'http://127.0.0.1:9400/metrics' */
  readonly url?: string;
  /** The fetch to use (tests inject one). @default {@link nodeFetch} (node:http, not undici: less RSS) */
  readonly fetch?: typeof fetch;
  /** Give up on a scrape after this many ms, 1..60000; keep it below the poll interval. @default 500 */
  readonly timeoutMs?: number;
  /** Called once per condition: the exporter stops answering (again after it came back). @default no-op */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/**
 * Reads DCGM profiling ratios per GPU index from a local dcgm-exporter.
 *
 * `probe()` at start decides whether the agent reports `profiling_source: 'dcgm'`; `read()` at
 * each poll gives the ratios to merge into that poll's {@link GpuSample}s. Neither throws: a
 * scrape that fails gives `false` / an empty map, warned once per outage.
 *
 * @example
 * const dcgm = new DcgmProfilingSource();
 * if (await dcgm.probe()) {
 *   const ratios = await dcgm.read();      // Map { 0 => { sm_active: 0.42, … }, … }
 *   samples = samples.map((s) => ({ ...s, ...ratios.get(s.gpu_index) }));
 * }
 */
export class DcgmProfilingSource {
  private readonly url: string;
  private readonly doFetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly onWarning: (message: string, data?: Record<string, unknown>) => void;
  private down = false;

  /**
   * @param opts - see {@link DcgmProfilingSourceOptions}
   * @throws {RangeError} when `timeoutMs` is outside 1..60000
   */
  constructor(opts: DcgmProfilingSourceOptions = {}) {
    this.url = opts.url ?? DCGM_PROFILING_DEFAULT_URL;
    this.doFetch = opts.fetch ?? nodeFetch;
    this.timeoutMs = opts.timeoutMs ?? 500;
    this.onWarning = opts.onWarning ?? (() => {});
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs < 1 || this.timeoutMs > 60_000)
      throw new RangeError(`Expected \`timeoutMs\` to be an integer in 1..60000, got \`${this.timeoutMs}\``);
  }

  /**
   * Whether the exporter answers and exports at least one `DCGM_FI_PROF_*` ratio for some GPU
   * (dcgm-exporter's default counter list has none on some versions; they need its profiling CSV).
   *
   * @returns `true` when profiling ratios can be read
   */
  async probe(): Promise<boolean> {
    const ratios = await this.read();
    return [...ratios.values()].some((r) => Object.keys(r).length > 0);
  }

  /**
   * Scrapes once.
   *
   * @returns per GPU index (label `gpu`), the profiling ratios found (0..1); GPUs with none are
   *   left out; an empty map when the exporter does not answer
   */
  async read(): Promise<Map<number, DcgmProfilingReading>> {
    let parse: DcgmExporterParse;
    try {
      parse = await scrapeDcgmExporter(this.url, {
        timeoutMs: this.timeoutMs,
        fetch: this.doFetch,
      });
    } catch (cause) {
      if (!this.down)
        this.onWarning('dcgm-exporter does not answer; profiling counters are absent until it does', {
          url: this.url,
          error: String(cause),
        });
      this.down = true;
      return new Map();
    }
    this.down = false;
    const out = new Map<number, DcgmProfilingReading>();
    for (const { gpu, metrics } of parse.gpus) {
      const reading: { -readonly [K in keyof DcgmProfilingReading]: DcgmProfilingReading[K] } = {};
      for (const field of DCGM_PROFILING_FIELDS) {
        const value = metrics[field];
        if (value !== undefined) reading[field] = value;
      }
      if (Object.keys(reading).length > 0) out.set(gpu.index, reading);
    }
    return out;
  }
}
