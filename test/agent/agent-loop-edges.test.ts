import { describe, expect, it } from 'vitest';
import { AgentLoop } from '../../agent/agent-loop';
import { BatchBuilder } from '../../agent/send/batcher';
import { MemorySink } from '../../agent/send/memory-sink';
import type { AgentSource, SampleSink } from '../../agent/sources/source';
import { GpuRow } from '../../agent/window/gpu-row';
import type { GpuSample } from '../../agent/window/gpu-sample';
import { EDGE_COLUMNS, EDGE_FIELDS, WindowEdges } from '../../agent/window/window-edges';
import type { GpuEvent, GpuIdentity, GpuWindow } from '../../lambdas/contract';
import { openSources } from './fixtures/agent-sources';

const HOST = {
  instance_id: 'i-0a5e00000000000a1',
  instance_type: 'p5.48xlarge',
  region: 'us-east-1',
} as const;
const AGENT = { version: '0.1.0', profiling_source: 'gpm' as const };
const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const GPUS: GpuIdentity[] = [{ index: 0 }, { index: 1 }];

/** Seconds since T0. */
const sec = (atMs: number): number => (atMs - T0) / 1000;
/** Energy counter, mJ: a power that climbs 6 W a second, so no two windows hold the same energy. */
const energyMj = (s: number): number => 1e9 + 150_000 * s + 3000 * s * s;
/** Power-cap violation time, µs: a quarter of the wall time. */
const violationUs = (s: number): number => 250_000 * s;
/** Corrected ECC errors: one every 7 s, the 3rd at 21 s, the second after a window closes. */
const eccSbe = (s: number): number => Math.floor(s / 7);
/** NVLink bytes sent: 1 GB/s. */
const nvlinkTx = (s: number): number => 1e12 + 1e9 * s;

/** What the test source does at a poll. */
interface Knobs {
  /** Polls (s since T0) at which a call fails (one error written). */
  readonly failAt?: readonly number[];
  /** Polls (s since T0) at which GPU 1 does not answer. */
  readonly gpu1SilentAt?: readonly number[];
  /** Polls (s since T0) that bring a critical event. */
  readonly xidAt?: readonly number[];
}

/**
 * Two GPUs whose instant readings are a function of the poll time and whose cumulative counters
 * (every one of `EDGE_FIELDS` it has) are read only when the loop asks for a full reading, as
 * NVML's edge rows are; `everyPoll` reads them at every poll instead (the reference).
 */
function counterSource(knobs: Knobs = {}, everyPoll = false): AgentSource & { asked: boolean[] } {
  const asked: boolean[] = [];
  return {
    asked,
    name: 'counters',
    open: () => ({ supported: true }),
    identity: () => GPUS,
    sample: (into: SampleSink, now: Date, full = true) => {
      asked.push(full);
      const s = sec(now.getTime());
      for (const { index } of GPUS) {
        if (index === 1 && knobs.gpu1SilentAt?.includes(s)) continue;
        const instant: GpuSample = {
          gpu_index: index,
          at_ms: now.getTime(),
          gpu_util: ((s * 7 + index) % 10) / 10,
          power_w: 150 + 6 * s,
          gpu_temp_c: 40 + (s % 5),
          sm_clock_mhz: 1980 - (s % 3) * 100,
          fb_used_bytes: 1e9 + s * 1e6,
          pcie_rx_bytes_total: 1e9 + s * s * 1e6,
          compute_processes: s % 2,
        };
        const edges: Partial<GpuSample> =
          full || everyPoll
            ? {
                energy_mj_total: energyMj(s),
                power_violation_us_total: violationUs(s),
                ecc_sbe_volatile: eccSbe(s),
                ecc_dbe_volatile: 0,
                nvlink_tx_bytes_total: nvlinkTx(s),
                pcie_tx_bytes_total: 5e9 + s * 2e6,
                pcie_replay_count: 40 + Math.floor(s / 11),
                nvlink_crc_errors: index,
                power_limit_w: 700,
                remapped_rows_pending: s >= 25,
              }
            : {};
        into.gpu({ ...instant, ...edges });
      }
      if (knobs.failAt?.includes(s)) into.error(new Error(`a call failed at ${s} s`));
      if (knobs.xidAt?.includes(s)) {
        const event: GpuEvent = { at: now.toISOString(), kind: 'xid', xid: 79, source: 'nvml', gpu_index: 0 };
        into.event(event);
      }
    },
    close: () => {},
  };
}

