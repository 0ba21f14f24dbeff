import type { Batch, Host } from '../lambdas/contract/schema';
import type { AgentLoop } from './agent-loop';
import { type Clock, systemClock } from './clock';
import { composeAgent } from './compose-agent';
import type { AgentConfig } from './config';
import { resolveIdentity } from './identity';
import { ImdsClient } from './identity/imds';
import { InstanceEventSource } from './identity/instance-event-source';
import { DEFAULT_KEEP_ALIVE_MS, HttpSender } from './send/sender';
import { DcgmProfilingSource } from './sources/dcgm-profiling';
import { EfaWindowSource } from './sources/efa-window-source';
import { KmsgSource } from './sources/kmsg-source';
import { NvmlEventSource } from './sources/nvml/nvml-event-source';
import { NvmlGpuSource } from './sources/nvml/nvml-gpu-source';
import { ProcessOwnerReader } from './sources/process-owner';
import type { AgentSource, SourceTimers } from './sources/source';
import type { SourceRegistry } from './sources/source-registry';

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
  /** The resolved agent configuration (`loadAgentConfig`). */
  readonly config: AgentConfig;
  /** `agent.version` of every batch. */
  readonly version: string;
  /** The agent's log. */
  readonly log: AgentLog;
  /**
   * The clock of the whole runtime, given to every part it builds (sources, loop, batcher, XID
   * merge, spool, SigV4 signing). @default systemClock
   */
  readonly clock?: Clock;
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
 * a trailing horizon, and durable delivery through the on-disk spool to the API (SigV4, gzip).
 * The sources are chosen here; the agent is built by {@link composeAgent}, as a playback's is.
 * `seq` continues above the highest the spool ever acknowledged (its append mark, kept even when
 * damage destroyed that batch), so a restart leaves no false gap and never reuses a lost number.
 *
 * @throws {NvmlUnavailableError} when the NVML library cannot be loaded or initialised
 * @throws {RangeError} when the identity cannot be resolved (IMDS off or down, no override)
 */
export async function startAgentRuntime(opts: AgentRuntimeOptions): Promise<AgentRuntime> {
  const { config, log } = opts;
  const clock = opts.clock ?? systemClock;
  const warn = (message: string, data?: Record<string, unknown>): void => log.warn(data ?? {}, message);

  const nvml = new NvmlGpuSource({ libraryPath: config.nvmlLibraryPath, logger: log });
  const dcgm =
    config.dcgmExporterUrl === 'off'
      ? undefined
      : new DcgmProfilingSource({
          url: config.dcgmExporterUrl,
          onWarning: warn,
          gpmActive: () => nvml.source.profilingSource() === 'gpm',
        });
  const profilingSource = (): 'gpm' | 'dcgm' | 'none' =>
    nvml.source.profilingSource() === 'gpm' ? 'gpm' : (dcgm?.profilingSource ?? 'none');
  const agent = await composeAgent({
    sources: agentSources(opts, nvml, dcgm),
    host: () => resolveAgentIdentity(opts),
    // A getter: the loop copies `agent` into each batch, so a change of profiling source shows at the next flush.
    agent: () => ({
      version: opts.version,
      ...nvml.source.versions(),
      get profiling_source() {
        return profilingSource();
      },
    }),
    clock,
    cadence: {
      pollIntervalMs: config.pollIntervalMs,
      flushIntervalS: config.flushIntervalS,
      sendIntervalS: config.sendIntervalS,
      horizonS: config.horizonS,
    },
    delivery: {
      kind: 'spool',
      spool: {
        dir: config.spoolDir,
        maxBytes: config.spoolMaxBytes,
        maxAgeS: Math.min(config.spoolMaxAgeS, 6 * 24 * 3600),
      },
      send: (host) => opts.send ?? httpSend(config, host, clock),
    },
    warn,
    ...(opts.timers ? { timers: opts.timers } : {}),
    // V8's gc() when node runs with --expose-gc (the systemd unit does; see AgentLoopOptions.collectGarbage).
    ...(typeof globalThis.gc === 'function' ? { collectGarbage: globalThis.gc } : {}),
    // NVML's pids are the host's: /proc here is the host's (a pod runs with hostPID: true).
    processOwners: new ProcessOwnerReader(),
  });
  const { loop, host, opened } = agent;

  for (const { name, support } of opened)
    if (!support.supported)
      log[support.level ?? 'info']({ source: name, reason: support.reason }, 'source not supported');
  log.info(
    {
      instance_id: host.instance_id,
      instance_type: host.instance_type,
      gpus: agent.sources.identity().length,
      profiling_source: profilingSource(),
      sources: opened.filter((o) => o.support.supported).map((o) => o.name),
      spooled: loop.pendingCount,
      next_seq: agent.nextSeq,
      ...nvml.source.versions(),
    },
    'agent started',
  );
  return {
    loop,
    host,
    get profilingSource() {
      return profilingSource();
    },
    sources: agent.sources,
    async run(signal) {
      agent.emit({
        at: clock().toISOString(),
        kind: 'agent_start',
        source: 'agent',
        detail: `gpu-sentinel agent ${opts.version}`,
      });
      signal.addEventListener(
        'abort',
        () => agent.emit({ at: clock().toISOString(), kind: 'agent_stop', source: 'agent' }),
        { once: true },
      );
      try {
        await loop.run(signal);
      } finally {
        await agent.close();
      }
      log.info({ pending: loop.pendingCount, ...loop.counters }, 'agent stopped');
    },
    close: () => agent.close(),
  };
}

/**
 * The host's send function: an `HttpSender` to the configured endpoint, SigV4 in the API's region
 * (the config's, else the host's), with few in-call retries (the spool is the retry: a dead API
 * must not hold a drain for minutes) and one kept-alive connection that outlives the send interval.
 */
function httpSend(config: AgentConfig, host: Host, clock: Clock): (batch: Batch) => Promise<unknown> {
  const http = new HttpSender({
    endpoint: config.endpoint ?? 'http://127.0.0.1:1',
    auth: config.auth,
    region: config.region ?? host.region,
    retries: 2,
    maxTimeoutMs: 5000,
    clock,
    keepAliveMs: Math.max(DEFAULT_KEEP_ALIVE_MS, (config.sendIntervalS + config.flushIntervalS) * 1000),
  });
  return (batch) => http.send(batch);
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
