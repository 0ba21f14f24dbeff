import type { GpuEvent, Host } from '../../lambdas/contract';
import type { PlaybackHost } from './playback';
import { type SimulatedCounterFault, type SimulatedGpuModelName, SimulatedGpuSource } from './simulate';
import type { Behaviour } from './simulate-behaviours';
import { SimulatedEfa, type SimulatedEfaPort } from './simulate-efa';

/**
 * Simulated hosts and the default simulated fleet of `gpu-sentinel local`: one host per labelled
 * condition of the efficiency tree (docs/design.md §6), so the first run shows every diagnosis and
 * its fix. Every simulated host carries the tag `simulated=true`, team `simulated` and a `sim-…` job, and an
 * instance id starting `i-05e0`, so nobody mistakes it for a real machine.
 */

/** Tag every simulated host carries. */
export const SIMULATED_TAG = 'simulated';

/** A simulated host: identity, GPU model, one behaviour per GPU, optional EFA ports and events. */
export interface SimulatedHostSpec {
  /** Short name, kebab-case, e.g. `fake-load`; also the host's `job` tag (`sim-<name>`). */
  readonly name: string;
  /** One line for people: what this host shows. */
  readonly label: string;
  /** EC2 instance id (the fleet uses `i-05e0…`). */
  readonly instance_id: string;
  /** EC2 instance type, priced from the built-in table. */
  readonly instance_type: string;
  /** GPU model of every GPU. */
  readonly model: SimulatedGpuModelName;
  /** One behaviour per GPU, by index. */
  readonly gpus: readonly Behaviour[];
  /** EFA ports, when the host has a fabric. @default none */
  readonly efa?: readonly SimulatedEfaPort[];
  /**
   * Simulated span, s, when the condition needs longer than a run's default to show (idle billing
   * needs 30 minutes of idle). @default the run's span
   */
  readonly duration_s?: number;
  /** Hardware error counters that grow or reset on some GPUs. @default none */
  readonly faults?: readonly SimulatedCounterFault[];
  /** Events the host's sources report during the run (`at` relative to the run's start, s). @default none */
  readonly events?: readonly (Omit<GpuEvent, 'at'> & { readonly after_s: number })[];
}

/** Options of {@link simulatedPlaybackHost}. */
export interface SimulatedHostOptions {
  /** Seed of the random streams. */
  readonly seed: number;
  /** Start of the simulated workload, ms since the epoch. */
  readonly startMs: number;
  /** Distinguishes the host's GPU UUIDs, 0..65535. */
  readonly hostNumber: number;
  /** `agent.version` of its batches. */
  readonly agentVersion: string;
  /** AWS region of the host. @default 'us-east-1' */
  readonly region?: string;
}

/**
 * The {@link PlaybackHost} of a simulated host: its contract identity (tags `team=simulated`,
 * `job=sim-<name>`, `simulated=true`), its sources (the GPUs, then the EFA ports), and an agent description
 * whose `profiling_source` is `gpm` for a GPM model and `none` otherwise (as the NVML source says).
 *
 * @param spec - the host
 * @param options - seed, start, host number, agent version
 * @returns what {@link playBatches} plays
 * @throws {PlaybackOptionsError} when the spec's GPUs or EFA ports are out of range
 */
export function simulatedPlaybackHost(spec: SimulatedHostSpec, options: SimulatedHostOptions): PlaybackHost {
  const region = options.region ?? 'us-east-1';
  const host: Host = {
    instance_id: spec.instance_id,
    instance_type: spec.instance_type,
    region,
    az: `${region}a`,
    lifecycle: 'on-demand',
    tags: { team: 'simulated', job: `sim-${spec.name}`, [SIMULATED_TAG]: 'true' },
  };
  const source = new SimulatedGpuSource({
    model: spec.model,
    gpus: spec.gpus,
    seed: options.seed,
    startMs: options.startMs,
    hostNumber: options.hostNumber,
    ...(spec.faults ? { faults: spec.faults } : {}),
    events: (spec.events ?? []).map(({ after_s, ...e }) => ({
      ...e,
      at: new Date(options.startMs + after_s * 1000).toISOString(),
    })),
  });
  return {
    host,
    agent: {
      version: options.agentVersion,
      driver_version: '580.105.08',
      profiling_source: spec.model === 'h100' ? 'gpm' : 'none',
    },
    sources: spec.efa ? [source, new SimulatedEfa(spec.efa)] : [source],
  };
}

/** Span of the idle host, s: the 30 minutes `idle_billed` waits for, plus 5 minutes. */
export const IDLE_BILLED_SHOWN_AFTER_S = 35 * 60;

/** How every simulated host's instance id starts. */
export const SIMULATED_INSTANCE_ID_PREFIX = 'i-05e0';

/** Instance id of the n-th simulated host (n 0..65535): `i-05e0` + 13 hex digits. */
export function simulatedInstanceId(n: number): string {
  return `${SIMULATED_INSTANCE_ID_PREFIX}000000000${n.toString(16).padStart(4, '0')}`;
}

/** Eight GPUs, all of one behaviour, but GPU `odd` of another. */
function eight(all: Behaviour, odd?: { index: number; behaviour: Behaviour }): Behaviour[] {
  return Array.from({ length: 8 }, (_, i) => (odd && i === odd.index ? odd.behaviour : all));
}

