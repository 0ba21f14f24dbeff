import { IDLE_EFFICIENCY_BELOW, KERNELS_RUNNING_GPU_UTIL_AT_LEAST } from '../constants';
import { HELD_FB_USED_BYTES_AT_LEAST } from '../gpu-holder';

/**
 * Rule thresholds (docs/design.md §6): one documented data table (value, unit, range, source), overridable per
 * deployment (`parseRuleThresholds`: the ingest Lambda's `RULE_THRESHOLDS`, local mode's `--rules FILE`).
 *
 * Sources named below: "efficiency tree" = the GPU efficiency decision tree the rules follow (written out in
 * docs/design.md §6: SM active < 30 % underutilized → PCIe RX high: data loading / low: CPU
 * preprocessing; 30–70 % → tensor zero or low; > 70 % → DRAM > 80 %: memory bound; occupancy < 20 %: alert the developer; temperature
 * alert above 80 °C, throttling from ~85 °C; a power sawtooth is data starvation; one GPU 10 % slower
 * slows a synchronous job); "docs/design.md §6" = the rule table; "Iglewicz & Hoaglin" = the modified z-score
 * outlier test (|z| > 3.5 with z = 0.6745 (x − median) / MAD).
 */

/** One threshold: its default, unit, the range an override must stay in, and where the number comes from. */
export interface ThresholdSpec {
  /** The default value. */
  readonly value: number;
  /** Unit of `value` (`fraction 0..1`, `°C`, `s`, `bytes/s`, `per min`, `z-score`, `count`). */
  readonly unit: string;
  /** Smallest value an override may set (inclusive). */
  readonly min: number;
  /** Largest value an override may set (inclusive). */
  readonly max: number;
  /** Where the number comes from. */
  readonly source: string;
}

/**
 * Every rule threshold, by name (camelCase, unit in the name). The defaults of {@link DEFAULT_THRESHOLDS}.
 */
