import { playBatches } from '../../agent/playback/playback';
import { buildReplayBatches, loadReplayManifest } from '../../agent/playback/replay';
import {
  DEFAULT_SIMULATED_FLEET,
  IDLE_BILLED_SHOWN_AFTER_S,
  type SimulatedHostSpec,
  simulatedInstanceId,
  simulatedPlaybackHost,
} from '../../agent/playback/simulate-fleet';
import { BUNDLED_REPLAY_MANIFEST, DETECTION_REPLAY_MANIFEST } from '../commands/paths';
import type { Scenario } from './scenario';

/**
 * The labelled scenario suite: the default simulated fleet (one host per diagnosis and window rule)
 * and the bundled real kernel-log captures, each with what the rules of docs/design.md §6 say the
 * pipeline must make of it.
 */

/**
 * Flush window of simulated scenario hosts, s. The agent flushes every 10 s; a simulated host
 * flushes every 5 minutes so a 20-minute scenario is 4 batches (ingest, not simulation, is what a
 * run spends its time on). The horizon each batch carries is the agent's trailing 15 minutes
 * either way, so the window rules judge the same numbers.
 */
export const SCENARIO_FLUSH_S = 300;

/** A scenario's labels, without its host and play. */
export type ScenarioLabels = Pick<
  Scenario,
  'expect' | 'allow' | 'diagnosis' | 'diagnosis_gpus' | 'remediate'
>;

/**
 * What each host of the default simulated fleet must raise. Waste ≥ 50 % of the price
 * (`waste_rate`) is expected where SM activity is far below half (idle, held idle, fake load,
 * input bound, CPU bound), allowed where it is near (the sawtooth's ≈ 43 %).
 */
export const FLEET_LABELS: Readonly<Record<string, ScenarioLabels>> = {
  'compute-bound': { expect: [], diagnosis: 'compute_bound' },
  idle: { expect: ['idle_billed', 'waste_rate'], diagnosis: 'idle' },
  'held-idle': { expect: ['waste_rate'], diagnosis: 'held_idle' },
  'fake-load': { expect: ['fake_load', 'waste_rate'], diagnosis: 'fake_load' },
  'input-bound': {
    expect: ['input_bound', 'waste_rate'],
    allow: ['power_sawtooth'],
    diagnosis: 'input_bound',
  },
  'cpu-bound': { expect: ['cpu_bound', 'waste_rate'], diagnosis: 'cpu_bound' },
  'low-occupancy': { expect: ['low_occupancy'], diagnosis: 'low_occupancy' },
  'tensor-idle': { expect: ['tensor_idle'], diagnosis: 'tensor_idle' },
  'memory-bound': { expect: ['memory_bound'], diagnosis: 'memory_bound' },
  'thermal-throttle': { expect: ['thermal_throttle'], diagnosis: 'throttled' },
  'power-throttle': { expect: ['power_throttle'], diagnosis: 'throttled' },
  'memory-leak': { expect: ['memory_pressure'], diagnosis: 'compute_bound' },
  'power-sawtooth': { expect: ['power_sawtooth'], allow: ['waste_rate'] },
  straggler: { expect: ['straggler'], diagnosis: 'compute_bound', diagnosis_gpus: [0, 1, 2, 3, 4, 6, 7] },
  'efa-drops': { expect: ['efa_drops'], diagnosis: 'compute_bound' },
  'link-errors': {
    expect: ['pcie_replay_rate', 'nvlink_crc_rate', 'ecc_sbe_rate'],
    diagnosis: 'compute_bound',
  },
  'counter-reset': { expect: [], diagnosis: 'compute_bound' },
  'a100-no-profiling': { expect: ['profiling_unavailable'], diagnosis: 'unknown' },
};

/**
 * A scenario that plays a simulated host through the agent's own loop (`playBatches`): 1 s polls,
 * one flush every {@link SCENARIO_FLUSH_S}, the agent's 15-minute horizon, over the scenario's span
 * (or the host's own `duration_s`, ending at the same time).
 *
 * @param spec - the simulated host
 * @param labels - what it must raise
 */
