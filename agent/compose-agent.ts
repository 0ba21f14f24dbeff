import { MAX_FUTURE_S, MAX_PAST_S } from '../lambdas/contract/constants';
import type { AgentInfo, Batch, GpuEvent, Host } from '../lambdas/contract/schema';
import { AgentLoop, type DeliveryLike, type ProcessOwnersLike } from './agent-loop';
import type { Clock } from './clock';
import { BatchBuilder } from './send/batcher';
import { MemorySink } from './send/memory-sink';
import type { AgentSource, SourceTimers } from './sources/source';
import { type OpenedSource, SourceRegistry } from './sources/source-registry';
import { XidMerger } from './sources/xid-merge';
import { Spool } from './spool/spool';
import type { SpoolOptions } from './spool/spool-options';
import { SpoolingSender } from './spool/spooling-sender';
import { DEFAULT_HORIZON_S, HorizonTracker } from './window/horizon';

/**
 * The agent's one composition root: sources → registry → loop (windows, horizon, XID merge) →
 * batcher → delivery (the spool and its sender on a host; memory in a playback or `--once`). A host
 * (`startAgentRuntime`), a diagnosis run (`gpu-sentinel agent --once`) and a playback (a replayed
 * capture, a simulated fleet: `playBatches`) all build their agent here, so what a playback sends
 * is what a host would have sent, built by the same parts.
 */

/** How often the composed agent polls, flushes and sends, and the span of its horizon. */
export interface AgentCadence {
  /** Poll interval, ms (the agent's `pollIntervalMs`). @default 1000 */
  readonly pollIntervalMs?: number;
  /** Flush window, s (the agent's `flushIntervalS`). @default 10 */
  readonly flushIntervalS?: number;
  /**
   * Kept windows are delivered this often, s, ≥ 0; 0 delivers after every flush (and every batch
   * then carries its horizons). @default `DEFAULT_SEND_INTERVAL_S` (60)
   */
  readonly sendIntervalS?: number;
  /** Trailing horizon, s, 1..3600 (the agent's `horizonS`). @default {@link DEFAULT_HORIZON_S} (900) */
  readonly horizonS?: number;
}

/** Delivery through the on-disk spool, as a host delivers: kept as each window closes, sent every send interval. */
export interface SpoolDelivery {
  readonly kind: 'spool';
  /** The spool's folder and bounds; its clock and warnings are the composition's. */
  readonly spool: Omit<SpoolOptions, 'clock' | 'onWarning'>;
  /**
   * The send function for the resolved host (the API's region may come from it): delivers one
   * (merged) batch, resolves on a 2xx, throws `SendRejectedError` when the API refused it, anything
   * else when it could not be delivered now (it stays spooled).
   */
  readonly send: (host: Host) => (batch: Batch) => Promise<unknown>;
}

/** Delivery into memory, for a playback or a diagnosis run: every batch kept in {@link ComposedAgent.batches}, nothing sent. */
export interface MemoryDelivery {
  readonly kind: 'memory';
  /** `seq` of the first batch, ≥ 0. @default 0 */
  readonly startSeq?: number;
}

/** Where the composed agent's closed windows go. */
export type AgentDelivery = SpoolDelivery | MemoryDelivery;

/** What {@link composeAgent} builds an agent from. */
export interface ComposeAgentOptions {
  /**
   * The sources, in poll order: the GPU inventory source first (NVML on a host; a simulation or a
   * replay in a playback), then those that overlay its readings, report events or close windows.
   */
  readonly sources: readonly AgentSource[];
  /** The host's identity, resolved once the sources are open (on a host: IMDSv2 and the overrides). */
  readonly host: () => Host | Promise<Host>;
  /**
   * `agent` of every batch, without `stats` (the loop counts them); called once, after the sources
   * opened (NVML's versions are known then). A getter in it is read at each flush.
   */
  readonly agent: () => Omit<AgentInfo, 'stats'>;
  /**
   * The one clock of everything built here: the sources (through their context), the loop, the
   * batcher, the XID merge, the spool. A host passes the wall clock, a playback its virtual one.
   */
  readonly clock: Clock;
  /** Poll, flush and send intervals and the horizon. @default each the agent's default */
  readonly cadence?: AgentCadence;
  /** Where closed windows go. */
  readonly delivery: AgentDelivery;
  /** Makes `batch_id`s. @default crypto.randomUUID */
  readonly randomUUID?: () => string;
  /** Once-per-condition warnings an operator can act on. @default none */
  readonly warn?: (message: string, data?: Record<string, unknown>) => void;
  /** Interval timers of the sources. @default the global ones, unref'd */
  readonly timers?: SourceTimers;
  /** A full garbage collection the loop runs when idle (see `AgentLoopOptions.collectGarbage`). @default none */
  readonly collectGarbage?: () => void;
  /**
   * Finds each window's process owners from their cgroups (`ProcessOwnerReader` on a host; a
   * playback's pids are not the host's, so it passes none). @default none
   */
  readonly processOwners?: ProcessOwnersLike;
}

