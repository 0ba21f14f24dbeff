import { PROFILING_METRIC_NAMES } from '../../lambdas/contract/constants';
import type { GpuEvent, GpuIdentity, K8sWorkload } from '../../lambdas/contract/schema';
import { nodeFetch } from '../send/node-fetch';
import type { GpuSample } from '../window/gpu-sample';
import type { MigSliceReading } from '../window/mig-slices';
import {
  DCGM_LABEL_REFRESH_MS,
  DCGM_LOSS_AFTER_MISSES,
  DCGM_REPROBE_INITIAL_MS,
  DCGM_REPROBE_MAX_MS,
} from './constants';
import { type DcgmExporterParse, type DcgmViolationCounters, scrapeDcgmExporter } from './dcgm-exporter';
import { migSliceReadings } from './dcgm-mig';
import { workloadsFromDcgm } from './dcgm-workload';
import type { AgentSource, SampleSink, SourceContext, SourceSupport } from './source';

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
  /**
   * Whether NVML GPM already gives the profiling counters (H100 and newer). Asked at `open()`: then
   * `profiling_source` stays `gpm`, no change event is sent, and the exporter is read only for
   * its Kubernetes pod labels, every {@link DCGM_LABEL_REFRESH_MS}. @default () => false
   */
  readonly gpmActive?: () => boolean;
  /** First re-probe wait after a failed probe, ms, 1..{@link reprobeMaxMs}. @default 15000 ({@link DCGM_REPROBE_INITIAL_MS}) */
  readonly reprobeInitialMs?: number;
  /** Longest re-probe wait, ms; the wait doubles up to it. @default 600000 ({@link DCGM_REPROBE_MAX_MS}) */
  readonly reprobeMaxMs?: number;
}

/** Running counters of {@link DcgmProfilingSource}. */
export interface DcgmProfilingStats {
  /** Scrapes started (probes and reads through `sample`). */
  scrapes: number;
  /** Kubernetes label values dropped because the contract refuses them (warned once per label). */
  k8s_labels_dropped: number;
}

/**
 * Reads DCGM profiling ratios per GPU index from a local dcgm-exporter, and the Kubernetes pod
 * holding each GPU where the exporter labels it. One {@link AgentSource}:
 *
 * - `open()` probes once (awaited, so the first batch says the right `profiling_source`);
 * - `sample(into, now)` gives the ratios of the latest scrape as overlays (the registry merges them
 *   into readings without GPM counters) and starts the next scrape when one is due, without waiting
 *   for it: every poll while profiling comes from here, every {@link DCGM_LABEL_REFRESH_MS} when it
 *   is read only for pod labels, and on an exponential back-off while it does not answer or gives
 *   no `DCGM_FI_PROF_*` ratio (15 s doubling to 10 min: {@link DCGM_REPROBE_INITIAL_MS},
 *   {@link DCGM_REPROBE_MAX_MS}). The clock is the `now` of each sample: no timer of its own.
 *   While it is scraped at every poll (profiling from here, no GPM) the thermal throttle-time
 *   counter `DCGM_FI_DEV_THERMAL_VIOLATION` (ns, as whole µs) is overlaid too, so the window measures
 *   `thermal_throttle_ratio` from it. `DCGM_FI_DEV_POWER_VIOLATION` is not: NVML's own
 *   `nvmlDeviceGetViolationStatus(POWER)` is the same counter, read at the window's edges, and a
 *   scrape a poll old mixed into it would count the same µs twice.
 * - every change of the profiling source (`none` → `dcgm` when an exporter that came up late answers
 *   with ratios; `dcgm` → `none` after {@link DCGM_LOSS_AFTER_MISSES} scrapes in a row without
 *   them) is emitted as a `profiling_source_changed` event whose detail says from, to and why.
 *   A boot race (agent before exporter) therefore costs one back-off step, not profiling for life.
 *
 * Nothing here throws for an exporter fault: a failed scrape leaves the ratios and pod labels
 * absent (never the stale ones), warned once per outage. `probe()` and `read()` scrape on demand.
 *
 * @example
 * const dcgm = new DcgmProfilingSource({ gpmActive: () => nvml.profilingSource() === 'gpm' });
 * const registry = new SourceRegistry([nvml, dcgm]);
 * await registry.open({ clock, emit, warn }); // probes; later polls re-probe on the back-off
 */