export function simulatedScenario(spec: SimulatedHostSpec, labels: ScenarioLabels): Scenario {
  return {
    name: spec.name,
    label: `${spec.label} (simulated)`,
    instance_id: spec.instance_id,
    ...labels,
    async play(ctx) {
      const from =
        spec.duration_s === undefined ? ctx.from : new Date(ctx.to.getTime() - spec.duration_s * 1000);
      const host = simulatedPlaybackHost(spec, {
        seed: ctx.seed,
        startMs: from.getTime(),
        hostNumber: ctx.hostNumber,
        agentVersion: ctx.agentVersion,
      });
      await ctx.send(await playBatches(host, { from, to: ctx.to, flushIntervalS: SCENARIO_FLUSH_S }));
    },
  };
}

/**
 * A scenario that replays one host of a replay manifest (through the agent's loop, see
 * `buildReplayBatches`), its span ending at the scenario's end.
 *
 * @param name - scenario name
 * @param label - what the capture shows
 * @param manifestPath - the manifest
 * @param instanceId - the manifest host to replay
 * @param labels - what it must raise
 */
export function replayScenario(
  name: string,
  label: string,
  manifestPath: string,
  instanceId: string,
  labels: ScenarioLabels,
): Scenario {
  return {
    name,
    label,
    instance_id: instanceId,
    ...labels,
    async play(ctx) {
      const manifest = await loadReplayManifest(manifestPath);
      const hosts = manifest.hosts.filter((h) => h.host.instance_id === instanceId);
      if (hosts.length === 0)
        throw new RangeError(`Expected host ${instanceId} in ${manifestPath}, found none`);
      await ctx.send(
        await buildReplayBatches({ ...manifest, hosts }, { now: ctx.to, agentVersion: ctx.agentVersion }),
      );
    },
  };
}

/** One scenario per host of the default simulated fleet, labelled by {@link FLEET_LABELS}. */
export function simulatedFleetScenarios(): Scenario[] {
  return DEFAULT_SIMULATED_FLEET.map((spec) => {
    const labels = FLEET_LABELS[spec.name];
    if (!labels) throw new RangeError(`Expected labels for simulated host ${spec.name}, found none`);
    return simulatedScenario(spec, labels);
  });
}

/**
 * The bundled real kernel-log captures as scenarios: the Xid 48 → 63 → 94 host must raise
 * `xid_fatal` and may be remediated (a lone double-bit ECC error reboots it, as NVIDIA's Xid catalog
 * resets first); the host with only application faults (Xid 13, 43) raises an
 * informational `xid_app` notice (an application fault, not a hardware one) and is never replaced;
 * the EKS p5 scrape (no process count, GPU 0 held by a vLLM pod) raises `idle_billed` for GPUs 1–7
 * only — the pod's GPU is held idle, not idle.
 */
export function captureScenarios(manifestPath: string = BUNDLED_REPLAY_MANIFEST): Scenario[] {
  return [
    replayScenario(
      'capture-xid48-63-94',
      'real kernel log: uncorrectable ECC (Xid 48), row remap (63), contained error (94)',
      manifestPath,
      'i-0a5e00000000000b1',
      { expect: ['xid_fatal'], remediate: ['xid_fatal'] },
    ),
    replayScenario(
      'capture-p5-vllm-held',
      'real dcgm-exporter scrape of an EKS p5: GPU 0 held idle by a vLLM pod, GPUs 1–7 idle and allocated to no pod',
      manifestPath,
      'i-0a5e00000000000a1',
      {
        expect: ['idle_billed', 'waste_rate', 'profiling_unavailable'],
        diagnosis: 'idle',
        diagnosis_gpus: [1, 2, 3, 4, 5, 6, 7],
      },
    ),
    replayScenario(
      'capture-xid13-43',
      'real kernel log: 629 Xid 13 and 7 Xid 43, application faults only',
      manifestPath,
      'i-0a5e00000000000b2',
      { expect: ['xid_app'] },
    ),
  ];
}

