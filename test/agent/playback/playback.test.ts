import { describe, expect, it } from 'vitest';
import { PlaybackOptionsError } from '../../../agent/errors';
import { type PlaybackHost, playBatches } from '../../../agent/playback/playback';
import type { AgentSource } from '../../../agent/sources/source';
import { type GpuEvent, type GpuIdentity, parseBatch } from '../../../lambdas/contract';
import { fakeGpuSource } from '../fixtures/agent-sources';

const FROM = new Date('2026-11-21T10:00:00.000Z');
const minutes = (n: number) => new Date(FROM.getTime() + n * 60_000);
const GPUS: GpuIdentity[] = [
  { index: 0, uuid: 'GPU-aaaa', pci_bus_id: '0000:53:00.0' },
  { index: 1, uuid: 'GPU-bbbb', pci_bus_id: '0000:64:00.0' },
];

/** Two GPUs; GPU 1's SM activity steps from 0.2 to 0.8 after 10 minutes; `events` due by time. */
function source(events: GpuEvent[] = []): AgentSource {
  const queue = [...events];
  return fakeGpuSource({
    gpus: GPUS,
    read: (now) => {
      const late = now.getTime() - FROM.getTime() > 600_000;
      const due: GpuEvent[] = [];
      while (queue.length > 0 && Date.parse(queue[0]?.at ?? '') <= now.getTime())
        due.push(queue.shift() as GpuEvent);
      return {
        gpus: GPUS.map((g) => ({
          gpu_index: g.index,
          at_ms: now.getTime(),
          gpu_util: 1,
          sm_active: g.index === 1 && late ? 0.8 : 0.2,
          power_w: 300,
        })),
        events: due,
      };
    },
  });
}

function host(src: AgentSource = source()): PlaybackHost {
  return {
    host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
    agent: { version: '0.1.0', profiling_source: 'gpm' },
    sources: [src],
  };
}

describe('playBatches', () => {
  it('flushes on the cadence with one flush and one trailing horizon window per GPU, each batch valid', async () => {
    // Prepare / Act
    const batches = await playBatches(host(), { from: FROM, to: minutes(20), flushIntervalS: 60 });

    // Assess
    expect(batches).toHaveLength(20);
    expect(batches.map((b) => b.seq)).toEqual(batches.map((_, i) => i));
    for (const b of batches) {
      expect(() => parseBatch(JSON.parse(JSON.stringify(b)), minutes(20))).not.toThrow();
      expect(b.windows.map((w) => `${w.kind}:${w.gpu.index}`)).toEqual([
        'flush:0',
        'horizon:0',
        'flush:1',
        'horizon:1',
      ]);
      expect(b.sent_at).toBe(b.windows[0]?.end);
    }
    const last = batches.at(-1);
    expect(last?.windows[0]).toMatchObject({
      start: minutes(19).toISOString(),
      end: minutes(20).toISOString(),
    });
    expect(last?.windows[3]).toMatchObject({
      start: minutes(5).toISOString(),
      end: minutes(20).toISOString(),
    });
    expect(last?.agent.stats).toEqual({ samples: 1200, spooled: 0, dropped: 0, nvml_errors: 0 });
  });

  it('summarises the horizon from every sample of the trailing 15 minutes, as the agent does', async () => {
    // Prepare / Act
    const batches = await playBatches(host(), { from: FROM, to: minutes(20), flushIntervalS: 60 });
    const horizon = batches.at(-1)?.windows.find((w) => w.kind === 'horizon' && w.gpu.index === 1);

    // Assess: 300 samples at 0.2 (minutes 5..10) and 600 at 0.8 (minutes 10..20), one at minute 5 itself
    expect(horizon?.metrics.sm_active).toBeCloseTo((301 * 0.2 + 600 * 0.8) / 901, 9);
    expect(horizon?.metrics.min_sm_active).toBe(0.2);
    expect(horizon?.metrics.max_sm_active).toBe(0.8);
  });

  it('flushes at once after a poll that brought a critical event, as AgentLoop.run does', async () => {
    // Prepare
    const xid: GpuEvent = {
      at: '2026-11-21T10:00:30.500Z',
      kind: 'xid',
      xid: 79,
      source: 'nvml',
      gpu_index: 0,
    };

    // Act
    const batches = await playBatches(host(source([xid])), {
      from: FROM,
      to: minutes(2),
      flushIntervalS: 60,
    });

    // Assess
    expect(batches.map((b) => b.sent_at)).toEqual([
      '2026-11-21T10:00:31.000Z',
      '2026-11-21T10:01:31.000Z',
      '2026-11-21T10:02:00.000Z',
    ]);
    expect(batches[0]?.events).toEqual([xid]);
    expect(batches.slice(1).every((b) => b.events === undefined)).toBe(true);
  });

  it('closes a partial last window at `to`', async () => {
    // Prepare / Act
    const batches = await playBatches(host(), {
      from: FROM,
      to: new Date(FROM.getTime() + 90_000),
      flushIntervalS: 60,
    });

    // Assess
    expect(batches.map((b) => [b.windows[0]?.start, b.windows[0]?.end])).toEqual([
      ['2026-11-21T10:00:00.000Z', '2026-11-21T10:01:00.000Z'],
      ['2026-11-21T10:01:00.000Z', '2026-11-21T10:01:30.000Z'],
    ]);
  });

  it.each([
    ['to not after from', { to: FROM }, 'to'],
    ['a poll interval below 100 ms', { pollIntervalMs: 50 }, 'pollIntervalMs'],
    ['a fractional poll interval', { pollIntervalMs: 1000.5 }, 'pollIntervalMs'],
    ['a flush shorter than a poll', { pollIntervalMs: 5000, flushIntervalS: 1 }, 'flushIntervalS'],
    ['a flush over an hour', { flushIntervalS: 3601 }, 'flushIntervalS'],
    ['a span of more than 7 days of polls', { to: new Date(FROM.getTime() + 8 * 86_400_000) }, 'to'],
  ])('throws PlaybackOptionsError naming the option for %s', async (_case, override, option) => {
    // Prepare
    const options = { from: FROM, to: minutes(1), ...override };

    // Act
    const error = await playBatches(host(), options).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(PlaybackOptionsError);
    expect((error as PlaybackOptionsError).option).toBe(option);
    expect((error as Error).message).toMatch(new RegExp(`^Expected \`${option}\``));
  });
});
