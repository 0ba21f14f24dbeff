import type { GpuEvent, GpuIdentity } from '../../lambdas/contract';
import { PlaybackOptionsError } from '../errors';
import type { AgentSource, SampleSink, SourceSupport } from '../sources/source';
import type { GpuSample } from '../window/gpu-sample';
import { DueEvents } from './due-events';
import { BEHAVIOUR_WORK, BEHAVIOURS, type Behaviour } from './simulate-behaviours';

/**
 * Simulate source: a host of GPUs whose readings come from seeded behaviour generators instead of
 * NVML, in the same `GpuSample` shape and contract units the NVML source gives, so the agent loop
 * (windows, horizons, batches) treats them exactly as real readings. Deterministic: the same seed
 * and the same poll times give the same samples.
 */

/** MiB in bytes. */
const MIB = 1024 * 1024;

/** A GPU model the simulator can play, with the constants NVML reports for it. */
export interface SimulatedGpuModel {
  /** `nvmlDeviceGetName`. */
  readonly name: string;
  /** `nvmlDeviceGetMemoryInfo_v2().total`, bytes. */
  readonly fb_total_bytes: number;
  /** `nvmlDeviceGetEnforcedPowerLimit`, W. */
  readonly power_limit_w: number;
  /** Board power with nothing running, W (the H100's from the bundled capture; the A100's assumed). */
  readonly idle_power_w: number;
  /** Highest SM clock, MHz (`nvmlDeviceGetMaxClockInfo(SM)`). */
  readonly max_sm_clock_mhz: number;
  /** Memory clock, MHz. */
  readonly mem_clock_mhz: number;
  /**
   * Whether the GPU has NVML GPM (Hopper and newer). Without it, and without DCGM, the profiling
   * ratios (`sm_active`, `sm_occupancy`, `tensor_active`, `dram_active`, `fp*_active`) are absent.
   */
  readonly gpm: boolean;
}

/**
 * The models the simulator plays. H100: 81,559 MiB and 700 W as a p5.48xlarge reports them, idle at
 * 112 W as the idle GPUs of the bundled real p5 captures draw (110.8–113.6 W); A100: 40,960 MiB and
 * 400 W as an A100-SXM4-40GB on p4d reports them, idle at 55 W (assumed: no A100 power capture is
 * bundled).
 */
export const SIMULATED_GPU_MODELS = {
  h100: {
    name: 'NVIDIA H100 80GB HBM3',
    fb_total_bytes: 81_559 * MIB,
    power_limit_w: 700,
    idle_power_w: 112,
    max_sm_clock_mhz: 1980,
    mem_clock_mhz: 2619,
    gpm: true,
  },
  a100: {
    name: 'NVIDIA A100-SXM4-40GB',
    fb_total_bytes: 40_960 * MIB,
    power_limit_w: 400,
    idle_power_w: 55,
    max_sm_clock_mhz: 1410,
    mem_clock_mhz: 1215,
    gpm: false,
  },
} as const satisfies Record<string, SimulatedGpuModel>;
/** A model name of {@link SIMULATED_GPU_MODELS}. */
export type SimulatedGpuModelName = keyof typeof SIMULATED_GPU_MODELS;

/** GPU temperature with nothing running, °C; the load adds up to {@link LOAD_HEAT_C}. */
const BASE_TEMP_C = 31;
/** Temperature the full power limit adds to {@link BASE_TEMP_C}, °C. */
const LOAD_HEAT_C = 44;
/** Above this temperature the simulated GPU sets its thermal clock-event bits, °C (throttling from ~85 °C). */
const THROTTLE_FROM_C = 85;
/** Clock-event bits of a thermally throttled GPU: SW thermal slowdown 0x20 | HW thermal slowdown 0x40 (`nvmlClocksEventReason*`). */
const THERMAL_SLOWDOWN_BITS = 0x20 | 0x40;
/** Clock-event bit of a GPU held at its power limit: SW power cap 0x4 (`nvmlClocksEventReasonSwPowerCap`). */
const SW_POWER_CAP_BIT = 0x4;
/** Share of its clock a thermally throttled (or power-capped) GPU keeps. */
const THROTTLED_CLOCK_SHARE = 0.72;

