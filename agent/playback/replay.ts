import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import * as z from 'zod';
import {
  type AgentInfo,
  type Batch,
  formatPath,
  type GpuEvent,
  type Host,
  HostSchema,
  MAX_FLUSH_WINDOW_S,
  MAX_PAST_S,
  PROFILING_METRIC_NAMES,
  type ProfilingSource,
} from '../../lambdas/contract';
import { CapturedBatchesError, ReplayManifestError } from '../errors';
import { type DcgmExporterParse, type DcgmGpuReading, parseDcgmExporterText } from '../sources/dcgm-exporter';
import { type KernelLogParse, type KernelLogTime, parseKernelLog, toXidEvent } from '../sources/kmsg';
import { findGpuLost, type GpuLostRecord, toGpuLostEvent } from '../sources/kmsg-gpu-lost';
import { type CapturedAgentInfo, parseCapturedBatches } from './captured-batches';
import { playBatches } from './playback';
import { ReplayGpuSource } from './replay-gpu-source';

/**
 * Replay source: turns recorded captures (dcgm-exporter scrapes, kernel logs, batches a real agent
 * sent) of real hosts into the batches those hosts' agents would have sent over the last
 * `duration_s`, for `gpu-sentinel local` demos and end-to-end tests. Loading reads files; building
 * is pure (`now` is passed in).
 */

/** Longest replay span, s: 6 days, so every time stays inside the contract's 7-day past limit. */
export const MAX_REPLAY_DURATION_S = 6 * 24 * 3600;

/** Kept back from the contract's past limit for events re-based far into the past, s. */
const PAST_MARGIN_S = 3600;

/** The manifest file as written (JSON). */
export const ReplayManifestFileSchema = z.strictObject({
  /** Flush window, s, 1..3600. @default 60 */
  window_s: z.int().min(1).max(MAX_FLUSH_WINDOW_S).default(60),
  /** Replayed span ending at `now`, s, ≥ `window_s`, ≤ 6 days. @default 3600 */
  duration_s: z.int().min(1).max(MAX_REPLAY_DURATION_S).default(3600),
  hosts: z
    .array(
      z.strictObject({
        instance_id: HostSchema.shape.instance_id,
        instance_type: HostSchema.shape.instance_type,
        region: HostSchema.shape.region,
        az: HostSchema.shape.az,
        lifecycle: HostSchema.shape.lifecycle,
        asg_name: HostSchema.shape.asg_name,
        ami_id: HostSchema.shape.ami_id,
        tags: HostSchema.shape.tags,
        /** dcgm-exporter scrape files, relative to the manifest; played in order, cycling. */
        dcgm_exporter: z.array(z.string().min(1)).optional(),
        /** Kernel logs (any dmesg/journalctl format), relative to the manifest. */
        kernel_logs: z.array(z.string().min(1)).optional(),
        /**
         * Batches a real agent sent (`batches.jsonl` of `test/fixtures/captured/…`: one
         * `{received_ms, content_encoding, batch}` or bare batch a line), relative to the manifest;
         * their flush windows are played in order, one per replay window, cycling. Not with
         * `dcgm_exporter` on the same host (one source of GPU readings per host).
         */
        agent_batches: z.array(z.string().min(1)).optional(),
      }),
    )
    .min(1, 'expected at least one host'),
});

/** The manifest file's shape (before defaults). */
export type ReplayManifestFile = z.input<typeof ReplayManifestFileSchema>;

/** One replayed host, its files read and parsed. */
export interface ReplayHost {
  /** Contract identity of the host. */
  readonly host: Host;
  /** Parsed scrapes, in manifest order (absolute `file`). */
  readonly scrapes: readonly { readonly file: string; readonly parse: DcgmExporterParse }[];
  /**
   * Parsed kernel logs, in manifest order (absolute `file`): the Xid lines (`parse`) and the lines
   * that say a GPU is gone (`lost`, agent/sources/kmsg-gpu-lost.ts).
   */
  readonly kernel_logs: readonly {
    readonly file: string;
    readonly parse: KernelLogParse;
    readonly lost: readonly GpuLostRecord[];
  }[];
  /**
   * Captured agent batches, in manifest order (absolute `file`): their flush windows as readings,
   * one entry per window (`parseCapturedBatches`), and what that agent said about itself.
   */
  readonly captured: readonly {
    readonly file: string;
    readonly windows: readonly (readonly DcgmGpuReading[])[];
    readonly agent: CapturedAgentInfo;
  }[];
}