export const THRESHOLD_TABLE = {
  thermalCriticalTempC: {
    value: 90,
    unit: '°C',
    min: 0,
    max: 150,
    source: 'docs/design.md §6: thermal_critical at max_gpu_temp_c ≥ 90',
  },
  xidDedupeWindowS: {
    value: 1,
    unit: 's',
    min: 0,
    max: 60,
    source: 'this module: NVML and the kernel log report one Xid within milliseconds',
  },
  minHorizonSpanS: {
    value: 300,
    unit: 's',
    min: 1,
    max: 3600,
    source: 'design choice: a window rule needs a minimum covered span (5 min) before it judges',
  },
  idleSmActiveBelow: {
    value: IDLE_EFFICIENCY_BELOW,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source:
      'docs/design.md §5: efficiency < 0.01 is idle (or held idle with a process); the ledger classes windows with the same constant',
  },
  underutilizedSmActiveBelow: {
    value: 0.3,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'efficiency tree: SM active < 30 % is underutilized',
  },
  computeBoundSmActiveAtLeast: {
    value: 0.7,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'efficiency tree: SM active > 70 % branches to memory or compute bound',
  },
  kernelsRunningGpuUtilAtLeast: {
    value: KERNELS_RUNNING_GPU_UTIL_AT_LEAST,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source:
      'docs/design.md §5: SM active below idleSmActiveBelow is idle only while gpu_util stays below this (kernels run: launch-bound, not idle); the ledger classes windows with the same constant',
  },
  fakeLoadGpuUtilAtLeast: {
    value: 0.9,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'docs/design.md §6: fake_load at gpu_util ≥ 0.9 with SM active < 0.3',
  },
  inputBoundPcieRxBytesPerS: {
    value: 1e9,
    unit: 'bytes/s',
    min: 0,
    max: 1e12,
    source:
      'this module: 1 GB/s mean host→GPU traffic (≈ 3 % of PCIe Gen4 x16, 32 GB/s) is a loader streaming batches; below it the GPU waits on the CPU',
  },
  inputBoundPcieRxBurstBytesPerS: {
    value: 4e9,
    unit: 'bytes/s',
    min: 0,
    max: 1e12,
    source:
      'docs/design.md §6: input_bound = PCIe RX bursts followed by SM gaps; a 1 s step ≥ 4 GB/s is a burst',
  },
  lowOccupancyBelow: {
    value: 0.2,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'efficiency tree: occupancy < 20 %: alert the developer',
  },
  tensorIdleBelow: {
    value: 0.05,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source:
      'docs/design.md §6: tensor_active < 0.05 (efficiency tree: tensor zero = no mixed precision, low = unaligned dims)',
  },
  memoryBoundDramActiveAtLeast: {
    value: 0.8,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'efficiency tree: DRAM active ≥ 80 % is memory bound, whether SM is high or low',
  },
  powerSawtoothCvAtLeast: {
    value: 0.25,
    unit: 'fraction (stddev / mean)',
    min: 0,
    max: 100,
    source: 'this module: power swinging by a quarter of its mean while SM active swings is a sawtooth',
  },
  powerSawtoothSmActiveCvAtLeast: {
    value: 0.5,
    unit: 'fraction (stddev / mean)',
    min: 0,
    max: 100,
    source: 'this module: SM active swinging by half its mean (work, wait, work) is data starvation',
  },
  heldFbUsedBytesAtLeast: {
    value: HELD_FB_USED_BYTES_AT_LEAST,
    unit: 'bytes',
    min: 0,
    max: 2 ** 40,
    source:
      'docs/detection.md §5: where processes are unknown, framebuffer used ≥ 256 MiB is a context holding the GPU (idle GPUs show 0–12 MiB in the real captures)',
  },
  idleBilledS: {
    value: 1800,
    unit: 's',
    min: 60,
    max: 30 * 86_400,
    source: 'docs/design.md §6: idle_billed after ≥ 30 min idle',
  },
  memoryPressureUsedAtLeast: {
    value: 0.95,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'docs/design.md §6: fb_used / fb_total ≥ 0.95 is an OOM risk',
  },
  memoryLeakTimeToFullS: {
    value: 3600,
    unit: 's',
    min: 60,
    max: 7 * 86_400,
    source:
      'this module: a steady growth that fills the framebuffer within an hour is a leak worth a warning',
  },
  memoryLeakMinGrowthBytesPerS: {
    value: 1_048_576,
    unit: 'bytes/s',
    min: 0,
    max: 1e12,
    source: 'this module: 1 MiB/s (3.5 GiB/h); slower drift is allocator noise',
  },
  thermalThrottleRatioAtLeast: {
    value: 0.2,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source: 'docs/design.md §6: thermal clock-event reasons in ≥ 20 % of the samples',
  },
  powerThrottleRatioAtLeast: {
    value: 0.2,
    unit: 'fraction 0..1',
    min: 0,
    max: 1,
    source:
      'docs/design.md §6: the power cap held the clocks down in ≥ 20 % of the horizon (the thermal rule’s share, so both throttles are judged alike)',
  },
  thermalThrottleTempC: {
    value: 85,
    unit: '°C',
    min: 0,
    max: 150,
    source: 'efficiency tree: throttling from ~85 °C (docs/design.md §6: max_gpu_temp_c > 85)',
  },
  thermalWarnTempC: {
    value: 80,
    unit: '°C',
    min: 0,
    max: 150,
    source: 'efficiency tree: temperature alert above 80 °C',
  },
  stragglerModifiedZBelow: {
    value: -3.5,
    unit: 'z-score',
    min: -100,
    max: 0,
    source:
      'Iglewicz & Hoaglin: modified z-score beyond 3.5 is an outlier; only the low side (less work) counts',
  },
  stragglerMinGap: {
    value: 0.1,
    unit: 'fraction 0..1 of the peer median',
    min: 0,
    max: 1,
    source: 'efficiency tree: one GPU 10 % slower slows the whole synchronous job',
  },
  stragglerMinGpus: {
    value: 3,
    unit: 'count',
    min: 3,
    max: 64,
    source: 'design choice: no straggler with fewer than 3 GPUs (a median of two has no majority)',
  },
  efaRxDropsAtLeast: {
    value: 1,
    unit: 'count per batch window',
    min: 1,
    max: 1e12,
    source: 'reference gpu.md §4.2: rx_drops, any sustained increase',
  },
  efaRetransRatioAtLeast: {
    value: 0.01,
    unit: 'fraction of tx_pkts',
    min: 0,
    max: 1,
    source:
      'this module: SRD retransmitting ≥ 1 % of what it sends is congestion or path loss (reference gpu.md §4.2)',
  },
  wasteRateAtLeast: {
    value: 0.5,
    unit: 'fraction 0..1 of the price',
    min: 0,
    max: 1,
    source: 'docs/design.md §6: an instance wastes ≥ 50 % of its price over the horizon',
  },
  agentSilentAfterS: {
    value: 300,
    unit: 's',
    min: 30,
    max: 86_400,
    source:
      "design choice: agent_silent when a running GPU instance sent no batch for 5 min (20 flush intervals of 10 s and more than the agent's retry backoff)",
  },
  fleetStragglerSpanS: {
    value: 900,
    unit: 's',
    min: 60,
    max: 86_400,
    source: "this module: the fleet straggler compares nodes over the agent's horizon, 15 min",
  },
  fleetStragglerMinNodes: {
    value: 3,
    unit: 'count',
    min: 3,
    max: 10_000,
    source:
      'design choice: a job needs ≥ 3 nodes for a cross-node straggler (a median of two has no majority)',
  },
  fleetWasteSpanS: {
    value: 3600,
    unit: 's',
    min: 300,
    max: 7 * 86_400,
    source: "design choice: a team's waste rate is judged over the last hour",
  },
  fleetWasteRateAtLeast: {
    value: 0.5,
    unit: 'fraction 0..1 of the cost',
    min: 0,
    max: 1,
    source: 'design choice: a team wasting ≥ 50 % of what its GPUs cost over the span',
  },
  fleetWasteMinCostUsdPerHour: {
    value: 20,
    unit: 'USD/hour',
    min: 0,
    max: 1e6,
    source:
      "this module: below $20/h of GPU spend (about 3 p5.4xlarge, or a fifth of a p5.48xlarge) a team's waste is left to the reports, not paged",
  },
  pcieReplaysPerMinAtLeast: {
    value: 8,
    unit: 'per min',
    min: 0,
    max: 1e9,
    source:
      'this module: PCIe replays are retried link errors; a few a minute, sustained, is a degrading link',
  },
  nvlinkCrcErrorsPerMinAtLeast: {
    value: 1,
    unit: 'per min',
    min: 0,
    max: 1e9,
    source:
      'this module: NVLink CRC errors should stay at 0; one a minute, sustained, is a bad link or cable',
  },
  eccSbePerMinAtLeast: {
    value: 1,
    unit: 'per min',
    min: 0,
    max: 1e9,
    source:
      'this module: corrected ECC errors growing every minute precede row remaps (Xid 92 = excessive SBE)',
  },
} as const satisfies Readonly<Record<string, ThresholdSpec>>;

/** A threshold name, see {@link THRESHOLD_TABLE}. */
export type ThresholdName = keyof typeof THRESHOLD_TABLE;

/** The thresholds every rule reads: one number per {@link THRESHOLD_TABLE} entry, in its unit. */
export type Thresholds = { readonly [K in ThresholdName]: number };

/** Threshold names in table order. */
export const THRESHOLD_NAMES = Object.keys(THRESHOLD_TABLE) as readonly ThresholdName[];

/** The default thresholds: every {@link THRESHOLD_TABLE} value. */
export const DEFAULT_THRESHOLDS: Thresholds = Object.freeze(
  Object.fromEntries(THRESHOLD_NAMES.map((n) => [n, THRESHOLD_TABLE[n].value])) as Record<
    ThresholdName,
    number
  >,
);
