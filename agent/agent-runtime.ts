import { MAX_FUTURE_S, MAX_PAST_S } from '../lambdas/contract/constants';
import type { Batch, GpuEvent, Host } from '../lambdas/contract/schema';
import { AgentLoop, type DeliveryLike } from './agent-loop';
import { systemClock } from './clock';
import type { AgentConfig } from './config';
import { resolveIdentity } from './identity';
import { ImdsClient } from './identity/imds';
import { InstanceEventSource } from './identity/instance-event-source';
import { BatchBuilder } from './send/batcher';
import { DEFAULT_KEEP_ALIVE_MS, HttpSender } from './send/sender';
import { DcgmProfilingSource } from './sources/dcgm-profiling';
import { EfaWindowSource } from './sources/efa-window-source';
import { KmsgSource } from './sources/kmsg-source';
import { NvmlEventSource } from './sources/nvml/nvml-event-source';
import { NvmlGpuSource } from './sources/nvml/nvml-gpu-source';
import type { AgentSource, SourceTimers } from './sources/source';
import { SourceRegistry } from './sources/source-registry';
import { XidMerger } from './sources/xid-merge';
import { Spool, SpoolingSender } from './spool';
import { HorizonTracker } from './window/horizon';

/** Structured agent log (pino's shape): one line per condition, never per sample. */
export interface AgentLog {
  info(data: Record<string, unknown>, message: string): void;
  warn(data: Record<string, unknown>, message: string): void;
  error(data: Record<string, unknown>, message: string): void;
}

/** A running agent: its loop and everything that must be stopped with it. */
export interface AgentRuntime {
  readonly loop: AgentLoop;
  readonly host: Host;
  /**
   * `gpm`, `dcgm` or `none`: where `sm_active` and the other profiling counters come from now
   * (a dcgm-exporter that comes up late or goes away changes it; each change is an event).
   */
  readonly profilingSource: 'gpm' | 'dcgm' | 'none';
  /** The sources and what each answered at open (supported, or the reason not). */
  readonly sources: SourceRegistry;
  /** Runs until `signal` aborts, then flushes, spools what is unsent and stops every source. */
  run(signal: AbortSignal): Promise<void>;
  /** Stops every source without running (for `--once`). */
  close(): Promise<void>;
}

/** Options of {@link startAgentRuntime} beyond the config. */
export interface AgentRuntimeOptions {
  readonly config: AgentConfig;
  readonly version: string;
  readonly log: AgentLog;
  /** The clock. @default systemClock */
  readonly clock?: () => Date;
  /** Identity to use when IMDS is off and the config has no complete override (diagnosis runs). */
  readonly fallbackHost?: Host;
  /** Send function override (tests). @default an `HttpSender` from the config */
  readonly send?: (batch: Batch) => Promise<unknown>;
  /** `/proc/stat` path, for the boot time of raw kernel-log records. @default '/proc/stat' */
  readonly procStatPath?: string;
  /** IMDS base URL (tests). @default http://169.254.169.254 */
  readonly imdsBaseUrl?: string;
  /** Interval timers of the sources (tests). @default the global ones, unref'd */
  readonly timers?: SourceTimers;
}

/**
 * Longest gap between two looks at the NVML event set, ms: 1 s. At the default poll interval (1 s)
 * and faster, each poll drains the events the driver holds (a zero-timeout `nvmlEventSetWait_v2`
 * on the poll's own tick: no pool thread, no extra wake-up; a background wait with a 1 s timeout
 * cost ≈ 0.2 ms of CPU a second, a fifth of the agent's budget). With a slower poll a background
 * wait with this timeout keeps XIDs at most 1 s late.
 */
export const EVENT_WAIT_MS = 1000;

/** IMDS spot/rebalance notices are polled on this interval, ms (a spot notice comes ~2 min ahead). */
export const INSTANCE_EVENT_POLL_MS = 5000;

/**
 * Starts the host agent from a resolved configuration (docs/design.md §10): NVML (with GPM where the GPU
 * has it, else DCGM profiling from a local dcgm-exporter if one answers, else none), NVML XID
 * events and the kernel log merged without doubles, EFA counters, IMDS identity and spot notices,
 * a trailing horizon, and durable delivery through the on-disk spool. `seq` continues from the
 * last batch the spool saw, so a restart leaves no false gap.
 *
 * @throws {NvmlUnavailableError} when the NVML library cannot be loaded or initialised
 * @throws {RangeError} when the identity cannot be resolved (IMDS off or down, no override)
 */