/** A loop on `source`, 1 s polls, 10 s windows, driven by hand over a clock it owns. */
async function loopOn(
  source: AgentSource,
): Promise<{ loop: AgentLoop; clock: { set: (s: number) => void } }> {
  let t = T0;
  const now = (): Date => new Date(t);
  const loop = new AgentLoop({
    sources: await openSources([source], now),
    host: HOST,
    agent: AGENT,
    builder: new BatchBuilder({ clock: now }),
    delivery: new MemorySink(),
    clock: now,
    flushIntervalS: 10,
    sendIntervalS: 3600,
  });
  return { loop, clock: { set: (s) => (t = T0 + s * 1000) } };
}

/**
 * Drives the loop as `AgentLoop.run` does, one poll a second from 1 s to `untilS`: flush when the
 * poll closed the window (10 s) or brought a critical event.
 * @returns the flush windows, in order
 */
async function drive(
  loop: AgentLoop,
  clock: { set: (s: number) => void },
  untilS: number,
): Promise<GpuWindow[]> {
  const windows: GpuWindow[] = [];
  let windowStartS = 0;
  for (let s = 1; s <= untilS; s++) {
    clock.set(s);
    const urgent = loop.poll();
    if (urgent || s - windowStartS >= 10) {
      for (const batch of await loop.flush())
        windows.push(...batch.windows.filter((w) => w.kind === 'flush'));
      windowStartS = s;
    }
  }
  return windows;
}

/** The polls (s since T0, 1 s apart from 1 s) that asked for a full reading. */
const fullPolls = (asked: readonly boolean[]): number[] => asked.flatMap((full, i) => (full ? [i + 1] : []));

/** The flush windows of GPU `index`. */
const ofGpu = (windows: readonly GpuWindow[], index: number): GpuWindow[] =>
  windows.filter((w) => w.gpu.index === index);

