import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentLoop, type AgentLoopOptions, type DeliveryLike } from '../../agent/agent-loop';
import { systemClock } from '../../agent/clock';
import { SendFailedError } from '../../agent/errors';
import { BatchBuilder } from '../../agent/send/batcher';
import { MemorySink } from '../../agent/send/memory-sink';
import type { AgentSource } from '../../agent/sources/source';
import { type Batch, type GpuEvent, type GpuIdentity, parseBatch } from '../../lambdas/contract';
import { fakeGpuSource, fakeWindowSource, openSources } from './fixtures/agent-sources';

const HOST = {
  instance_id: 'i-0a5e00000000000a1',
  instance_type: 'p5.48xlarge',
  region: 'us-east-1',
} as const;
const AGENT = { version: '0.1.0', profiling_source: 'gpm' as const };
const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const GPUS: GpuIdentity[] = [
  { index: 0, uuid: 'GPU-aaaa', pci_bus_id: '0000:53:00.0' },
  { index: 1, uuid: 'GPU-bbbb', pci_bus_id: '0000:64:00.0' },
];

/** A clock the test moves by hand. */
function manualClock(): { now: () => Date; advance: (ms: number) => void } {
  let t = T0;
  return { now: () => new Date(t), advance: (ms) => (t += ms) };
}

/** Two GPUs reading fixed values; `asked` notes each poll's `full`. */
function fakeSource(
  options: Pick<Parameters<typeof fakeGpuSource>[0], 'workload'> = {},
): AgentSource & { asked: boolean[] } {
  const asked: boolean[] = [];
  const source = fakeGpuSource({
    gpus: GPUS,
    read: (now, full) => {
      asked.push(full);
      return {
        gpus: GPUS.map((g) => ({ gpu_index: g.index, at_ms: now.getTime(), gpu_util: 0.5, power_w: 100 })),
      };
    },
    ...options,
  });
  return { ...source, asked };
}

/** What a test replaces of {@link manualLoop}'s defaults: `sources` (opened on the test's clock) and any loop option. */
type LoopOverrides = Partial<Omit<AgentLoopOptions, 'sources'>> & {
  readonly sources?: readonly AgentSource[];
};

/** A loop on the fake source with a hand-moved clock; `options` add to or replace the defaults. */
async function manualLoop(clock: ReturnType<typeof manualClock>, options: LoopOverrides): Promise<AgentLoop> {
  const { sources = [fakeSource()], ...rest } = options;
  return new AgentLoop({
    sources: await openSources(sources, clock.now),
    host: HOST,
    agent: AGENT,
    builder: new BatchBuilder({ clock: clock.now }),
    delivery: new MemorySink(),
    clock: clock.now,
    ...rest,
  });
}