/** An agent {@link composeAgent} built: its loop, its sources, and what stops them. */
export interface ComposedAgent {
  /** The run loop: `run(signal)` on a host; `poll()`/`flush()` driven by a playback. */
  readonly loop: AgentLoop;
  /** The sources and what each answered at open. */
  readonly sources: SourceRegistry;
  /** Every source's answer at open, in order. */
  readonly opened: readonly OpenedSource[];
  /** The resolved identity. */
  readonly host: Host;
  /** Every batch built, in order, with memory delivery; empty with a spool (the batches are on disk). */
  readonly batches: readonly Batch[];
  /** `seq` of the next batch. */
  readonly nextSeq: number;
  /**
   * Reports an event as a source does (the runtime's `agent_start`, `agent_stop`): one outside
   * the time window the API accepts is dropped, counted and said once.
   */
  emit(event: GpuEvent): void;
  /** Closes the spool, then stops every source (reverse order). A failure is warned; the rest still close. Idempotent. */
  close(): Promise<void>;
}

/**
 * Builds an agent: opens the sources (an unsupported one is left out with its reason; events they
 * report before the loop exists wait for it), resolves the host, opens the delivery (with a spool,
 * `seq` continues from the last batch it saw, so a restart leaves no false gap), and builds the loop
 * with its horizon, its XID merge (NVML and the kernel log report one fault once) and its batcher,
 * all on the given clock. Events a source reports outside the time window the API accepts (a kernel
 * log holds history since boot) are dropped, counted and said once: they would get the whole batch
 * refused.
 *
 * @param options - sources, identity, agent description, clock, cadence, delivery
 * @returns the agent, its sources open; `close()` it when done
 * @throws what a required source throws at open (`NvmlUnavailableError`), what `host` throws, and a
 *   spool's errors (`RangeError` for a bound out of range, the fs error); what was opened is closed
 * @example
 * const agent = await composeAgent({ sources: [gpus], host: () => host, agent: () => info,
 *   clock: virtual.now, cadence: { sendIntervalS: 0 }, delivery: { kind: 'memory' } });
 * agent.loop.poll();
 * await agent.loop.flush();
 * await agent.close(); // agent.batches: what it would have sent
 */
export async function composeAgent(options: ComposeAgentOptions): Promise<ComposedAgent> {
  const { clock } = options;
  const warn = options.warn ?? (() => undefined);
  const cadence = options.cadence ?? {};
  const sources = new SourceRegistry(options.sources);
  // Events that arrive before the loop exists (a warm-up reading, kernel-log history) wait here.
  const early: GpuEvent[] = [];
  let push = (event: GpuEvent): void => void early.push(event);
  const opened = await sources.open({
    clock,
    emit: (e) => push(e),
    warn,
    ...(options.timers ? { timers: options.timers } : {}),
  });
  const stoppers: Array<() => Promise<void> | void> = [
    () =>
      sources.close((name, err) =>
        warn('error while stopping a source', { source: name, error: String(err) }),
      ),
  ];
  try {
    const host = await options.host();
    let delivery: DeliveryLike;
    let startSeq: number;
    let batches: readonly Batch[] = [];
    if (options.delivery.kind === 'spool') {
      const spool = await Spool.open({ ...options.delivery.spool, clock, onWarning: warn });
      stoppers.push(() => spool.close());
      const sender = new SpoolingSender({ spool, send: options.delivery.send(host), onWarning: warn });
      delivery = {
        submit: (b) => sender.append(b),
        drain: () => sender.drain(),
        takeDroppedEvent: (now) => sender.takeDroppedEvent(now),
        pending: () => spool.stats().batches,
      };
      const lastSeq = spool.stats().last_seq;
      startSeq = lastSeq === undefined ? 0 : lastSeq + 1;
    } else {
      const sink = new MemorySink();
      delivery = sink;
      batches = sink.submitted;
      startSeq = options.delivery.startSeq ?? 0;
    }
    const builder = new BatchBuilder({
      clock,
      startSeq,
      ...(options.randomUUID ? { randomUUID: options.randomUUID } : {}),
    });
    const pollIntervalMs = cadence.pollIntervalMs ?? 1000;
    const loop = new AgentLoop({
      sources,
      host,
      agent: options.agent(),
      builder,
      delivery,
      horizon: new HorizonTracker({
        horizonS: cadence.horizonS ?? DEFAULT_HORIZON_S,
        sampleIntervalMs: pollIntervalMs,
      }),
      xidMerger: new XidMerger({ clock }),
      pollIntervalMs,
      ...(cadence.flushIntervalS === undefined ? {} : { flushIntervalS: cadence.flushIntervalS }),
      ...(cadence.sendIntervalS === undefined ? {} : { sendIntervalS: cadence.sendIntervalS }),
      ...(options.collectGarbage ? { collectGarbage: options.collectGarbage } : {}),
      ...(options.processOwners ? { processOwners: options.processOwners } : {}),
      clock,
      onWarning: warn,
    });

    let outside = 0;
    push = (event: GpuEvent): void => {
      const t = Date.parse(event.at);
      const now = clock().getTime();
      if (t < now - (MAX_PAST_S - 3600) * 1000 || t > now + MAX_FUTURE_S * 1000) {
        if (outside++ === 0)
          warn('event outside the API time window dropped', { kind: event.kind, at: event.at });
        return;
      }
      loop.pushEvent(event);
    };
    for (const event of early.splice(0)) push(event);

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
      sources,
      opened,
      host,
      batches,
      get nextSeq() {
        return builder.nextSeq;
      },
      emit: (event) => push(event),
      close,
    };
  } catch (err) {
    for (const stop of stoppers.reverse()) await stop();
    throw err;
  }
}
