import { existsSync, readFileSync } from 'node:fs';
import { type Batch, type GpuEvent, type Host, MAX_FUTURE_S, MAX_PAST_S } from '../lambdas/contract';
import { AgentLoop, type DeliveryLike } from './agent-loop';
import type { AgentConfig } from './config';
import { resolveIdentity } from './identity';
import { ImdsClient } from './identity/imds';
import { InstanceEventPoller } from './identity/instance-events';
import { BatchBuilder } from './send/batcher';
import { DEFAULT_KEEP_ALIVE_MS, HttpSender } from './send/sender';
import { DcgmProfilingSource } from './sources/dcgm-profiling';
import { EfaSource } from './sources/efa';
import { bootTimeFromProcStat, KmsgFollower } from './sources/kmsg-follower';
import { NvmlEventWatcher, NvmlSource } from './sources/nvml';
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
  /** `gpm`, `dcgm` or `none`: where `sm_active` and the other profiling counters come from. */
  readonly profilingSource: 'gpm' | 'dcgm' | 'none';
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
  /** The clock. @default () => new Date() */
  readonly clock?: () => Date;
  /** Identity to use when IMDS is off and the config has no complete override (diagnosis runs). */
  readonly fallbackHost?: Host;
  /** Send function override (tests). @default an `HttpSender` from the config */
  readonly send?: (batch: Batch) => Promise<unknown>;
  /** `/proc/stat` path, for the boot time of raw kernel-log records. @default '/proc/stat' */
  readonly procStatPath?: string;
  /** IMDS base URL (tests). @default http://169.254.169.254 */
  readonly imdsBaseUrl?: string;
}

/**
 * Longest wait of one NVML event-set call, and the kernel-log poll interval, ms: 1 s, the top of the
 * 0.5–1 s the reference advises (a pool thread is held at most this long; fewer wake-ups per second).
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
  const clock = opts.clock ?? (() => new Date());
  const warn = (message: string, data?: Record<string, unknown>): void => log.warn(data ?? {}, message);

  const nvml = NvmlSource.open({ libraryPath: config.nvmlLibraryPath, logger: log });
  const stoppers: Array<() => Promise<void> | void> = [() => nvml.close()];
  try {
    const host = await resolveAgentIdentity(opts);
    let profilingSource: 'gpm' | 'dcgm' | 'none' = nvml.profilingSource();
    let profiling: DcgmProfilingSource | undefined;
    if (profilingSource === 'none' && config.dcgmExporterUrl !== 'off') {
      const dcgm = new DcgmProfilingSource({ url: config.dcgmExporterUrl, onWarning: warn });
      if (await dcgm.probe()) {
        profiling = dcgm;
        profilingSource = 'dcgm';
      }
    }

    const spool = await Spool.open({
      dir: config.spoolDir,
      maxBytes: config.spoolMaxBytes,
      maxAgeS: Math.min(config.spoolMaxAgeS, 6 * 24 * 3600),
      onWarning: warn,
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

    const efaRoot = config.efaRoot;
    const efa =
      efaRoot !== 'off' && existsSync(efaRoot)
        ? new EfaSource({ root: efaRoot, clock, onWarning: warn })
        : undefined;

    const loop = new AgentLoop({
      source: nvml,
      host,
      agent: { version: opts.version, ...nvml.versions(), profiling_source: profilingSource },
      builder,
      delivery,
      horizon: new HorizonTracker({ horizonS: config.horizonS }),
      ...(efa ? { efa } : {}),
      ...(profiling ? { profiling } : {}),
      xidMerger: new XidMerger({ clock }),
      pollIntervalMs: config.pollIntervalMs,
      flushIntervalS: config.flushIntervalS,
      sendIntervalS: config.sendIntervalS,
      clock,
      onWarning: warn,
    });

    // Warm-up reading: GPM needs a baseline sample, and GPUs lost at open report in the first sample.
    const warmUp = nvml.sample(clock());
    // Events older than the API accepts (a kernel log holds history since boot) would get the whole
    // batch refused: they are dropped here, counted, and said once.
    let tooOld = 0;
    const push = (event: GpuEvent): void => {
      const t = Date.parse(event.at);
      const now = clock().getTime();
      if (t < now - (MAX_PAST_S - 3600) * 1000 || t > now + MAX_FUTURE_S * 1000) {
        if (tooOld++ === 0)
          warn('event outside the API time window dropped', { kind: event.kind, at: event.at });
        return;
      }
      loop.pushEvent(event);
    };

    for (const e of warmUp.events) push(e);
    const watcher = tryStart(
      () =>
        NvmlEventWatcher.start({
          libraryPath: config.nvmlLibraryPath,
          onEvent: push,
          clock,
          logger: log,
          waitTimeoutMs: EVENT_WAIT_MS,
        }),
      warn,
      'NVML XID events unavailable; the kernel log is the only XID source',
    );
    if (watcher) stoppers.push(() => watcher.stop());

    if (config.kmsgPath !== 'off') {
      const bootTime = readBootTime(opts.procStatPath ?? '/proc/stat');
      if (bootTime) {
        const follower = new KmsgFollower({
          path: config.kmsgPath,
          bootTime,
          onXid: push,
          onWarning: warn,
          pollIntervalMs: EVENT_WAIT_MS,
        });
        if (await follower.start()) stoppers.push(() => follower.stop());
      } else {
        warn('boot time unknown (/proc/stat btime); kernel-log XIDs off', {});
      }
    }

    if (config.imds === 'on') {
      const poller = new InstanceEventPoller({
        imds: new ImdsClient(opts.imdsBaseUrl ? { baseUrl: opts.imdsBaseUrl } : {}),
        clock,
        onEvent: push,
        onWarning: warn,
      });
      const timer = setInterval(() => void poller.poll(), INSTANCE_EVENT_POLL_MS);
      timer.unref();
      stoppers.push(() => clearInterval(timer));
    }

    log.info(
      {
        instance_id: host.instance_id,
        instance_type: host.instance_type,
        gpus: nvml.identity().length,
        profiling_source: profilingSource,
        efa: efa !== undefined,
        spooled: spool.stats().batches,
        next_seq: builder.nextSeq,
        ...nvml.versions(),
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
      profilingSource,
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

function readBootTime(path: string): Date | undefined {
  try {
    return bootTimeFromProcStat(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function tryStart<T>(
  start: () => T,
  warn: (m: string, d?: Record<string, unknown>) => void,
  message: string,
): T | undefined {
  try {
    return start();
  } catch (err) {
    warn(message, { error: (err as Error).message });
    return undefined;
  }
}
