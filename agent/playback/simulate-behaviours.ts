/**
 * Workload behaviours of a simulated GPU: what one GPU's counters look like, second by second,
 * under each labelled condition of the efficiency tree (docs/design.md §6: healthy compute bound, idle, held idle,
 * fake load, input bound, CPU bound, low occupancy, tensor idle, memory bound, thermal throttling,
 * power-cap throttling, a memory leak, a power sawtooth, an in-node straggler). Pure and deterministic: time and the
 * random stream are arguments.
 */

import { DIAGNOSES, type Diagnosis } from '../../lambdas/contract';

/**
 * The diagnoses a GPU's own workload reaches: every one of the contract's {@link DIAGNOSES} but
 * `throttled` (heat or the power cap, shown by the `thermal_throttle` and `power_throttle` behaviours), `unknown` (a GPU model without
 * profiling counters, not a workload) and `awaiting_diagnosis` (a GPU's first minutes, not a workload).
 */
export type WorkloadDiagnosis = Exclude<Diagnosis, 'throttled' | 'unknown' | 'awaiting_diagnosis'>;

/** The diagnoses no workload of its own shows (see {@link WorkloadDiagnosis}). */
const NOT_A_WORKLOAD: ReadonlySet<Diagnosis> = new Set(['throttled', 'unknown', 'awaiting_diagnosis']);

/**
 * Every behaviour a simulated GPU can show: one per {@link WorkloadDiagnosis}, named as the
 * diagnosis it must reach (the list is the contract's), then the conditions the window rules judge
 * beyond a diagnosis.
 */
export const BEHAVIOURS = [
  ...DIAGNOSES.filter((d): d is WorkloadDiagnosis => !NOT_A_WORKLOAD.has(d)),
  'thermal_throttle',
  'power_throttle',
  'memory_leak',
  'power_sawtooth',
  'straggler',
] as const;
/** Behaviour union, see {@link BEHAVIOURS}. */
export type Behaviour = (typeof BEHAVIOURS)[number];

/**
 * One instant of work on one GPU, in contract units, before the source derives power, temperature
 * and clocks from it. Profiling ratios are 0..1 (what NVML GPM or DCGM would report).
 */
export interface WorkPoint {
  /** NVML `utilization.gpu`, 0..1: share of time any kernel ran. */
  readonly gpu_util: number;
  /** NVML `utilization.memory`, 0..1. */
  readonly mem_copy_util: number;
  /** SM active (GPM SM_UTIL / DCGM 1002), 0..1. */
  readonly sm_active: number;
  /** SM occupancy (GPM SM_OCCUPANCY / DCGM 1003), 0..1. */
  readonly sm_occupancy: number;
  /** Tensor pipes active (GPM ANY_TENSOR_UTIL / DCGM 1004), 0..1. */
  readonly tensor_active: number;
  /** DRAM bandwidth active (GPM DRAM_BW_UTIL / DCGM 1005), 0..1. */
  readonly dram_active: number;
  /** FP32 pipe active (GPM FP32_UTIL / DCGM 1007), 0..1. */
  readonly fp32_active: number;
  /** PCIe receive rate (host → GPU), bytes/s. */
  readonly pcie_rx_bytes_per_s: number;
  /** PCIe transmit rate (GPU → host), bytes/s. */
  readonly pcie_tx_bytes_per_s: number;
  /** NVLink rate each way, bytes/s. */
  readonly nvlink_bytes_per_s: number;
  /** Framebuffer in use, share of the total, 0..1. */
  readonly fb_used_share: number;
  /** Compute processes holding the GPU. */
  readonly compute_processes: number;
  /** Heat added above the load-driven temperature, °C (a failing fan, a hot aisle). @default 0 */
  readonly extra_heat_c?: number;
  /** Share of nominal power drawn, multiplier on the load-driven power (a straggler draws less). @default 1 */
  readonly power_scale?: number;
  /**
   * The power cap holds the clocks down: the source draws the full power limit and sets the SW
   * power cap clock-event bit (0x4), as a GPU whose limit was lowered below what its work needs.
   * @default false
   */
  readonly power_capped?: boolean;
}

/** What a behaviour needs to compute one instant. */
export interface BehaviourInput {
  /** Seconds since the simulation started, ≥ 0. */
  readonly t_s: number;
  /** Uniform random numbers in [0, 1), seeded per GPU. */
  readonly random: () => number;
}

