import { describe, expect, it } from 'vitest';
import { PlaybackOptionsError } from '../../../agent/errors';
import { DueEvents } from '../../../agent/playback/due-events';
import { playBatches } from '../../../agent/playback/playback';
import { SimulatedGpuSource, type SimulatedGpuSourceOptions } from '../../../agent/playback/simulate';
import { BEHAVIOURS, type Behaviour } from '../../../agent/playback/simulate-behaviours';
import { SimulatedEfa } from '../../../agent/playback/simulate-efa';
import {
  DEFAULT_SIMULATED_FLEET,
  SIMULATED_INSTANCE_ID_PREFIX,
  SIMULATED_TAG,
  simulatedPlaybackHost,
} from '../../../agent/playback/simulate-fleet';
import { NODE_TIMERS } from '../../../agent/sources/source';
import type { GpuSample } from '../../../agent/window/gpu-sample';
import {
  type GpuEvent,
  GpuIdentitySchema,
  PROFILING_METRIC_NAMES,
  parseBatch,
} from '../../../lambdas/contract';
import { sampleOnce, windowOnce } from '../fixtures/agent-sources';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');

/** A simulated H100 host starting at T0, one idle GPU and seed 1 unless `options` say otherwise. */
const simulated = (options: Partial<SimulatedGpuSourceOptions> = {}) =>
  new SimulatedGpuSource({ model: 'h100', gpus: ['idle'], seed: 1, startMs: T0, ...options });