/** One GPU's cumulative counters (mJ, bytes) and the time they were advanced to (ms). */
interface CounterState {
  energy_mj: number;
  rx: number;
  tx: number;
  nvlink: number;
  atMs: number;
}

/** Options of {@link SimulatedGpuSource}. */
export interface SimulatedGpuSourceOptions {
  /** The GPU model of every GPU of the host. */
  readonly model: SimulatedGpuModelName;
  /** One behaviour per GPU, by index (1..64 GPUs). */
  readonly gpus: readonly Behaviour[];
  /** Seed of the random streams (one per GPU, derived from it), an integer. */
  readonly seed: number;
  /** The instant the simulated workload starts, ms since the epoch (behaviours count time from it). */
  readonly startMs: number;
  /**
   * A distinguishing part of the GPU UUIDs and PCI bus ids, 0..0xffff (one per simulated host, so
   * two hosts never share a UUID). @default 0
   */
  readonly hostNumber?: number;
  /** Events to deliver, each in the first reading at or after its `at`. @default none */
  readonly events?: readonly GpuEvent[];
  /** Hardware error counters that grow (or reset) on some GPUs. @default none: every error counter stays 0 */
  readonly faults?: readonly SimulatedCounterFault[];
}

/** The error counters a simulated fault can move (NVML names, as the agent samples them). */
export const FAULT_COUNTERS = ['pcie_replay_count', 'nvlink_crc_errors', 'ecc_sbe_volatile'] as const;

/**
 * A hardware error counter of one simulated GPU: a value from before the run, growth at a steady
 * rate, and optionally a driver reload that restarts it from 0 (a reset is not growth).
 * `ecc_sbe_aggregate` (board lifetime) follows `ecc_sbe_volatile` but never resets.
 */
export interface SimulatedCounterFault {
  /** GPU index. */
  readonly gpu: number;
  /** Which counter. */
  readonly counter: (typeof FAULT_COUNTERS)[number];
  /** Growth, counts per minute, ≥ 0. */
  readonly per_min: number;
  /** Value when the run starts (errors from before). @default 0 */
  readonly start?: number;
  /** The driver reloads this many seconds into the run: the counter restarts from 0. @default never */
  readonly reset_after_s?: number;
}

/**
 * A simulated host's GPUs as the GPU inventory {@link AgentSource} of a playback. Per GPU and reading: the behaviour's work
 * point, then what NVML would show for it: board power from the load (`idle + (limit − idle) ×
 * (0.8 × SM active + 0.1 × DRAM active + 0.1 × GPU util)`, ±2 %), temperature from power, SM clock
 * held down with thermal clock-event bits (0x20 | 0x40) above 85 °C, cumulative energy (mJ), PCIe
 * and NVLink byte counters integrated from the rates, and framebuffer use. The profiling ratios are
 * present only when the model has GPM.
 *
 * @example
 * const source = new SimulatedGpuSource({ model: 'h100', gpus: ['fake_load'], seed: 7, startMs: from.getTime() });
 */