function xid(code: number, source: 'nvml' | 'kmsg', atMs: number): GpuEvent {
  return { at: new Date(atMs).toISOString(), kind: 'xid', xid: code, source, pci_bus_id: '0000:53:00.0' };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('AgentLoop', () => {
  it('asks for a full reading at the first poll after start and at each poll that closes a window, a partial one between', async () => {
    // Prepare
    const clock = manualClock();
    const source = fakeSource();
    const asked = source.asked;
    const loop = await manualLoop(clock, { flushIntervalS: 5, sources: [source] });
    const controller = new AbortController();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });

    // Act: 1 s polls over two 5 s windows, driven by the loop itself
    const running = loop.run(controller.signal);
    for (let i = 0; i < 10; i++) {
      clock.advance(1000);
      await vi.advanceTimersByTimeAsync(1000);
    }
    controller.abort();
    await vi.advanceTimersByTimeAsync(1000);
    await running;

    // Assess
    // The closing poll of the first window also opens the second (agent-loop-edges.test.ts).
    expect(asked).toEqual([true, false, false, false, true, false, false, false, false, true]);
  });

  it('aggregates each GPU into one flush window per flush, in contract-valid batches', async () => {
    // Prepare
    const clock = manualClock();
    const sink = new MemorySink();
    const sent = sink.submitted;
    const loop = await manualLoop(clock, { delivery: sink });
    // Act: 10 polls 1 s apart, then a flush
    for (let i = 0; i < 10; i++) {
      loop.poll();
      clock.advance(1000);
    }
    const batches = await loop.flush();
    // Assess
    expect(sent).toEqual(batches);
    expect(batches).toHaveLength(1);
    const batch = parseBatch(JSON.parse(JSON.stringify(batches[0])), clock.now());
    expect(batch.windows.map((w) => [w.kind, w.gpu.index])).toEqual([
      ['flush', 0],
      ['flush', 1],
    ]);
    expect(batch.windows[0]!.metrics).toMatchObject({ gpu_util: 0.5, power_w: 100 });
    expect(batch.agent.stats).toMatchObject({ samples: 10, nvml_errors: 0 });
  });

  it('adds EFA deltas to every window and a horizon window per GPU only to the batch that goes out', async () => {
    // Prepare
    const clock = manualClock();
    const efaCalls: string[] = [];
    const loop = await manualLoop(clock, {
      sendIntervalS: 20,
      horizon: {
        add: () => {},
        addRow: () => {},
        window: (gpu, end) => ({
          kind: 'horizon',
          start: new Date(end.getTime() - 900_000).toISOString(),
          end: end.toISOString(),
          gpu,
          metrics: { power_cv: 0.4 },
        }),
      },
      sources: [
        fakeSource(),
        fakeWindowSource(
          (start, end) => {
            efaCalls.push(end.toISOString());
            return [
              {
                start: start.toISOString(),
                end: end.toISOString(),
                device: 'rdmap79s0',
                port: 1,
                deltas: { rx_drops: 3 },
              },
            ];
          },
          (now) => efaCalls.push(now.toISOString()),
        ),
      ],
    });
    // Act: a kept window at 10 s, the send at 20 s
    loop.poll();
    clock.advance(10_000);
    const [kept] = await loop.flush();
    loop.poll();
    clock.advance(10_000);
    const [sent] = await loop.flush();
    // Assess
    expect(kept!.windows.map((w) => w.kind)).toEqual(['flush', 'flush']);
    expect(sent!.windows.map((w) => w.kind)).toEqual(['flush', 'horizon', 'flush', 'horizon']);
    for (const batch of [kept, sent])
      expect(batch!.efa).toEqual([expect.objectContaining({ device: 'rdmap79s0', deltas: { rx_drops: 3 } })]);
    expect(efaCalls).toHaveLength(3); // once at start, once per flush: EFA is read per window, not per second
  });

  it('drops an XID seen by both NVML and the kernel log, keeps every occurrence of one source', async () => {
    // Prepare
    const clock = manualClock();
    const { XidMerger } = await import('../../agent/sources/xid-merge');
    const loop = await manualLoop(clock, {
      xidMerger: new XidMerger({ clock: clock.now }),
    });
    // Act
    loop.pushEvent(xid(48, 'nvml', T0));
    loop.pushEvent(xid(48, 'kmsg', T0 + 300));
    loop.pushEvent(xid(13, 'kmsg', T0 + 400));
    loop.pushEvent(xid(13, 'kmsg', T0 + 400));
    clock.advance(1000);
    const [batch] = await loop.flush();
    // Assess
    expect(batch!.events!.map((e) => `${e.xid}:${e.source}`)).toEqual(['48:nvml', '13:kmsg', '13:kmsg']);
  });

  it('flushes at once on a critical event while running', async () => {
    // Prepare: a 1 h flush interval, so only the event can trigger a flush before the abort
    const sent: Batch[] = [];
    const loop = new AgentLoop({
      sources: await openSources([fakeSource()], systemClock),
      host: HOST,
      agent: AGENT,
      builder: new BatchBuilder(),
      delivery: new MemorySink(async (b) => sent.push(b)),
      pollIntervalMs: 20,
      flushIntervalS: 3600,
      clock: systemClock,
    });
    const controller = new AbortController();
    const running = loop.run(controller.signal);
    // Act
    loop.pushEvent({ at: new Date().toISOString(), kind: 'gpu_lost', source: 'nvml', gpu_index: 1 });
    while (sent.length === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await running;
    // Assess
    expect(sent[0]!.events).toEqual([expect.objectContaining({ kind: 'gpu_lost', gpu_index: 1 })]);
  });

  it('reports a critical event from poll() until a flush sends it, for a caller driving the loop by hand', async () => {
    // Prepare
    const clock = manualClock();
    const loop = await manualLoop(clock, {});
    // Act
    loop.pushEvent(xid(79, 'nvml', T0));
    clock.advance(1000);
    const before = loop.poll();
    await loop.flush();
    clock.advance(1000);
    const after = loop.poll();
    // Assess
    expect([before, after]).toEqual([true, false]);
  });

  it.each([
    { sendIntervalS: 60, flushesBeforeSend: 6 },
    { sendIntervalS: 30, flushesBeforeSend: 3 },
    { sendIntervalS: 0, flushesBeforeSend: 1 },
  ])(
    'keeps each 10 s window as it closes and sends every $sendIntervalS s, in one request',
    async ({ sendIntervalS, flushesBeforeSend }) => {
      // Prepare
      const clock = manualClock();
      const requests: Batch[] = [];
      const sink = new MemorySink(async (b) => requests.push(b));
      const loop = await manualLoop(clock, { delivery: sink, sendIntervalS });
      // Act: flush every 10 s; note how many windows were delivered after each flush
      const seen: number[] = [];
      for (let i = 0; i < flushesBeforeSend; i++) {
        loop.poll();
        clock.advance(10_000);
        await loop.flush();
        await loop.settle();
        seen.push(requests.flatMap((r) => r.windows).length);
      }
      // Assess: every window kept at once, none sent before the interval, all sent at it, in order
      expect(sink.submitted).toHaveLength(flushesBeforeSend);
      expect(seen).toEqual([...Array(flushesBeforeSend - 1).fill(0), flushesBeforeSend * 2]);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.windows.map((w) => (Date.parse(w.end) - T0) / 1000)).toEqual(
        [...Array(flushesBeforeSend).keys()].flatMap((i) => [(i + 1) * 10, (i + 1) * 10]),
      );
    },
  );

  it('collects garbage after a finished send at most every collectGarbageEveryS, never during one', async () => {
    // Prepare: a send every 60 s, a collection due every 300 s; note whether a drain ran at each call
    const clock = manualClock();
    const collectedAt: number[] = [];
    let draining = false;
    const sink = new MemorySink(async () => {
      draining = true;
      await new Promise((r) => setTimeout(r, 1));
      draining = false;
    });
    const loop = await manualLoop(clock, {
      delivery: sink,
      collectGarbage: () => collectedAt.push((clock.now().getTime() - T0) / 1000 + (draining ? 0.5 : 0)),
      collectGarbageEveryS: 300,
    });

    // Act: 15 minutes of 10 s windows
    for (let i = 0; i < 90; i++) {
      loop.poll();
      clock.advance(10_000);
      await loop.flush();
      await loop.settle();
    }

    // Assess: at the first send at or after each 300 s, after its request went out
    expect(collectedAt).toEqual([300, 600, 900]);
  });

  it('throws a RangeError naming collectGarbageEveryS below 1 s', async () => {
    // Prepare
    const clock = manualClock();

    // Act / Assess
    await expect(manualLoop(clock, { collectGarbageEveryS: 0 })).rejects.toThrow(
      /`collectGarbageEveryS` to be a number >= 1/,
    );
  });

  it.each(['xid', 'ecc_dbe', 'gpu_lost', 'remap_failure', 'spot_interruption'] as const)(
    'sends at once, before the send interval, a flush that carries a critical %s event',
    async (kind) => {
      // Prepare
      const clock = manualClock();
      const requests: Batch[] = [];
      const loop = await manualLoop(clock, { delivery: new MemorySink(async (b) => requests.push(b)) });
      loop.poll();
      clock.advance(10_000);
      await loop.flush();
      await loop.settle();
      const before = requests.length;
      // Act
      loop.pushEvent({ at: clock.now().toISOString(), kind, source: 'agent', gpu_index: 0 });
      clock.advance(1000);
      await loop.flush();
      await loop.settle();
      // Assess: the earlier window goes with it
      expect(before).toBe(0);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.windows).toHaveLength(2);
      expect(requests[0]!.events).toEqual([expect.objectContaining({ kind })]);
    },
  );

  it('keeps what delivery could not send and sends it, in order, at the next send interval', async () => {
    // Prepare
    const clock = manualClock();
    const requests: Batch[] = [];
    let down = true;
    const warnings: string[] = [];
    const sink = new MemorySink(async (b) => {
      if (down) throw new SendFailedError(b.batch_id, 1, { lastStatus: 503 });
      requests.push(b);
    });
    const loop = await manualLoop(clock, {
      delivery: sink,
      sendIntervalS: 10,
      onWarning: (m) => warnings.push(m),
    });
    // Act
    for (let i = 0; i < 3; i++) {
      loop.poll();
      clock.advance(10_000);
      await loop.flush();
      await loop.settle();
    }
    const whileDown = loop.pendingCount;
    down = false;
    loop.poll();
    clock.advance(10_000);
    await loop.flush();
    await loop.settle();
    // Assess
    expect(whileDown).toBe(3);
    expect(requests.flatMap((r) => r.windows.map((w) => (Date.parse(w.end) - T0) / 1000))).toEqual([
      10, 10, 20, 20, 30, 30, 40, 40,
    ]);
    expect(loop.pendingCount).toBe(0);
    expect(warnings[0]).toMatch(/delivery failed/);
  });

  it.each([-1, Number.NaN])('refuses a sendIntervalS of %s, naming it', async (sendIntervalS) => {
    await expect(manualLoop(manualClock(), { sendIntervalS })).rejects.toThrow(/sendIntervalS/);
  });

  it('appends batches to durable delivery, then drains it in the background, and reports spool drops as a data_dropped event', async () => {
    // Prepare
    const clock = manualClock();
    const calls: string[] = [];
    const submitted: Batch[] = [];
    const delivery: DeliveryLike = {
      drain: async () => calls.push('drain'),
      submit: async (b) => {
        calls.push('submit');
        submitted.push(b);
      },
      takeDroppedEvent: (now) => ({ at: now.toISOString(), kind: 'data_dropped', source: 'agent', count: 7 }),
      pending: () => 0,
    };
    const loop = await manualLoop(clock, {
      delivery,
      sendIntervalS: 10,
    });
    // Act
    loop.poll();
    clock.advance(10_000);
    await loop.flush();
    await loop.settle();
    // Assess
    expect(calls).toEqual(['submit', 'drain']);
    expect(submitted[0]!.events).toEqual([expect.objectContaining({ kind: 'data_dropped', count: 7 })]);
  });

  it('copies the pod holding a GPU at the window end into its flush window, and only there', async () => {
    // Prepare
    const clock = manualClock();
    const loop = await manualLoop(clock, {
      sources: [
        fakeSource({
          workload: (gpu) => (gpu.uuid === 'GPU-aaaa' ? { namespace: 'ml', pod: 'train-0' } : undefined),
        }),
      ],
      sendIntervalS: 0, // this flush goes out, so it carries horizons too
      horizon: { add: () => {}, addRow: () => {}, window: (gpu, end) => ({ ...horizonOf(gpu, end) }) },
    });
    loop.poll();
    clock.advance(1000);

    // Act
    const [batch] = await loop.flush();

    // Assess
    const windows = parseBatch(JSON.parse(JSON.stringify(batch)), clock.now()).windows;
    expect(windows.map((w) => [w.kind, w.gpu.index, w.k8s])).toEqual([
      ['flush', 0, { namespace: 'ml', pod: 'train-0' }],
      ['horizon', 0, undefined],
      ['flush', 1, undefined],
      ['horizon', 1, undefined],
    ]);
  });
});

/** A minimal horizon window of `gpu` ending at `end`. */
function horizonOf(gpu: GpuIdentity, end: Date) {
  return {
    kind: 'horizon' as const,
    start: new Date(end.getTime() - 60_000).toISOString(),
    end: end.toISOString(),
    gpu,
    metrics: { gpu_util: 0.5 },
  };
}
