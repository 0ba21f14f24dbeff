import { type AgentInfo, type Batch, type Host, MAX_FLUSH_WINDOW_S } from '../../lambdas/contract';
import { composeAgent } from '../compose-agent';
import { PlaybackOptionsError } from '../errors';
import type { AgentSource } from '../sources/source';
import { DEFAULT_HORIZON_S } from '../window/horizon';

/**
 * Playback: the agent as a host composes it (`composeAgent`: the source registry, flush windows,
 * trailing horizons, the XID merge, `BatchBuilder`), driven over a span of virtual time, so a
 * replayed capture or a simulated host produces exactly the batches a live agent would have sent:
 * the same windows, the same horizon statistics, the same urgent flush on a critical event. Its
 * delivery is memory (the caller posts the batches), with every batch a request of its own.
 */

/** Most polls one playback may take: 7 days at 1 Hz (the contract's past limit). */
const MAX_PLAYBACK_POLLS = 7 * 24 * 3600;

/** One host to play back: what the live agent would have as its identity and sources. */
export interface PlaybackHost {
  /** Contract identity of the host. */
  readonly host: Host;
  /** `agent` of its batches without `stats` (the loop counts them). */
  readonly agent: Omit<AgentInfo, 'stats'>;
  /**
   * Its sources, in poll order, as a host's: the GPU inventory source first (a simulation, a
   * replay), polled at each virtual instant (its readings carry events too), then any window source
   * (simulated EFA ports), closed at each flush.
   */
  readonly sources: readonly AgentSource[];
}

/** Options of {@link playBatches}. */
export interface PlaybackOptions {
  /** Virtual start: the loop's first window starts here. */
  readonly from: Date;
  /** Virtual end, after `from`: the last flush ends here (a final flush closes a partial window). */
  readonly to: Date;
  /** Poll interval, ms, 100..60,000 (the agent's `pollIntervalMs`). @default 1000 */
  readonly pollIntervalMs?: number;
  /** Flush window, s, ≥ the poll interval, ≤ 3600 (`MAX_FLUSH_WINDOW_S`; the agent's `flushIntervalS`). @default 10 */
  readonly flushIntervalS?: number;
  /** Trailing horizon, s, 1..3600 (the agent's `horizonS`). @default 900 */
  readonly horizonS?: number;
  /** First `seq` of the host's batches. @default 0 */
  readonly startSeq?: number;
  /** Makes `batch_id`s. @default crypto.randomUUID */
  readonly randomUUID?: () => string;
}

/**
 * Plays one host back over [from, to] on a virtual clock: poll every `pollIntervalMs`, flush every
 * `flushIntervalS` (at once after a poll that brought a critical event, as `AgentLoop.run` does),
 * and a final flush at `to`. `sent_at` of each batch is its flush time.
 *
 * @param host - identity, agent description, sources
 * @param options - span, cadence, horizon, first seq
 * @returns the batches in the order the agent would have sent them
 * @throws {PlaybackOptionsError} naming the option, when the span or a cadence is out of range
 * @example
 * const batches = await playBatches(simulatedHost, { from, to: now, flushIntervalS: 60 });
 */
export async function playBatches(host: PlaybackHost, options: PlaybackOptions): Promise<Batch[]> {
  const fromMs = options.from.getTime();
  const toMs = options.to.getTime();
  const pollMs = options.pollIntervalMs ?? 1000;
  const flushS = options.flushIntervalS ?? 10;
  const horizonS = options.horizonS ?? DEFAULT_HORIZON_S;
  if (!(toMs > fromMs)) throw new PlaybackOptionsError('to', 'a date after `from`', options.to);
  if (!Number.isInteger(pollMs) || pollMs < 100 || pollMs > 60_000)
    throw new PlaybackOptionsError('pollIntervalMs', 'an integer in 100..60000', pollMs);
  if (typeof flushS !== 'number' || !(flushS * 1000 >= pollMs && flushS <= MAX_FLUSH_WINDOW_S))
    throw new PlaybackOptionsError(
      'flushIntervalS',
      `a number in ${pollMs / 1000}..${MAX_FLUSH_WINDOW_S}`,
      flushS,
    );
  if ((toMs - fromMs) / pollMs > MAX_PLAYBACK_POLLS)
    throw new PlaybackOptionsError('to', `at most ${MAX_PLAYBACK_POLLS} polls after \`from\``, options.to);

  const clock = new VirtualClock(fromMs);
  const agent = await composeAgent({
    sources: host.sources,
    host: () => host.host,
    agent: () => host.agent,
    clock: clock.now,
    // Every batch is a request of its own (the caller posts them one by one): each carries its horizons.
    cadence: { pollIntervalMs: pollMs, flushIntervalS: flushS, sendIntervalS: 0, horizonS },
    delivery: { kind: 'memory', startSeq: options.startSeq ?? 0 },
    ...(options.randomUUID ? { randomUUID: options.randomUUID } : {}),
  });
  try {
    await driveLoop(agent.loop, clock, { fromMs, toMs, pollIntervalMs: pollMs, flushIntervalS: flushS });
  } finally {
    await agent.close();
  }
  return [...agent.batches];
}

/** A clock that stands still until moved: the time of a played-back agent. */
export class VirtualClock {
  #ms: number;

  /** @param startMs - the first time, ms since the epoch */
  constructor(startMs: number) {
    this.#ms = startMs;
  }

  /** The current virtual time (a new `Date` each call); bound, so it can be passed as a clock. */
  readonly now = (): Date => new Date(this.#ms);

  /** Moves the clock to `ms` (ms since the epoch). */
  set(ms: number): void {
    this.#ms = ms;
  }
}

/** What {@link driveLoop} needs of an agent loop. */
export interface DrivableLoop {
  /** One reading of every GPU; true when a critical event waits. */
  poll(): boolean;
  /** Closes the current window. */
  flush(): Promise<unknown>;
}

/** Span and cadence of {@link driveLoop}. */
export interface DriveOptions {
  /** Virtual start, ms (the loop's window started here). */
  readonly fromMs: number;
  /** Virtual end, ms. */
  readonly toMs: number;
  /** Poll interval, ms > 0. */
  readonly pollIntervalMs: number;
  /** Flush window, s > 0. */
  readonly flushIntervalS: number;
  /** Called at each virtual instant before the poll (moves simulated hardware, e.g. sysfs counters). @default none */
  readonly onTick?: (now: Date) => void;
}

/**
 * Drives an agent loop over virtual time as `AgentLoop.run` drives it over real time: move the
 * clock one poll interval, poll, flush when the interval is up or the poll brought a critical
 * event, and a final flush at `toMs` for a partial window. The caller validated the options.
 *
 * @param loop - the loop (its clock must be `clock.now`)
 * @param clock - the virtual clock, at `fromMs`
 * @param options - span, cadence, per-instant hook
 */
export async function driveLoop(
  loop: DrivableLoop,
  clock: VirtualClock,
  options: DriveOptions,
): Promise<void> {
  const { fromMs, toMs, pollIntervalMs } = options;
  let lastFlushMs = fromMs;
  for (let nowMs = fromMs + pollIntervalMs; nowMs <= toMs; nowMs += pollIntervalMs) {
    clock.set(nowMs);
    options.onTick?.(clock.now());
    const urgent = loop.poll();
    if (urgent || nowMs - lastFlushMs >= options.flushIntervalS * 1000) {
      await loop.flush();
      lastFlushMs = nowMs;
    }
  }
  clock.set(toMs);
  if (lastFlushMs < toMs) await loop.flush();
}
