import type { AgentInfo, Batch, Host } from '../../lambdas/contract';
import { AgentLoop, type EfaLike, type SampleSource } from '../agent-loop';
import { PlaybackOptionsError } from '../errors';
import { BatchBuilder } from '../send/batcher';
import { DEFAULT_HORIZON_S, HorizonTracker } from '../window/horizon';

/**
 * Playback: drives the agent's own run loop (`AgentLoop`: flush windows through `aggregateWindow`,
 * trailing horizons through `HorizonTracker`, EFA deltas, events, `BatchBuilder`) over a span of
 * virtual time, so a replayed capture or a simulated host produces exactly the batches a live
 * agent would have sent: the same windows, the same horizon statistics, the same urgent flush on
 * a critical event. The one implementation of "samples → batches" outside the live agent.
 */

/** Most polls one playback may take: 7 days at 1 Hz (the contract's past limit). */
const MAX_PLAYBACK_POLLS = 7 * 24 * 3600;

/** One host to play back: what the live agent would have as its identity and sources. */
export interface PlaybackHost {
  /** Contract identity of the host. */
  readonly host: Host;
  /** `agent` of its batches without `stats` (the loop counts them). */
  readonly agent: Omit<AgentInfo, 'stats'>;
  /** The GPU source, polled at each virtual instant (its readings carry events too). */
  readonly source: SampleSource;
  /** EFA counter windows, sampled at each flush as the agent does. @default none */
  readonly efa?: EfaLike;
}

/** Options of {@link playBatches}. */
export interface PlaybackOptions {
  /** Virtual start: the loop's first window starts here. */
  readonly from: Date;
  /** Virtual end, after `from`: the last flush ends here (a final flush closes a partial window). */
  readonly to: Date;
  /** Poll interval, ms, 100..60,000 (the agent's `pollIntervalMs`). @default 1000 */
  readonly pollIntervalMs?: number;
  /** Flush window, s, ≥ the poll interval, ≤ 3600 (the agent's `flushIntervalS`). @default 10 */
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
 * @param host - identity, agent description, GPU source, optional EFA source
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
  if (typeof flushS !== 'number' || !(flushS * 1000 >= pollMs && flushS <= 3600))
    throw new PlaybackOptionsError('flushIntervalS', `a number in ${pollMs / 1000}..3600`, flushS);
  if ((toMs - fromMs) / pollMs > MAX_PLAYBACK_POLLS)
    throw new PlaybackOptionsError('to', `at most ${MAX_PLAYBACK_POLLS} polls after \`from\``, options.to);

  let nowMs = fromMs;
  const clock = (): Date => new Date(nowMs);
  const batches: Batch[] = [];
  const loop = new AgentLoop({
    source: host.source,
    host: host.host,
    agent: host.agent,
    builder: new BatchBuilder({
      clock,
      startSeq: options.startSeq ?? 0,
      ...(options.randomUUID ? { randomUUID: options.randomUUID } : {}),
    }),
    send: async (batch) => {
      batches.push(batch);
    },
    horizon: new HorizonTracker({ horizonS }),
    ...(host.efa ? { efa: host.efa } : {}),
    pollIntervalMs: pollMs,
    flushIntervalS: flushS,
    clock,
  });
  let lastFlushMs = fromMs;
  for (nowMs = fromMs + pollMs; nowMs <= toMs; nowMs += pollMs) {
    const urgent = loop.poll();
    if (urgent || nowMs - lastFlushMs >= flushS * 1000) {
      await loop.flush();
      lastFlushMs = nowMs;
    }
  }
  nowMs = toMs;
  if (lastFlushMs < toMs) await loop.flush();
  return batches;
}