/**
 * Edges of the rules, as simulated hosts outside the default fleet: a horizon shorter than the
 * rules' minimum span judges nothing (4 minutes of fake load raise no alert), and an idle A100 with
 * no profiling source is still found idle and billed (from GPU util, its upper bound on SM activity).
 */
export function edgeScenarios(): Scenario[] {
  return [
    simulatedScenario(
      {
        name: 'short-horizon',
        label: 'a tiny kernel for only 4 minutes: shorter than the 5 minutes a rule needs to judge',
        instance_id: simulatedInstanceId(32),
        instance_type: 'p5.4xlarge',
        model: 'h100',
        gpus: ['fake_load'],
        duration_s: SHORT_HORIZON_S,
      },
      { expect: [] },
    ),
    simulatedScenario(
      {
        name: 'a100-idle',
        label: '8× A100 with nothing running and no profiling source, for 35 minutes',
        instance_id: simulatedInstanceId(33),
        instance_type: 'p4d.24xlarge',
        model: 'a100',
        gpus: Array.from({ length: 8 }, () => 'idle' as const),
        duration_s: IDLE_BILLED_SHOWN_AFTER_S,
      },
      { expect: ['idle_billed', 'waste_rate', 'profiling_unavailable'], diagnosis: 'idle' },
    ),
  ];
}

/**
 * Real-world detection (docs/detection.md), on real captures: a GPU that fell off the bus with
 * no Xid line, and a DGX A100 whose only word is `NV_ERR_GPU_IS_LOST` (no PCI id: the instance),
 * each must raise `gpu_lost` and may be replaced; a GPU whose GSP hangs (Xid 119, printed five times
 * over six minutes, never reset) must raise `xid_fatal` asking for a reset, not a replacement; an H100
 * in MIG mode (a real scrape with only per-slice GR engine activity) is measured, found idle and
 * priced, no longer refused.
 */
export function detectionScenarios(manifestPath: string = DETECTION_REPLAY_MANIFEST): Scenario[] {
  return [
    replayScenario(
      'capture-fallen-off-no-xid',
      'real kernel log: a GPU fell off the bus with no Xid line, then its probe failed',
      manifestPath,
      'i-0a5e00000000000c1',
      { expect: ['gpu_lost'], remediate: ['gpu_lost'] },
    ),
    replayScenario(
      'capture-gpu-is-lost',
      'real kernel log of a DGX A100: only "GPU lost from the bus [NV_ERR_GPU_IS_LOST]", no PCI id',
      manifestPath,
      'i-0a5e00000000000c2',
      { expect: ['gpu_lost'], remediate: ['gpu_lost'] },
    ),
    replayScenario(
      'capture-xid119-gsp-hang',
      'real kernel log: GSP RPC timeouts (Xid 119) on one GPU for six minutes, never reset: reset, not replace',
      manifestPath,
      'i-0a5e00000000000c3',
      { expect: ['xid_fatal'], remediate: ['xid_fatal'] },
    ),
    replayScenario(
      'capture-h100-mig',
      'real dcgm-exporter scrape of an H100 in MIG mode: three 1g.10gb slices, one window each; the free idle one billed',
      manifestPath,
      'i-0a5e00000000000c4',
      { expect: ['idle_billed', 'profiling_unavailable'], diagnosis: 'idle', diagnosis_gpus: ['0/gi8'] },
    ),
  ];
}

/** Span of the short-horizon edge, s: under the rules' 5-minute minimum horizon. */
export const SHORT_HORIZON_S = 240;

/** The whole default suite: the simulated fleet, the edges, the real captures, then the detection captures. */
export function defaultScenarios(): Scenario[] {
  return [...simulatedFleetScenarios(), ...edgeScenarios(), ...captureScenarios(), ...detectionScenarios()];
}