export async function startAgentRuntime(opts: AgentRuntimeOptions): Promise<AgentRuntime> {
  const { config, log } = opts;
  const clock = opts.clock ?? systemClock;
  const warn = (message: string, data?: Record<string, unknown>): void => log.warn(data ?? {}, message);

  const nvml = new NvmlGpuSource({ libraryPath: config.nvmlLibraryPath, logger: log, clock });
  const dcgm =
    config.dcgmExporterUrl === 'off'
      ? undefined
      : new DcgmProfilingSource({
          url: config.dcgmExporterUrl,
          onWarning: warn,
          gpmActive: () => nvml.source.profilingSource() === 'gpm',
        });
  const sources = new SourceRegistry(agentSources(opts, nvml, dcgm));
  // Events that arrive before the loop exists (warm-up reading, kernel-log history) wait here.
  const early: GpuEvent[] = [];
  let push = (event: GpuEvent): void => void early.push(event);
  const opened = await sources.open({
    clock,
    emit: (e) => push(e),
    warn,
    ...(opts.timers ? { timers: opts.timers } : {}),
  });
  const stoppers: Array<() => Promise<void> | void> = [
    () =>
      sources.close((name, err) =>
        warn('error while stopping a source', { source: name, error: String(err) }),
      ),
  ];
  try {
    const host = await resolveAgentIdentity(opts);
    const profilingSource = (): 'gpm' | 'dcgm' | 'none' =>
      nvml.source.profilingSource() === 'gpm' ? 'gpm' : (dcgm?.profilingSource ?? 'none');

    const spool = await Spool.open({
      dir: config.spoolDir,
      maxBytes: config.spoolMaxBytes,
      maxAgeS: Math.min(config.spoolMaxAgeS, 6 * 24 * 3600),
      onWarning: warn,
      clock,
    });
    stoppers.push(() => spool.close());
    const http = new HttpSender({
      endpoint: config.endpoint ?? 'http://127.0.0.1:1',
      auth: config.auth,
      region: config.region ?? host.region,
      // Few in-call retries: the spool is the retry; a dead API must not hold a drain for minutes.
      retries: 2,
      maxTimeoutMs: 5000,
      // One connection for every send: idle sockets outlive the send interval.
      clock,
      keepAliveMs: Math.max(DEFAULT_KEEP_ALIVE_MS, (config.sendIntervalS + config.flushIntervalS) * 1000),
    });
    const sender = new SpoolingSender({ spool, send: opts.send ?? ((b) => http.send(b)), onWarning: warn });
    const delivery: DeliveryLike = {
      submit: (b) => sender.append(b),
      drain: () => sender.drain(),
      takeDroppedEvent: (now) => sender.takeDroppedEvent(now),
      pending: () => spool.stats().batches,
    };
    const lastSeq = spool.stats().last_seq;
    const builder = new BatchBuilder({ startSeq: lastSeq === undefined ? 0 : lastSeq + 1, clock });

    const versions = nvml.source.versions();
    const loop = new AgentLoop({
      source: sources,
      host,
      // A getter: the loop copies `agent` into each batch, so a change of profiling source shows at the next flush.
      agent: {
        version: opts.version,
        ...versions,
        get profiling_source() {
          return profilingSource();
        },
      },
      builder,
      delivery,
      horizon: new HorizonTracker({ horizonS: config.horizonS, sampleIntervalMs: config.pollIntervalMs }),
      efa: sources.efa,
      xidMerger: new XidMerger({ clock }),
      pollIntervalMs: config.pollIntervalMs,
      flushIntervalS: config.flushIntervalS,
      sendIntervalS: config.sendIntervalS,
      // V8's gc() when node runs with --expose-gc (the systemd unit does; see AgentLoopOptions.collectGarbage).
      collectGarbage: typeof globalThis.gc === 'function' ? globalThis.gc : undefined,
      clock,
      onWarning: warn,
    });

    // Events older than the API accepts (a kernel log holds history since boot) would get the whole
    // batch refused: they are dropped here, counted, and said once.
    let tooOld = 0;
    push = (event: GpuEvent): void => {
      const t = Date.parse(event.at);
      const now = clock().getTime();
      if (t < now - (MAX_PAST_S - 3600) * 1000 || t > now + MAX_FUTURE_S * 1000) {
        if (tooOld++ === 0)
          warn('event outside the API time window dropped', { kind: event.kind, at: event.at });
        return;
      }
      loop.pushEvent(event);
    };
    for (const event of early.splice(0)) push(event);

    for (const { name, support } of opened)
      if (!support.supported)
        log[support.level ?? 'info']({ source: name, reason: support.reason }, 'source not supported');
    log.info(
      {
        instance_id: host.instance_id,
        instance_type: host.instance_type,
        gpus: sources.identity().length,
        profiling_source: profilingSource(),
        sources: opened.filter((o) => o.support.supported).map((o) => o.name),
        spooled: spool.stats().batches,
        next_seq: builder.nextSeq,
        ...versions,
      },
      'agent started',
    );
    const close = async (): Promise<void> => {
      for (const stop of stoppers.reverse()) {
        try {
          await stop();
        } catch (err) {
          warn('error while stopping', { error: (err as Error).message });
        }
      }
      stoppers.length = 0;
    };
    return {
      loop,
      host,
      get profilingSource() {
        return profilingSource();
      },
      sources,
      async run(signal) {
        push({
          at: clock().toISOString(),
          kind: 'agent_start',
          source: 'agent',
          detail: `gpu-sentinel agent ${opts.version}`,
        });
        signal.addEventListener(
          'abort',
          () => push({ at: clock().toISOString(), kind: 'agent_stop', source: 'agent' }),
          { once: true },
        );
        try {
          await loop.run(signal);
        } finally {
          await close();
        }
        log.info({ pending: loop.pendingCount, ...loop.counters }, 'agent stopped');
      },
      close,
    };
  } catch (err) {
    for (const stop of stoppers.reverse()) await stop();
    throw err;
  }
}