/** GiB in bytes. */
const GIB = 1024 ** 3;

/** Period of the input-bound and sawtooth cycles, s: a step of a training loop waiting on data. */
export const STARVATION_PERIOD_S = 20;

/** The healthy, compute-bound training step the other behaviours depart from. */
const HEALTHY: WorkPoint = {
  gpu_util: 1,
  mem_copy_util: 0.35,
  sm_active: 0.86,
  sm_occupancy: 0.48,
  tensor_active: 0.58,
  dram_active: 0.42,
  fp32_active: 0.22,
  pcie_rx_bytes_per_s: 1.2 * GIB,
  pcie_tx_bytes_per_s: 0.2 * GIB,
  nvlink_bytes_per_s: 40 * GIB,
  fb_used_share: 0.72,
  compute_processes: 1,
};

/** ± `share` of `value`, uniformly, never below 0 and, for ratios, above 1. */
function jitter(value: number, share: number, random: () => number, ratio = true): number {
  const v = Math.max(0, value * (1 + share * (2 * random() - 1)));
  return ratio ? Math.min(1, v) : v;
}

/** The healthy step with ±3 % noise on every rate. */
function noisy(point: WorkPoint, random: () => number): WorkPoint {
  return {
    ...point,
    gpu_util: jitter(point.gpu_util, 0.01, random),
    mem_copy_util: jitter(point.mem_copy_util, 0.03, random),
    sm_active: jitter(point.sm_active, 0.03, random),
    sm_occupancy: jitter(point.sm_occupancy, 0.03, random),
    tensor_active: jitter(point.tensor_active, 0.03, random),
    dram_active: jitter(point.dram_active, 0.03, random),
    fp32_active: jitter(point.fp32_active, 0.03, random),
    pcie_rx_bytes_per_s: jitter(point.pcie_rx_bytes_per_s, 0.05, random, false),
    pcie_tx_bytes_per_s: jitter(point.pcie_tx_bytes_per_s, 0.05, random, false),
    nvlink_bytes_per_s: jitter(point.nvlink_bytes_per_s, 0.05, random, false),
  };
}

/** Nothing running: no process, no kernel, a small driver reservation of memory. */
const NOTHING: WorkPoint = {
  gpu_util: 0,
  mem_copy_util: 0,
  sm_active: 0,
  sm_occupancy: 0,
  tensor_active: 0,
  dram_active: 0,
  fp32_active: 0,
  pcie_rx_bytes_per_s: 0,
  pcie_tx_bytes_per_s: 0,
  nvlink_bytes_per_s: 0,
  fb_used_share: 0.006,
  compute_processes: 0,
};

/**
 * The work point of each behaviour at one instant. Numbers: the efficiency decision tree puts
 * each behaviour clearly inside its branch (SM active < 30 %, 30–70 %, > 70 %; tensor zero; DRAM
 * > 80 %; occupancy < 20 %), with ±3 % noise so statistics are not degenerate.
 */