/** Four EFA devices of a p5 (names from a real p5.48xlarge), 200 k packets/s each. */
function fabric(dropping?: string): SimulatedEfaPort[] {
  return ['rdmap79s0', 'rdmap80s0', 'rdmap81s0', 'rdmap82s0'].map((device) =>
    device === dropping
      ? {
          device,
          pkts_per_s: 200_000,
          rx_drops_per_s: 120,
          retrans_pkts_per_s: 900,
          retrans_timeouts_per_min: 6,
          impaired_remote_per_min: 2,
        }
      : { device, pkts_per_s: 200_000 },
  );
}

/**
 * The default simulated fleet: one host per diagnosis and per window rule (docs/design.md §6).
 * Single-GPU p5.4xlarge hosts for the per-GPU conditions (cheap to simulate, priced at $6.88/h),
 * 8-GPU p5.48xlarge hosts where peers or the fabric matter, and a p4d.24xlarge (A100, no GPM, no
 * DCGM) for the host whose efficiency cannot be measured.
 */
export const DEFAULT_SIMULATED_FLEET: readonly SimulatedHostSpec[] = [
  ['compute-bound', 'healthy mixed-precision training: SM 86 %, tensor 58 %', ['compute_bound']],
  ['idle', 'no process, nothing running, still billed', ['idle']],
  ['held-idle', 'a process holds 60 % of the memory and runs nothing', ['held_idle']],
  ['fake-load', 'a tiny kernel in a loop: GPU util 100 %, SM active 2 %', ['fake_load']],
  ['input-bound', 'PCIe RX bursts, then the SMs wait for data (SM ≈ 15 %)', ['input_bound']],
  ['cpu-bound', 'SM ≈ 18 % with little PCIe traffic: CPU preprocessing', ['cpu_bound']],
  ['low-occupancy', 'SM 55 %, occupancy 10 %: batches too small', ['low_occupancy']],
  ['tensor-idle', 'SM 55 %, tensor pipes idle: no mixed precision', ['tensor_idle']],
  ['memory-bound', 'SM 78 %, DRAM bandwidth 90 %', ['memory_bound']],
  ['thermal-throttle', 'running at 86–88 °C with thermal clock slowdown', ['thermal_throttle']],
  ['memory-leak', 'memory grows 16 MiB/s towards the board limit', ['memory_leak']],
  ['power-sawtooth', '10 s of compute, 10 s of nothing: data starvation', ['power_sawtooth']],
]
  .map(
    ([name, label, gpus], n): SimulatedHostSpec => ({
      name: name as string,
      label: label as string,
      instance_id: simulatedInstanceId(n + 1),
      instance_type: 'p5.4xlarge',
      model: 'h100',
      gpus: gpus as Behaviour[],
      // Idle billing is judged after 30 minutes of idle (docs/design.md §6).
      ...(name === 'idle' ? { duration_s: IDLE_BILLED_SHOWN_AFTER_S } : {}),
    }),
  )
  .concat([
    {
      name: 'straggler',
      label: '8× H100 in one job; GPU 5 does ≈ 20 % less work, cooler and at lower power',
      instance_id: simulatedInstanceId(13),
      instance_type: 'p5.48xlarge',
      model: 'h100',
      gpus: eight('compute_bound', { index: 5, behaviour: 'straggler' }),
    },
    {
      name: 'efa-drops',
      label: '8× H100, healthy GPUs; EFA device rdmap81s0 drops and retransmits packets',
      instance_id: simulatedInstanceId(14),
      instance_type: 'p5.48xlarge',
      model: 'h100',
      gpus: eight('compute_bound'),
      efa: fabric('rdmap81s0'),
    },
    {
      name: 'link-errors',
      label: '8× H100 healthy; GPU 2 racks up PCIe replays, NVLink CRC errors and corrected ECC errors',
      instance_id: simulatedInstanceId(16),
      instance_type: 'p5.48xlarge',
      model: 'h100',
      gpus: eight('compute_bound'),
      faults: [
        { gpu: 2, counter: 'pcie_replay_count', per_min: 30, start: 120 },
        { gpu: 2, counter: 'nvlink_crc_errors', per_min: 6 },
        { gpu: 2, counter: 'ecc_sbe_volatile', per_min: 4, start: 10 },
      ],
    },
    {
      name: 'counter-reset',
      label: 'old PCIe replays and corrected ECC errors, then a driver reload resets them (not growth)',
      instance_id: simulatedInstanceId(17),
      instance_type: 'p5.4xlarge',
      model: 'h100',
      gpus: ['compute_bound'],
      faults: [
        { gpu: 0, counter: 'pcie_replay_count', per_min: 0, start: 90_000, reset_after_s: 600 },
        { gpu: 0, counter: 'ecc_sbe_volatile', per_min: 0, start: 40_000, reset_after_s: 600 },
      ],
    },
    {
      name: 'power-throttle',
      label: 'healthy training held at the power limit: SW power cap clock slowdown in every sample',
      instance_id: simulatedInstanceId(18),
      instance_type: 'p5.4xlarge',
      model: 'h100',
      gpus: ['power_throttle'],
    },
    {
      name: 'a100-no-profiling',
      label: '8× A100 busy (GPU util 100 %), no GPM and no DCGM: SM activity unmeasured',
      instance_id: simulatedInstanceId(15),
      instance_type: 'p4d.24xlarge',
      model: 'a100',
      gpus: eight('compute_bound'),
    },
  ]);