describe('AgentLoop window edges', () => {
  it('reads the edges once per window, at its closing poll, which also opens the next window', async () => {
    // Prepare
    const source = counterSource();
    const { loop, clock } = await loopOn(source);

    // Act: three 10 s windows
    await drive(loop, clock, 30);

    // Assess: the first poll after start reads the opening edge, then only each closing poll: the
    // edge columns are read once per window (they were read twice, at its first poll and its last)
    expect(fullPolls(source.asked)).toEqual([1, 10, 20, 30]);
    expect(source.asked).toHaveLength(30);
  });

  it('gives each window the counters’ growth from the closing poll before it to its own, so windows add up with nothing lost between them', async () => {
    // Prepare
    const edges = await loopOn(counterSource());
    const reference = await loopOn(counterSource({}, true));

    // Act
    const windows = ofGpu(await drive(edges.loop, edges.clock, 30), 0);
    const everyPoll = ofGpu(await drive(reference.loop, reference.clock, 30), 0);

    // Assess: window k (k = 2, 3) spans the closing polls at 10(k−1) s and 10k s
    expect(windows).toHaveLength(3);
    const closes = [1, 10, 20, 30];
    windows.forEach((window, k) => {
      const [from, to] = [closes[k] as number, closes[k + 1] as number];
      const spanS = to - from;
      expect(window.metrics.energy_j).toBeCloseTo((energyMj(to) - energyMj(from)) / 1000, 9);
      expect(window.metrics.power_w).toBeCloseTo((energyMj(to) - energyMj(from)) / 1000 / spanS, 9);
      expect(window.metrics.ecc_sbe_volatile_delta).toBe(eccSbe(to) - eccSbe(from));
      expect(window.metrics.pcie_replay_delta).toBe(Math.floor(to / 11) - Math.floor(from / 11));
      expect(window.metrics.power_throttle_ratio).toBeCloseTo(0.25, 12);
      expect(window.metrics.nvlink_tx_bytes_per_s).toBeCloseTo(1e9, 3);
      expect(window.metrics.pcie_tx_bytes_per_s).toBeCloseTo(2e6, 6);
    });
    const sum = (name: 'energy_j' | 'ecc_sbe_volatile_delta'): number =>
      windows.reduce((total, w) => total + (w.metrics[name] ?? 0), 0);
    expect(sum('energy_j')).toBeCloseTo((energyMj(30) - energyMj(1)) / 1000, 6);
    expect(sum('ecc_sbe_volatile_delta')).toBe(eccSbe(30) - eccSbe(1));
    // Every metric, instant or not, is the one a source reading every column at every poll gives.
    windows.forEach((window, k) => {
      const reference = everyPoll[k]!.metrics;
      expect(window.metrics).toEqual(reference);
    });
    expect(windows.map((w) => w.metrics.remapped_rows_pending)).toEqual([false, false, true]);
  });

  it.each<{ gap: string; knobs: Knobs; asked: number[]; deltaFrom: (number | undefined)[] }>([
    {
      gap: 'a call failed at the closing poll',
      knobs: { failAt: [10] },
      asked: [1, 10, 11, 20, 30],
      deltaFrom: [1, 11, 20],
    },
    {
      gap: 'GPU 1 did not answer at the closing poll',
      knobs: { gpu1SilentAt: [10] },
      asked: [1, 10, 11, 20, 30],
      deltaFrom: [undefined, 11, 20],
    },
    {
      gap: 'a critical event closed the window early',
      knobs: { xidAt: [15] },
      asked: [1, 10, 16, 25],
      deltaFrom: [1, undefined, 16],
    },
    {
      gap: 'GPU 1 answered nothing at the first poll and came back inside the window',
      knobs: { gpu1SilentAt: [10, 11, 12] },
      asked: [1, 10, 11, 20, 30],
      deltaFrom: [undefined, undefined, 20],
    },
    {
      gap: 'GPU 1 was silent for a whole window: the others do not read their edges twice for it',
      knobs: { gpu1SilentAt: [11, 12, 13, 14, 15, 16, 17, 18, 19, 20] },
      asked: [1, 10, 20, 30],
      deltaFrom: [1, undefined],
    },
  ])(
    'reads the opening edge at the next first poll after a gap ($gap), and takes no delta across it',
    async ({ knobs, asked, deltaFrom }) => {
      // Prepare
      const source = counterSource(knobs);
      const { loop, clock } = await loopOn(source);

      // Act
      const windows = ofGpu(await drive(loop, clock, 30), 1);

      // Assess: which polls were full (s), and where GPU 1's energy delta starts in each window
      expect(fullPolls(source.asked)).toEqual(asked);
      expect(windows).toHaveLength(deltaFrom.length);
      windows.forEach((window, k) => {
        const from = deltaFrom[k];
        const to = Date.parse(window.end) / 1000 - T0 / 1000;
        if (from === undefined) expect(window.metrics).not.toHaveProperty('energy_j');
        else expect(window.metrics.energy_j).toBeCloseTo((energyMj(to) - energyMj(from)) / 1000, 9);
      });
    },
  );

  it('makes no window of a GPU from the kept edge alone (a flush with no poll since the last)', async () => {
    // Prepare
    const { loop, clock } = await loopOn(counterSource());
    await drive(loop, clock, 10);

    // Act: a critical event wakes the loop, which flushes without a poll
    clock.set(10.5);
    loop.pushEvent({
      at: new Date(T0 + 10_500).toISOString(),
      kind: 'xid',
      xid: 79,
      source: 'kmsg',
      gpu_index: 0,
    });
    const batches = await loop.flush();

    // Assess
    expect(batches.flatMap((b) => b.windows)).toEqual([]);
    expect(batches.flatMap((b) => b.events ?? []).map((e) => e.kind)).toEqual(['xid']);
  });
});

describe('WindowEdges', () => {
  it('keeps a closing reading’s edge columns only, with its time, and reuses its rows', () => {
    // Prepare
    const edges = new WindowEdges();
    const row = new GpuRow(3);
    row.reset(T0);
    row.values.fill(7);

    // Act
    edges.keep(row);
    const kept = edges.opening(3);
    row.values.fill(8);

    // Assess
    expect(kept?.atMs).toBe(T0);
    expect(kept?.gpuIndex).toBe(3);
    expect(
      [...(kept?.values ?? [])].map((v, c) => (EDGE_COLUMNS.includes(c) ? v === 7 : Number.isNaN(v))),
    ).not.toContain(false);
    expect(EDGE_FIELDS).not.toContain('pcie_rx_bytes_total'); // max_pcie_rx_bytes_per_s needs every poll
    edges.clear();
    expect(edges.has(3)).toBe(false);
    edges.keep(row);
    expect(edges.opening(3)).toBe(kept);
  });
});