export const BEHAVIOUR_WORK: Readonly<Record<Behaviour, (input: BehaviourInput) => WorkPoint>> = {
  /** A well-fed mixed-precision training step: SM 86 %, tensor 58 %, DRAM 42 %. */
  compute_bound: ({ random }) => noisy(HEALTHY, random),
  /** No process at all: the GPU is billed for nothing. */
  idle: () => NOTHING,
  /** A process (a notebook kernel, a stuck job) holds 60 % of the memory and runs nothing. */
  held_idle: () => ({ ...NOTHING, fb_used_share: 0.6, compute_processes: 1 }),
  /** A tiny kernel in a loop: `utilization.gpu` 100 %, SM active 2 % (the number that lies). */
  fake_load: ({ random }) => ({
    ...NOTHING,
    gpu_util: 1,
    mem_copy_util: 0.01,
    sm_active: jitter(0.02, 0.1, random),
    sm_occupancy: jitter(0.01, 0.1, random),
    dram_active: jitter(0.01, 0.1, random),
    fp32_active: jitter(0.005, 0.1, random),
    fb_used_share: 0.1,
    compute_processes: 1,
  }),
  /**
   * Data-loading bound: every {@link STARVATION_PERIOD_S} s a 3 s PCIe RX burst (24 GiB/s) feeds
   * 3 s of compute, then the SMs wait 14 s for the next batch (SM active ≈ 0.02): mean SM ≈ 15 %.
   */
  input_bound: ({ t_s, random }) => {
    const phase = t_s % STARVATION_PERIOD_S;
    if (phase < 3)
      return {
        ...noisy(HEALTHY, random),
        sm_active: jitter(0.05, 0.1, random),
        pcie_rx_bytes_per_s: 24 * GIB,
      };
    if (phase < 6) return { ...noisy(HEALTHY, random), pcie_rx_bytes_per_s: 0.5 * GIB };
    return {
      ...noisy(HEALTHY, random),
      gpu_util: 0.05,
      sm_active: jitter(0.02, 0.1, random),
      sm_occupancy: 0.01,
      tensor_active: 0,
      dram_active: 0.01,
      fp32_active: 0,
      pcie_rx_bytes_per_s: 0.05 * GIB,
      nvlink_bytes_per_s: 0,
    };
  },
  /** CPU-preprocessing bound: SM active ≈ 18 % with little PCIe traffic (the host cannot prepare data). */
  cpu_bound: ({ random }) => ({
    ...noisy(HEALTHY, random),
    gpu_util: jitter(0.4, 0.05, random),
    sm_active: jitter(0.18, 0.05, random),
    sm_occupancy: jitter(0.12, 0.05, random),
    tensor_active: jitter(0.1, 0.05, random),
    dram_active: jitter(0.08, 0.05, random),
    pcie_rx_bytes_per_s: jitter(0.04 * GIB, 0.1, random, false),
    nvlink_bytes_per_s: jitter(4 * GIB, 0.1, random, false),
  }),
  /** Small batches: SM active 55 %, occupancy 10 % (below the tree's 20 %), tensor 32 %. */
  low_occupancy: ({ random }) => ({
    ...noisy(HEALTHY, random),
    sm_active: jitter(0.55, 0.03, random),
    sm_occupancy: jitter(0.1, 0.03, random),
    tensor_active: jitter(0.32, 0.03, random),
    dram_active: jitter(0.3, 0.03, random),
  }),
  /** FP32 without mixed precision: SM active 55 %, tensor pipes idle (0). */
  tensor_idle: ({ random }) => ({
    ...noisy(HEALTHY, random),
    sm_active: jitter(0.55, 0.03, random),
    sm_occupancy: jitter(0.4, 0.03, random),
    tensor_active: 0,
    dram_active: jitter(0.35, 0.03, random),
    fp32_active: jitter(0.5, 0.03, random),
  }),
  /** Memory bound: SM active 78 %, DRAM bandwidth 90 % (above the tree's 80 %). */
  memory_bound: ({ random }) => ({
    ...noisy(HEALTHY, random),
    sm_active: jitter(0.78, 0.03, random),
    tensor_active: jitter(0.3, 0.03, random),
    dram_active: jitter(0.9, 0.02, random),
  }),
  /**
   * Healthy work on a GPU running hot (+18 °C: ≈ 85–88 °C, above the ~85 °C where throttling starts
   * and below the 90 °C critical line); the source sets the thermal clock-event bits.
   */
  thermal_throttle: ({ random }) => ({ ...noisy(HEALTHY, random), extra_heat_c: 18 }),
  /** Healthy work held at the power limit: the SW power cap clock-event bit in every sample, lower clocks. */
  power_throttle: ({ random }) => ({ ...noisy(HEALTHY, random), power_capped: true }),
  /** Healthy work whose memory grows 16 MiB/s from 60 % of the board (≈ 97 % after 32 min). */
  memory_leak: ({ t_s, random }) => ({
    ...noisy(HEALTHY, random),
    fb_used_share: Math.min(0.985, 0.6 + t_s * (0.37 / 1920)),
  }),
  /**
   * Data starvation seen in power: 10 s of full compute, 10 s of nothing, over and over, with no
   * PCIe burst (power swings between ≈ 610 W and ≈ 115 W).
   */
  power_sawtooth: ({ t_s, random }) =>
    t_s % STARVATION_PERIOD_S < STARVATION_PERIOD_S / 2
      ? noisy(HEALTHY, random)
      : { ...NOTHING, gpu_util: 0.02, fb_used_share: 0.72, compute_processes: 1 },
  /** One GPU of a synchronous job doing ≈ 20 % less work than its peers: cooler, lower power. */
  straggler: ({ random }) => ({
    ...noisy(HEALTHY, random),
    sm_active: jitter(0.64, 0.03, random),
    tensor_active: jitter(0.4, 0.03, random),
    power_scale: 0.72,
  }),
};