/**
 * The agent's sources from the configuration, in poll order: NVML (the GPU inventory; required),
 * the local dcgm-exporter (profiling where GPM is absent, and Kubernetes pod labels), NVML XID
 * events, the kernel log, IMDS notices, EFA counters. A source the configuration turns `off` is
 * not built; one the host lacks says so at open.
 */
function agentSources(
  opts: AgentRuntimeOptions,
  nvml: NvmlGpuSource,
  dcgm: DcgmProfilingSource | undefined,
): AgentSource[] {
  const { config, log } = opts;
  const sources: AgentSource[] = [nvml];
  if (dcgm) sources.push(dcgm);
  sources.push(
    new NvmlEventSource({
      libraryPath: config.nvmlLibraryPath,
      logger: log,
      waitTimeoutMs: config.pollIntervalMs <= EVENT_WAIT_MS ? 0 : EVENT_WAIT_MS,
    }),
  );
  if (config.kmsgPath !== 'off')
    sources.push(
      new KmsgSource({
        path: config.kmsgPath,
        ...(opts.procStatPath ? { procStatPath: opts.procStatPath } : {}),
      }),
    );
  if (config.imds === 'on')
    sources.push(
      new InstanceEventSource({
        imds: new ImdsClient(opts.imdsBaseUrl ? { baseUrl: opts.imdsBaseUrl } : {}),
        pollIntervalMs: INSTANCE_EVENT_POLL_MS,
      }),
    );
  if (config.efaRoot !== 'off') sources.push(new EfaWindowSource(config.efaRoot));
  return sources;
}

/**
 * The host identity from the configuration: the overrides (`instanceId`, `instanceType`, `region`,
 * `az`) on top of IMDSv2, or on top of `fallbackHost` when IMDS is off or does not answer.
 *
 * @throws {RangeError} when IMDS is off or down and no complete identity is given
 */
export async function resolveAgentIdentity(
  opts: Pick<AgentRuntimeOptions, 'config' | 'log' | 'fallbackHost' | 'imdsBaseUrl'>,
): Promise<Host> {
  const { config } = opts;
  const override: Partial<Host> = {};
  if (config.instanceId) override.instance_id = config.instanceId;
  if (config.instanceType) override.instance_type = config.instanceType;
  if (config.region) override.region = config.region;
  if (config.az) override.az = config.az;
  if (config.imds === 'off') {
    const merged = { ...opts.fallbackHost, ...override };
    if (!merged.instance_id || !merged.instance_type || !merged.region) {
      throw new RangeError(
        'Expected `instanceId`, `instanceType` and `region` when `imds` is off, got an incomplete identity',
      );
    }
    return merged as Host;
  }
  try {
    return await resolveIdentity({
      override,
      ...(opts.imdsBaseUrl ? { imdsBaseUrl: opts.imdsBaseUrl } : {}),
    });
  } catch (err) {
    if (opts.fallbackHost) {
      opts.log.warn({ error: (err as Error).message }, 'IMDS unavailable; using the fallback identity');
      return { ...opts.fallbackHost, ...override };
    }
    throw err;
  }
}