/** A loaded replay manifest. */
export interface ReplayManifest {
  /** Absolute path of the manifest file. */
  readonly file: string;
  /** Flush window, s. */
  readonly window_s: number;
  /** Replayed span, s. */
  readonly duration_s: number;
  /** The hosts. */
  readonly hosts: readonly ReplayHost[];
}

/**
 * Reads and validates a replay manifest, then reads and parses every file it names (paths
 * relative to the manifest's folder).
 *
 * @param path - the manifest file
 * @returns the manifest with its captures parsed
 * @throws {ReplayManifestError} naming the field, when the manifest cannot be read, is not JSON,
 *   breaks the schema, names a file that cannot be read or has no GPU readings, names captured
 *   agent batches that the contract refuses (the message names the line), or gives a host both
 *   `dcgm_exporter` and `agent_batches`
 */
export async function loadReplayManifest(path: string): Promise<ReplayManifest> {
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new ReplayManifestError(file, '(root)', `cannot read the manifest (${String(cause)})`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new ReplayManifestError(file, '(root)', `expected JSON (${String(cause)})`, { cause });
  }
  const result = ReplayManifestFileSchema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    let field = formatPath(issue?.path ?? []);
    if (issue?.code === 'unrecognized_keys')
      field = field === '(root)' ? (issue.keys[0] ?? '') : `${field}.${issue.keys[0] ?? ''}`;
    throw new ReplayManifestError(file, field, issue?.message ?? 'invalid manifest', { cause: result.error });
  }
  const m = result.data;
  if (m.duration_s < m.window_s)
    throw new ReplayManifestError(
      file,
      'duration_s',
      `expected at least window_s (${m.window_s}), got ${m.duration_s}`,
    );
  const base = dirname(file);
  const read = async (rel: string, field: string): Promise<{ file: string; text: string }> => {
    const abs = resolve(base, rel);
    try {
      return { file: abs, text: await readFile(abs, 'utf8') };
    } catch (cause) {
      throw new ReplayManifestError(file, field, `cannot read ${abs} (${String(cause)})`, { cause });
    }
  };
  const hosts = await Promise.all(
    m.hosts.map(async (h, i): Promise<ReplayHost> => {
      const { dcgm_exporter = [], kernel_logs = [], agent_batches = [], ...identity } = h;
      if (dcgm_exporter.length > 0 && agent_batches.length > 0)
        throw new ReplayManifestError(
          file,
          `hosts[${i}].agent_batches`,
          'expected one source of GPU readings per host, got both dcgm_exporter and agent_batches',
        );
      const scrapes = await Promise.all(
        dcgm_exporter.map(async (rel, j) => {
          const field = `hosts[${i}].dcgm_exporter[${j}]`;
          const f = await read(rel, field);
          const parse = parseDcgmExporterText(f.text);
          if (parse.gpus.length === 0)
            throw new ReplayManifestError(
              file,
              field,
              `expected a dcgm-exporter scrape with GPU readings in ${f.file}, found none`,
            );
          return { file: f.file, parse };
        }),
      );
      const logs = await Promise.all(
        kernel_logs.map(async (rel, j) => {
          const f = await read(rel, `hosts[${i}].kernel_logs[${j}]`);
          return { file: f.file, parse: parseKernelLog(f.text), lost: findGpuLost(f.text) };
        }),
      );
      const captured = await Promise.all(
        agent_batches.map(async (rel, j) => {
          const field = `hosts[${i}].agent_batches[${j}]`;
          const f = await read(rel, field);
          try {
            return { file: f.file, ...parseCapturedBatches(f.text) };
          } catch (cause) {
            if (!(cause instanceof CapturedBatchesError)) throw cause;
            throw new ReplayManifestError(file, field, `in ${f.file}, ${cause.message}`, { cause });
          }
        }),
      );
      return { host: stripUndefined(identity) as Host, scrapes, kernel_logs: logs, captured };
    }),
  );
  return { file, window_s: m.window_s, duration_s: m.duration_s, hosts };
}

/** Options of {@link buildReplayBatches}. */
export interface BuildReplayOptions {
  /** End of the replayed span: the last window ends here, the logs' last lines land here. */
  readonly now: Date;
  /** `agent.version` of the batches. */
  readonly agentVersion: string;
  /** Poll interval of the replayed agent, ms, 100..60,000. @default 1000 (the agent's) */
  readonly pollIntervalMs?: number;
  /** Trailing horizon of the replayed agent, s, 1..3600. @default 900 (the agent's) */
  readonly horizonS?: number;
}