export class DcgmProfilingSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'dcgm-exporter';
  /** Running counters: scrapes started, Kubernetes label values dropped. */
  readonly stats: DcgmProfilingStats = { scrapes: 0, k8s_labels_dropped: 0 };

  private readonly url: string;
  private readonly doFetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly onWarning: (message: string, data?: Record<string, unknown>) => void;
  private readonly gpmActive: () => boolean;
  private readonly reprobeInitialMs: number;
  private readonly reprobeMaxMs: number;
  private down = false;
  private context: SourceContext | undefined;
  private gpm = false;
  /** Profiling ratios come from here now (the source of `profiling_source: 'dcgm'`). */
  private profiling = false;
  /** The last scrape got an answer. */
  private answering = false;
  private misses = 0;
  private lastScrapeMs = Number.NEGATIVE_INFINITY;
  private nextProbeMs = 0;
  private backoffMs: number;
  private inFlight: Promise<void> | undefined;
  private ratios: ReadonlyMap<number, DcgmProfilingReading> = new Map();
  /** The thermal throttle-time counter of the last scrape, by GPU index (`DCGM_FI_DEV_THERMAL_VIOLATION`, µs). */
  private violations: ReadonlyMap<number, Pick<DcgmViolationCounters, 'thermal_violation_us_total'>> =
    new Map();
  /** Pod per GPU UUID (label `UUID`) and per index (label `gpu`), from the last scrape. */
  private workloads: { byUuid: ReadonlyMap<string, K8sWorkload>; byIndex: ReadonlyMap<number, K8sWorkload> } =
    NO_WORKLOADS;
  /** MIG slices of the last scrape, by GPU UUID and by index (`migSlices`). */
  private slices: {
    byUuid: ReadonlyMap<string, readonly MigSliceReading[]>;
    byIndex: ReadonlyMap<number, readonly MigSliceReading[]>;
  } = { byUuid: new Map(), byIndex: new Map() };
  private readonly warnedLabels = new Set<string>();

  /**
   * @param opts - see {@link DcgmProfilingSourceOptions}
   * @throws {RangeError} when `timeoutMs` is outside 1..60000, or the re-probe waits are not
   *   integers with 1 <= `reprobeInitialMs` <= `reprobeMaxMs`
   */
  constructor(opts: DcgmProfilingSourceOptions = {}) {
    this.url = opts.url ?? DCGM_PROFILING_DEFAULT_URL;
    this.doFetch = opts.fetch ?? nodeFetch;
    this.timeoutMs = opts.timeoutMs ?? 500;
    this.onWarning = opts.onWarning ?? (() => {});
    this.gpmActive = opts.gpmActive ?? (() => false);
    this.reprobeInitialMs = opts.reprobeInitialMs ?? DCGM_REPROBE_INITIAL_MS;
    this.reprobeMaxMs = opts.reprobeMaxMs ?? DCGM_REPROBE_MAX_MS;
    this.backoffMs = this.reprobeInitialMs;
    if (!Number.isInteger(this.timeoutMs) || this.timeoutMs < 1 || this.timeoutMs > 60_000)
      throw new RangeError(`Expected \`timeoutMs\` to be an integer in 1..60000, got \`${this.timeoutMs}\``);
    if (!Number.isInteger(this.reprobeInitialMs) || this.reprobeInitialMs < 1)
      throw new RangeError(
        `Expected \`reprobeInitialMs\` to be an integer >= 1, got \`${this.reprobeInitialMs}\``,
      );
    if (!Number.isInteger(this.reprobeMaxMs) || this.reprobeMaxMs < this.reprobeInitialMs)
      throw new RangeError(
        `Expected \`reprobeMaxMs\` to be an integer >= reprobeInitialMs (${this.reprobeInitialMs}), got \`${this.reprobeMaxMs}\``,
      );
  }

  /** `dcgm` while profiling ratios come from the exporter, else `none`. */
  get profilingSource(): 'dcgm' | 'none' {
    return this.profiling ? 'dcgm' : 'none';
  }

  /**
   * Probes the exporter once and waits for the answer. Always supported (an exporter that is not
   * up yet is re-probed on the back-off); the detail says what the probe found.
   *
   * @param context - the clock, `emit` for `profiling_source_changed`, `warn`
   * @returns `{ supported: true, detail }`
   */
  async open(context: SourceContext): Promise<SourceSupport> {
    this.context = context;
    this.gpm = this.gpmActive();
    await this.scrape(context.clock().getTime(), false);
    const detail = this.profiling
      ? `profiling ratios from ${this.url}`
      : this.answering
        ? `${this.url} answers without DCGM_FI_PROF_* ratios${this.gpm ? ' (GPM gives them)' : ''}; read for pod labels`
        : `${this.url} does not answer; re-probing from ${this.reprobeInitialMs / 1000} s up to every ${this.reprobeMaxMs / 1000} s`;
    return { supported: true, detail };
  }

  /**
   * Writes the latest ratios as overlays, and starts the next scrape when one is due (its result
   * serves later polls). Never waits and never throws.
   *
   * @param into - the poll's sink
   * @param now - the poll time: the back-off and refresh are measured on it
   */
  sample(into: SampleSink, now: Date): void {
    const nowMs = now.getTime();
    if (this.inFlight === undefined && this.due(nowMs)) void this.scrape(nowMs, true);
    for (const [index, reading] of this.ratios) into.overlay(index, reading);
    // Cumulative counters only while the exporter is scraped at every poll: a counter repeated from
    // a scrape minutes old would read as no growth, i.e. as "never throttled".
    if (this.profiling && !this.gpm)
      for (const [index, counters] of this.violations) into.overlay(index, counters);
  }

  /**
   * The pod holding a GPU at the last scrape, matched by UUID (label `UUID`) when both sides have
   * UUIDs (so a DCGM index that differs from NVML's cannot charge the wrong pod), else by index
   * (label `gpu`). Absent off Kubernetes, for a GPU no pod holds, and while the exporter does not
   * answer.
   */
  workload(gpu: GpuIdentity): K8sWorkload | undefined {
    const { byUuid, byIndex } = this.workloads;
    if (gpu.uuid !== undefined && byUuid.size > 0) return byUuid.get(gpu.uuid);
    return byIndex.get(gpu.index);
  }

  /**
   * The MIG slices of a GPU at the last scrape (`migSliceReadings`: id, profile, GR activity, pod),
   * so the agent sends one window per slice; matched as {@link workload} matches. `undefined` for a
   * GPU not in MIG mode and while the exporter does not answer.
   */
  migSlices(gpu: GpuIdentity): readonly MigSliceReading[] | undefined {
    const { byUuid, byIndex } = this.slices;
    if (gpu.uuid !== undefined && byUuid.size > 0) return byUuid.get(gpu.uuid);
    return byIndex.get(gpu.index);
  }

  /** Resolves when no scrape is in flight (shutdown, and tests that step the clock). */
  async idle(): Promise<void> {
    while (this.inFlight !== undefined) await this.inFlight;
  }

  /** Waits for a scrape in flight; nothing else to free. */
  async close(): Promise<void> {
    await this.idle();
    this.context = undefined;
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
    return ratiosOf(await this.scrapeParse());
  }

  /** Scrapes, warning once per outage; `undefined` when the exporter does not answer. */
  private async scrapeParse(): Promise<DcgmExporterParse | undefined> {
    this.stats.scrapes++;
    try {
      const parse = await scrapeDcgmExporter(this.url, { timeoutMs: this.timeoutMs, fetch: this.doFetch });
      this.down = false;
      return parse;
    } catch (cause) {
      if (!this.down)
        this.onWarning('dcgm-exporter does not answer; profiling counters are absent until it does', {
          url: this.url,
          error: String(cause),
        });
      this.down = true;
      return undefined;
    }
  }

  private due(nowMs: number): boolean {
    if (this.profiling && !this.gpm) return true;
    if (this.answering) return nowMs - this.lastScrapeMs >= DCGM_LABEL_REFRESH_MS;
    return nowMs >= this.nextProbeMs;
  }

  /** One scrape and what follows from it: ratios, pod labels, the state, the back-off, events. */
  private scrape(nowMs: number, announce: boolean): Promise<void> {
    this.lastScrapeMs = nowMs;
    const run = this.scrapeParse().then((parse) => this.settle(parse, nowMs, announce));
    this.inFlight = run.finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private settle(parse: DcgmExporterParse | undefined, nowMs: number, announce: boolean): void {
    this.answering = parse !== undefined;
    this.ratios = ratiosOf(parse);
    this.violations = new Map(
      (parse?.gpus ?? []).flatMap((g) => {
        const thermal = g.violation_us?.thermal_violation_us_total;
        return thermal === undefined ? [] : [[g.gpu.index, { thermal_violation_us_total: thermal }] as const];
      }),
    );
    this.workloads = parse === undefined ? NO_WORKLOADS : this.workloadsOf(parse);
    this.slices = slicesOf(parse);
    const hasRatios = this.ratios.size > 0;
    if (hasRatios) {
      this.misses = 0;
      this.backoffMs = this.reprobeInitialMs;
      if (!this.profiling) {
        this.profiling = true;
        if (announce)
          this.announce(
            'none',
            'dcgm',
            `${this.url} exports DCGM_FI_PROF_* ratios for ${this.ratios.size} GPU(s)`,
          );
      }
      return;
    }
    this.misses++;
    if (this.profiling && this.misses < DCGM_LOSS_AFTER_MISSES) return;
    const why = parse === undefined ? 'does not answer' : 'answers without DCGM_FI_PROF_* ratios';
    const wait = this.backoffMs;
    if (!this.answering) {
      this.nextProbeMs = nowMs + wait;
      this.backoffMs = Math.min(wait * 2, this.reprobeMaxMs);
    }
    if (this.profiling) {
      this.profiling = false;
      const next = this.answering
        ? `read again every ${DCGM_LABEL_REFRESH_MS / 1000} s`
        : `re-probing in ${wait / 1000} s`;
      this.announce(
        'dcgm',
        'none',
        `${this.url} ${why} (${DCGM_LOSS_AFTER_MISSES} scrapes in a row); ${next}`,
      );
    }
  }

  /** Emits a `profiling_source_changed` event, unless GPM gives the profiling source anyway. */
  private announce(from: 'dcgm' | 'none', to: 'dcgm' | 'none', why: string): void {
    const context = this.context;
    if (this.gpm || context === undefined) return;
    const event: GpuEvent = {
      at: context.clock().toISOString(),
      kind: 'profiling_source_changed',
      source: 'agent',
      detail: `profiling_source ${from} → ${to}: ${why}`,
    };
    context.emit(event);
  }

  private workloadsOf(parse: DcgmExporterParse): DcgmProfilingSource['workloads'] {
    const { held, dropped } = workloadsFromDcgm(parse.gpus);
    for (const d of dropped) {
      this.stats.k8s_labels_dropped++;
      if (this.warnedLabels.has(d.label)) continue;
      this.warnedLabels.add(d.label);
      this.onWarning('dcgm-exporter Kubernetes label outside the contract; dropped, never sent', {
        gpu_index: d.gpu.index,
        label: d.label,
        reason: d.reason,
      });
    }
    if (held.length === 0) return NO_WORKLOADS;
    const byUuid = new Map<string, K8sWorkload>();
    const byIndex = new Map<number, K8sWorkload>();
    for (const { gpu, k8s } of held) {
      byIndex.set(gpu.index, k8s);
      if (gpu.uuid !== undefined) byUuid.set(gpu.uuid, k8s);
    }
    return { byUuid, byIndex };
  }
}

/** The MIG slices of each GPU of a scrape, by UUID and by index; empty without MIG. */
function slicesOf(parse: DcgmExporterParse | undefined): DcgmProfilingSource['slices'] {
  const byUuid = new Map<string, readonly MigSliceReading[]>();
  const byIndex = new Map<number, readonly MigSliceReading[]>();
  for (const reading of parse?.gpus ?? []) {
    const slices = migSliceReadings(reading);
    if (slices === undefined) continue;
    byIndex.set(reading.gpu.index, slices);
    if (reading.gpu.uuid !== undefined) byUuid.set(reading.gpu.uuid, slices);
  }
  return { byUuid, byIndex };
}

const NO_WORKLOADS = { byUuid: new Map<string, K8sWorkload>(), byIndex: new Map<number, K8sWorkload>() };

/** The profiling ratios per GPU index of one scrape; GPUs with none left out. */
function ratiosOf(parse: DcgmExporterParse | undefined): Map<number, DcgmProfilingReading> {
  const out = new Map<number, DcgmProfilingReading>();
  if (parse === undefined) return out;
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