export class SimulatedGpuSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'simulate';
  readonly #model: SimulatedGpuModel;
  readonly #gpus: readonly Behaviour[];
  readonly #identities: readonly GpuIdentity[];
  readonly #startMs: number;
  readonly #random: (() => number)[];
  readonly #counters: CounterState[];
  readonly #events: DueEvents;
  readonly #faults: readonly SimulatedCounterFault[];

  /** @throws {PlaybackOptionsError} naming the option, when one is out of range */
  constructor(options: SimulatedGpuSourceOptions) {
    if (!(options.model in SIMULATED_GPU_MODELS))
      throw new PlaybackOptionsError('model', Object.keys(SIMULATED_GPU_MODELS).join(' or '), options.model);
    if (options.gpus.length < 1 || options.gpus.length > 64)
      throw new PlaybackOptionsError('gpus', 'a list of 1..64 behaviours', options.gpus.length);
    options.gpus.forEach((b, i) => {
      if (!(BEHAVIOURS as readonly string[]).includes(b))
        throw new PlaybackOptionsError(`gpus[${i}]`, `one of ${BEHAVIOURS.join(', ')}`, b);
    });
    if (!Number.isSafeInteger(options.seed))
      throw new PlaybackOptionsError('seed', 'an integer', options.seed);
    if (!Number.isFinite(options.startMs))
      throw new PlaybackOptionsError('startMs', 'a finite time in ms', options.startMs);
    const hostNumber = options.hostNumber ?? 0;
    if (!Number.isInteger(hostNumber) || hostNumber < 0 || hostNumber > 0xffff)
      throw new PlaybackOptionsError('hostNumber', 'an integer in 0..65535', hostNumber);
    this.#model = SIMULATED_GPU_MODELS[options.model];
    this.#gpus = options.gpus;
    this.#startMs = options.startMs;
    const host = hostNumber.toString(16).padStart(4, '0');
    this.#identities = options.gpus.map((_, index) => ({
      index,
      uuid: `GPU-5e000000-${host}-4000-8000-${index.toString(16).padStart(12, '0')}`,
      name: this.#model.name,
      pci_bus_id: `00000000:${(0x10 + index * 0x10).toString(16).padStart(2, '0')}:00.0`,
    }));
    this.#random = options.gpus.map((_, index) => mulberry32(hashSeed(options.seed, hostNumber, index)));
    this.#counters = options.gpus.map(() => ({
      energy_mj: 0,
      rx: 0,
      tx: 0,
      nvlink: 0,
      atMs: options.startMs,
    }));
    this.#events = new DueEvents(options.events);
    (options.faults ?? []).forEach((f, i) => {
      if (!Number.isInteger(f.gpu) || f.gpu < 0 || f.gpu >= options.gpus.length)
        throw new PlaybackOptionsError(
          `faults[${i}].gpu`,
          `a GPU index in 0..${options.gpus.length - 1}`,
          f.gpu,
        );
      if (!(FAULT_COUNTERS as readonly string[]).includes(f.counter))
        throw new PlaybackOptionsError(
          `faults[${i}].counter`,
          `one of ${FAULT_COUNTERS.join(', ')}`,
          f.counter,
        );
      if (!(f.per_min >= 0)) throw new PlaybackOptionsError(`faults[${i}].per_min`, 'a rate ≥ 0', f.per_min);
    });
    this.#faults = options.faults ?? [];
  }

  /** Identity of each GPU: index, a UUID unique to host and GPU, the model's name, a PCI bus id. */
  identity(): readonly GpuIdentity[] {
    return this.#identities;
  }

  /** Nothing to open: a simulated host always has its GPUs. @returns supported, with the GPU count and model */
  open(): SourceSupport {
    return { supported: true, detail: `${this.#gpus.length} simulated ${this.#model.name}` };
  }

  /**
   * One reading of every GPU at `now` into `into` (counters advance from the previous reading),
   * and the events due by `now`. Never throws.
   */
  sample(into: SampleSink, now: Date): void {
    const nowMs = now.getTime();
    const t_s = Math.max(0, (nowMs - this.#startMs) / 1000);
    const m = this.#model;
    const gpus: GpuSample[] = this.#gpus.map((behaviour, index) => {
      const random = this.#random[index] as () => number;
      const c = this.#counters[index] as CounterState;
      const w = BEHAVIOUR_WORK[behaviour]({ t_s, random });
      const load = 0.8 * w.sm_active + 0.1 * w.dram_active + 0.1 * w.gpu_util;
      const power_w = w.power_capped
        ? m.power_limit_w * (1 - 0.01 * random())
        : Math.min(
            m.power_limit_w,
            (m.idle_power_w + (m.power_limit_w - m.idle_power_w) * load * (w.power_scale ?? 1)) *
              (1 + 0.02 * (2 * random() - 1)),
          );
      const gpu_temp_c = BASE_TEMP_C + (LOAD_HEAT_C * power_w) / m.power_limit_w + (w.extra_heat_c ?? 0);
      const throttled = gpu_temp_c >= THROTTLE_FROM_C;
      const dtS = Math.max(0, (nowMs - c.atMs) / 1000);
      c.energy_mj += power_w * dtS * 1000;
      c.rx += w.pcie_rx_bytes_per_s * dtS;
      c.tx += w.pcie_tx_bytes_per_s * dtS;
      c.nvlink += w.nvlink_bytes_per_s * dtS;
      c.atMs = nowMs;
      const sample: GpuSample = {
        gpu_index: index,
        at_ms: nowMs,
        gpu_util: w.gpu_util,
        mem_copy_util: w.mem_copy_util,
        fb_used_bytes: Math.round(w.fb_used_share * m.fb_total_bytes),
        fb_total_bytes: m.fb_total_bytes,
        gpu_temp_c: Math.round(gpu_temp_c),
        mem_temp_c: Math.round(gpu_temp_c + 4),
        power_w: Math.round(power_w * 1000) / 1000,
        power_limit_w: m.power_limit_w,
        energy_mj_total: Math.round(c.energy_mj),
        sm_clock_mhz: Math.round(
          m.max_sm_clock_mhz * (throttled || w.power_capped ? THROTTLED_CLOCK_SHARE : 1),
        ),
        mem_clock_mhz: m.mem_clock_mhz,
        clocks_event_reasons:
          (throttled ? THERMAL_SLOWDOWN_BITS : 0) | (w.power_capped ? SW_POWER_CAP_BIT : 0),
        ecc_sbe_volatile: this.#counter(index, 'ecc_sbe_volatile', t_s),
        ecc_dbe_volatile: 0,
        ecc_sbe_aggregate: this.#counter(index, 'ecc_sbe_volatile', t_s, false),
        ecc_dbe_aggregate: 0,
        remapped_rows_pending: false,
        remapped_rows_failure: false,
        compute_processes: w.compute_processes,
        processes: Array.from({ length: w.compute_processes }, (_, k) => ({
          pid: 4000 + 100 * index + k,
          fb_used_bytes: Math.round(w.fb_used_share * m.fb_total_bytes),
        })),
        pcie_rx_bytes_total: Math.round(c.rx),
        pcie_tx_bytes_total: Math.round(c.tx),
        pcie_replay_count: this.#counter(index, 'pcie_replay_count', t_s),
        nvlink_rx_bytes_total: Math.round(c.nvlink),
        nvlink_tx_bytes_total: Math.round(c.nvlink),
        nvlink_crc_errors: this.#counter(index, 'nvlink_crc_errors', t_s),
        ...(m.gpm
          ? {
              sm_active: w.sm_active,
              sm_occupancy: w.sm_occupancy,
              tensor_active: w.tensor_active,
              dram_active: w.dram_active,
              fp16_active: w.tensor_active / 8,
              fp32_active: w.fp32_active,
              fp64_active: 0,
            }
          : {}),
      };
      return sample;
    });
    for (const sample of gpus) into.gpu(sample);
    for (const event of this.#events.take(nowMs)) into.event(event);
  }

  /** Nothing to free. */
  close(): void {}

  /** A fault counter's value at `t_s`; `resets` false for a lifetime counter a driver reload keeps. */
  #counter(gpu: number, counter: SimulatedCounterFault['counter'], t_s: number, resets = true): number {
    const f = this.#faults.find((x) => x.gpu === gpu && x.counter === counter);
    if (f === undefined) return 0;
    if (resets && f.reset_after_s !== undefined && t_s >= f.reset_after_s)
      return Math.floor((f.per_min * (t_s - f.reset_after_s)) / 60);
    return (f.start ?? 0) + Math.floor((f.per_min * t_s) / 60);
  }
}

/** A 32-bit seed from the fleet seed, the host and the GPU (FNV-1a over the three). */
function hashSeed(seed: number, host: number, gpu: number): number {
  let h = 0x811c9dc5;
  for (const v of [seed | 0, Math.floor(seed / 2 ** 32) | 0, host, gpu]) {
    h = Math.imul(h ^ (v & 0xffff), 0x01000193);
    h = Math.imul(h ^ (v >>> 16), 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small, fast, well-mixed 32-bit generator; uniform numbers in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