/**
 * Builds the batches the manifest's hosts' agents would have sent over [now − duration_s, now],
 * by playing each host through the agent's own loop (`playBatches`): the scrapes become the
 * GPUs' readings every poll (one scrape is the same steady state every window, several are played
 * in order, one per window, cycling), the loop flushes every `window_s` (one flush window **and
 * one trailing horizon window** per GPU per batch, as the agent sends), and the kernel-log XIDs
 * are delivered when they happened, each flushed at once as the agent flushes a critical event.
 * The logs are re-based so each log's last line lands at `now`, keeping relative offsets; XIDs
 * before the span come in the first reading; those older than 7 days − 1 h are dropped. A host
 * with logs but no scrape sends event-only batches. `sent_at` is each batch's flush time; `seq`
 * counts from 0 per host (each host is its own agent).
 * `agent.profiling_source` is `dcgm` when any scrape gives a DCGM profiling ratio (`sm_active`,
 * `sm_occupancy`, `tensor_active`, `dram_active`, `fp*_active`), else `none`. Captured agent
 * batches are played the same way, each captured flush window as one replay window (a 10 s window
 * replayed as a 60 s one plays its load six times slower), its throttle ratios kept; the batches
 * then carry the captured agent's `profiling_source` (`gpm` on a Hopper) and its driver, NVML and
 * CUDA versions.
 *
 * @param manifest - from {@link loadReplayManifest}
 * @param opts - `now`, `agentVersion`, the agent's poll interval and horizon
 * @returns batches, host by host, each host's in time order
 */
export async function buildReplayBatches(
  manifest: ReplayManifest,
  opts: BuildReplayOptions,
): Promise<Batch[]> {
  const nowMs = opts.now.getTime();
  const windowMs = manifest.window_s * 1000;
  const count = Math.floor(manifest.duration_s / manifest.window_s);
  const firstStartMs = nowMs - count * windowMs;
  const out: Batch[] = [];
  for (const rh of manifest.hosts) {
    const source = new ReplayGpuSource({
      scrapes: [...rh.scrapes.map((s) => s.parse.gpus), ...rh.captured.flatMap((c) => c.windows)],
      startMs: firstStartMs,
      windowMs,
      events: rh.kernel_logs.flatMap((log) => rebase(log.parse, log.lost, nowMs)),
    });
    const batches = await playBatches(
      { host: rh.host, agent: agentInfo(rh, opts.agentVersion), sources: [source] },
      {
        from: new Date(firstStartMs),
        to: opts.now,
        pollIntervalMs: opts.pollIntervalMs ?? 1000,
        flushIntervalS: manifest.window_s,
        ...(opts.horizonS === undefined ? {} : { horizonS: opts.horizonS }),
      },
    );
    out.push(...batches);
  }
  return out;
}

function agentInfo(rh: ReplayHost, version: string): Omit<AgentInfo, 'stats'> {
  const captured = rh.captured[0]?.agent;
  if (captured !== undefined) return { version, ...captured };
  const readings = rh.scrapes.flatMap((s) => s.parse.gpus);
  const profiling: ProfilingSource = readings.some((r) =>
    PROFILING_METRIC_NAMES.some((m) => r.metrics[m] !== undefined),
  )
    ? 'dcgm'
    : 'none';
  const driver = readings.find((r) => r.driver_version !== undefined)?.driver_version;
  return { version, profiling_source: profiling, ...(driver ? { driver_version: driver } : {}) };
}

function seconds(t: KernelLogTime): number {
  return t.kind === 'wall' ? t.epochMs / 1000 : t.sinceBootS;
}

/**
 * Re-bases a log's XIDs and `gpu_lost` lines so its last timed line lands at `nowMs`, keeping
 * relative offsets; events in log order (a `gpu_lost` line after the Xid line of the same time).
 */
function rebase(parse: KernelLogParse, lost: readonly GpuLostRecord[], nowMs: number): GpuEvent[] {
  const last = parse.lastTime;
  if (!last) return [];
  const oldestMs = nowMs - (MAX_PAST_S - PAST_MARGIN_S) * 1000;
  const at = (time: KernelLogTime | undefined): KernelLogTime | undefined => {
    if (!time || time.kind !== last.kind) return undefined;
    const atMs = nowMs - (seconds(last) - seconds(time)) * 1000;
    return atMs < oldestMs ? undefined : { kind: 'wall', epochMs: atMs };
  };
  const events: GpuEvent[] = [];
  for (const record of parse.records) {
    const time = at(record.time);
    const event = time ? toXidEvent({ ...record, time }) : undefined;
    if (event) events.push(event);
  }
  for (const record of lost) {
    const time = at(record.time);
    const event = time ? toGpuLostEvent({ ...record, time }) : undefined;
    if (event) events.push(event);
  }
  return events.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

function stripUndefined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