/** `n` readings one second apart from T0 + 1 s. */
function readings(options: Partial<SimulatedGpuSourceOptions> & { gpus: readonly Behaviour[] }, n: number) {
  const source = simulated({ seed: 7, ...options });
  return Array.from({ length: n }, (_, i) => sampleOnce(source, new Date(T0 + (i + 1) * 1000)));
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const column = (rs: ReturnType<typeof readings>, key: keyof GpuSample, gpu = 0) =>
  rs.map((r) => r.gpus[gpu]?.[key] as number);

describe('SimulatedGpuSource', () => {
  it('gives the same samples for the same seed and different ones for another', () => {
    // Prepare / Act
    const a = readings({ gpus: ['compute_bound'] }, 30);
    const b = readings({ gpus: ['compute_bound'] }, 30);
    const c = readings({ gpus: ['compute_bound'], seed: 8 }, 30);

    // Assess
    expect(a).toEqual(b);
    expect(column(a, 'sm_active')).not.toEqual(column(c, 'sm_active'));
  });

  it.each<[Behaviour, Partial<Record<keyof GpuSample, [number, number]>>]>([
    ['compute_bound', { sm_active: [0.83, 0.89], tensor_active: [0.55, 0.61], gpu_util: [0.98, 1] }],
    ['idle', { sm_active: [0, 0], compute_processes: [0, 0], gpu_util: [0, 0] }],
    ['held_idle', { sm_active: [0, 0], compute_processes: [1, 1] }],
    ['fake_load', { gpu_util: [1, 1], sm_active: [0.017, 0.023] }],
    ['cpu_bound', { sm_active: [0.17, 0.19] }],
    ['low_occupancy', { sm_active: [0.53, 0.57], sm_occupancy: [0.09, 0.11] }],
    ['tensor_idle', { sm_active: [0.53, 0.57], tensor_active: [0, 0] }],
    ['memory_bound', { dram_active: [0.88, 0.92], sm_active: [0.75, 0.81] }],
    ['thermal_throttle', { gpu_temp_c: [85, 89], sm_active: [0.83, 0.89] }],
  ])('plays %s inside its branch of the efficiency tree', (behaviour, bounds) => {
    // Prepare / Act
    const rs = readings({ gpus: [behaviour] }, 60);

    // Assess
    for (const [key, [lo, hi]] of Object.entries(bounds) as [keyof GpuSample, [number, number]][]) {
      const avg = mean(column(rs, key));
      expect(avg, key).toBeGreaterThanOrEqual(lo);
      expect(avg, key).toBeLessThanOrEqual(hi);
    }
  });

  it('plays input bound as PCIe RX bursts followed by SM gaps', () => {
    // Prepare / Act
    const rs = readings({ gpus: ['input_bound'] }, 40);
    const sm = column(rs, 'sm_active');
    const rx = column(rs, 'pcie_rx_bytes_total');
    const rxRate = rx.slice(1).map((v, i) => v - (rx[i] ?? 0));

    // Assess
    expect(mean(sm)).toBeLessThan(0.3);
    expect(Math.max(...rxRate)).toBeGreaterThan(20 * 1024 ** 3);
    expect(sm.filter((v) => v < 0.05).length).toBeGreaterThan(sm.length / 2);
  });

  it('plays CPU bound with little PCIe RX (≈ 43 MB/s, from the byte counter)', () => {
    // Prepare / Act
    const rx = column(readings({ gpus: ['cpu_bound'] }, 61), 'pcie_rx_bytes_total');

    // Assess
    expect(((rx[60] as number) - (rx[0] as number)) / 60).toBeGreaterThan(3.8e7);
    expect(((rx[60] as number) - (rx[0] as number)) / 60).toBeLessThan(4.8e7);
  });

  it('sets the thermal clock-event bits (0x20 | 0x40) and lowers the SM clock on most samples of a hot GPU', () => {
    // Prepare / Act
    const rs = readings({ gpus: ['thermal_throttle'] }, 100);
    const throttled = rs.filter((r) => r.gpus[0]?.clocks_event_reasons === 0x60);

    // Assess
    expect(throttled.length).toBeGreaterThan(50);
    expect(throttled.every((r) => (r.gpus[0]?.sm_clock_mhz ?? 0) < 1980)).toBe(true);
    expect(Math.max(...column(rs, 'gpu_temp_c'))).toBeLessThan(90);
  });

  it('keeps cumulative counters rising by rate × time: energy from power, PCIe bytes from rate', () => {
    // Prepare / Act
    const rs = readings({ gpus: ['compute_bound'] }, 10);
    const energy = column(rs, 'energy_mj_total');
    const power = column(rs, 'power_w');

    // Assess
    for (let i = 1; i < energy.length; i++) {
      expect((energy[i] as number) - (energy[i - 1] as number)).toBeCloseTo((power[i] as number) * 1000, -1);
    }
    expect(column(rs, 'pcie_rx_bytes_total').every((v, i, a) => i === 0 || v >= (a[i - 1] as number))).toBe(
      true,
    );
  });

  it('leaves every profiling ratio absent on an A100 with no GPM (never invented)', () => {
    // Prepare / Act
    const [reading] = readings({ model: 'a100', gpus: ['compute_bound'] }, 1);

    // Assess
    for (const name of PROFILING_METRIC_NAMES) expect(reading?.gpus[0]).not.toHaveProperty(name);
    expect(reading?.gpus[0]?.gpu_util).toBeGreaterThan(0.9);
  });

  it('grows the framebuffer of a leaking GPU toward the board limit', () => {
    // Prepare
    const source = simulated({ gpus: ['memory_leak'] });

    // Act
    const early = sampleOnce(source, new Date(T0 + 1000)).gpus[0];
    const late = sampleOnce(source, new Date(T0 + 1_900_000)).gpus[0];

    // Assess
    expect((early?.fb_used_bytes ?? 0) / (early?.fb_total_bytes ?? 1)).toBeCloseTo(0.6, 2);
    expect((late?.fb_used_bytes ?? 0) / (late?.fb_total_bytes ?? 1)).toBeGreaterThan(0.95);
  });

  it('gives identities that pass the contract, unique per host', () => {
    // Prepare / Act
    const a = simulated({ gpus: ['idle', 'idle'], hostNumber: 1 });
    const b = simulated({ gpus: ['idle', 'idle'], hostNumber: 2 });

    // Assess
    for (const id of [...a.identity(), ...b.identity()]) expect(GpuIdentitySchema.parse(id)).toEqual(id);
    expect(new Set([...a.identity(), ...b.identity()].map((g) => g.uuid)).size).toBe(4);
  });

  it('reports each event once, in the first reading at or after it', () => {
    // Prepare
    const event: GpuEvent = {
      at: new Date(T0 + 2500).toISOString(),
      kind: 'xid',
      xid: 79,
      source: 'nvml',
      gpu_index: 0,
    };
    const source = simulated({ events: [event] });

    // Act
    const events = [1, 2, 3, 4].map((s) => sampleOnce(source, new Date(T0 + s * 1000)).events);

    // Assess
    expect(events).toEqual([[], [], [event], []]);
  });

  it('grows a faulty counter at its rate from its start value, and restarts it from 0 at a driver reload', () => {
    // Prepare
    const source = simulated({
      gpus: ['compute_bound', 'compute_bound'],
      faults: [
        { gpu: 1, counter: 'pcie_replay_count', per_min: 30, start: 100 },
        { gpu: 1, counter: 'ecc_sbe_volatile', per_min: 6, start: 50, reset_after_s: 120 },
      ],
    });

    // Act
    const at = (s: number) => sampleOnce(source, new Date(T0 + s * 1000)).gpus;
    const [m1, m3] = [at(60), at(180)];

    // Assess
    expect(m1[0]).toMatchObject({ pcie_replay_count: 0, ecc_sbe_volatile: 0, nvlink_crc_errors: 0 });
    expect(m1[1]).toMatchObject({ pcie_replay_count: 130, ecc_sbe_volatile: 56, ecc_sbe_aggregate: 56 });
    expect(m3[1]).toMatchObject({ pcie_replay_count: 190, ecc_sbe_volatile: 6, ecc_sbe_aggregate: 68 });
  });

  it.each<[string, Partial<SimulatedGpuSourceOptions>, string]>([
    ['an unknown model', { model: 'v100' as 'h100' }, 'model'],
    ['no GPU', { gpus: [] }, 'gpus'],
    ['65 GPUs', { gpus: Array.from({ length: 65 }, () => 'idle' as const) }, 'gpus'],
    ['an unknown behaviour', { gpus: ['idle', 'sleepy' as Behaviour] }, 'gpus[1]'],
    ['a fractional seed', { seed: 1.5 }, 'seed'],
    ['a start that is not finite', { startMs: Number.NaN }, 'startMs'],
    ['a host number over 65535', { hostNumber: 65_536 }, 'hostNumber'],
    [
      'a fault on a GPU the host lacks',
      { faults: [{ gpu: 1, counter: 'nvlink_crc_errors', per_min: 1 }] },
      'faults[0].gpu',
    ],
    [
      'a negative fault rate',
      { faults: [{ gpu: 0, counter: 'nvlink_crc_errors', per_min: -1 }] },
      'faults[0].per_min',
    ],
  ])('throws PlaybackOptionsError naming the option for %s', (_case, override, option) => {
    // Act
    const make = () => simulated(override);

    // Assess
    expect(make).toThrow(PlaybackOptionsError);
    expect(make).toThrow(new RegExp(`^Expected \`${option.replace(/[[\]]/g, '\\$&')}\``));
  });
});

describe('SimulatedEfa', () => {
  it('gives per-port deltas that add up to rate × time, only the dropping port with drops', async () => {
    // Prepare
    const efa = new SimulatedEfa([
      { device: 'rdmap80s0', pkts_per_s: 1000 },
      { device: 'rdmap79s0', pkts_per_s: 1000, rx_drops_per_s: 2.5, retrans_timeouts_per_min: 3 },
    ]);
    const windows = [];

    // Act: counters start at open (T0), each window close moves them to its end
    await efa.open({ clock: () => new Date(T0), emit: () => {}, warn: () => {}, timers: NODE_TIMERS });
    for (let k = 1; k <= 3; k++)
      windows.push(windowOnce(efa, new Date(T0 + (k - 1) * 10_000), new Date(T0 + k * 10_000)));

    // Assess
    expect(windows[0]?.map((w) => w.device)).toEqual(['rdmap79s0', 'rdmap80s0']);
    expect(windows.map((ws) => ws[0]?.deltas.rx_drops)).toEqual([25, 25, 25]);
    expect(windows.map((ws) => ws[0]?.deltas.retrans_timeout_events)).toEqual([0, 1, 0]);
    expect(windows.map((ws) => ws[1]?.deltas.rx_drops)).toEqual([0, 0, 0]);
    expect(windows[0]?.[1]?.deltas.rx_pkts).toBe(10_000);
  });

  it.each([
    ['no port', []],
    ['a negative rate', [{ device: 'rdmap79s0', pkts_per_s: -1 }]],
  ])('throws PlaybackOptionsError for %s', (_case, ports) => {
    expect(() => new SimulatedEfa(ports)).toThrow(PlaybackOptionsError);
  });
});

describe('DueEvents', () => {
  it('hands out events in time order, each once', () => {
    // Prepare
    const at = (s: number): GpuEvent => ({
      at: new Date(T0 + s * 1000).toISOString(),
      kind: 'agent_start',
      source: 'agent',
    });
    const due = new DueEvents([at(3), at(1), at(2)]);

    // Act / Assess
    expect(due.take(T0)).toEqual([]);
    expect(due.take(T0 + 2000)).toEqual([at(1), at(2)]);
    expect(due.take(T0 + 9000)).toEqual([at(3)]);
    expect(due.take(T0 + 9000)).toEqual([]);
  });
});

describe('the default simulated fleet', () => {
  it('has one labelled host per behaviour, tagged simulated, with unique instance ids', () => {
    // Prepare / Act
    const behaviours = new Set(DEFAULT_SIMULATED_FLEET.flatMap((h) => h.gpus));
    const ids = DEFAULT_SIMULATED_FLEET.map((h) => h.instance_id);

    // Assess
    expect([...behaviours].sort()).toEqual([...BEHAVIOURS].sort());
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.every((id) => id.startsWith(SIMULATED_INSTANCE_ID_PREFIX))).toBe(true);
  });

  it('plays every host into contract-valid batches tagged simulated, through the agent loop', async () => {
    // Prepare
    const to = new Date(T0 + 1_200_000);

    // Act
    const batches = (
      await Promise.all(
        DEFAULT_SIMULATED_FLEET.map((spec, i) =>
          playBatches(
            simulatedPlaybackHost(spec, { seed: 1, startMs: T0, hostNumber: i, agentVersion: '0.1.0' }),
            { from: new Date(T0), to, flushIntervalS: 300 },
          ),
        ),
      )
    ).flat();

    // Assess
    expect(batches).toHaveLength(4 * DEFAULT_SIMULATED_FLEET.length);
    for (const b of batches) {
      expect(() => parseBatch(JSON.parse(JSON.stringify(b)), to)).not.toThrow();
      expect(b.host.tags).toMatchObject({ team: 'simulated', [SIMULATED_TAG]: 'true' });
    }
    const efa = batches.find((b) => b.host.tags?.job === 'sim-efa-drops');
    expect(efa?.efa?.find((e) => e.device === 'rdmap81s0')?.deltas.rx_drops).toBeGreaterThan(0);
    const a100 = batches.find((b) => b.host.instance_type === 'p4d.24xlarge');
    expect(a100?.agent.profiling_source).toBe('none');
  });
});
