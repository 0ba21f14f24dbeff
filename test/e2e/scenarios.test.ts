import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentRuntimeScenario } from '../../bin/scenarios/agent-runtime-scenario';
import { defaultScenarios } from '../../bin/scenarios/catalog';
import type { ScenarioVerdict } from '../../bin/scenarios/judge';
import { runScenarios } from '../../bin/scenarios/run-scenarios';
import type { Scenario } from '../../bin/scenarios/scenario';
import type { RuleId } from '../../lambdas/domain';
import { SILENT_LOG } from '../../lambdas/handlers/log';
import { type FakeEfaSysfs, makeEfaSysfs } from '../fixtures/efa/make-sysfs';
import { type FakeNvmlSettings, fakeNvmlPath, setFakeNvmlEnv } from '../setup/fake-nvml';
import { runCli } from './run-cli';

/** Rules whose findings may replace or quarantine hardware; every other rule must never lead to a decision. */
const HARDWARE_RULES: readonly RuleId[] = ['xid_fatal', 'ecc_dbe', 'gpu_lost', 'row_remap_failure'];

/** A healthy H100 under the fake NVML: util 100 %, GPM SM 86 %, tensor 60 %, one process, no throttle bits. */
const BUSY_H100: FakeNvmlSettings = {
  PRESET: 'p5',
  GPU_COUNT: 2,
  UTIL_GPU: 100,
  SM_ACTIVE: 86,
  TENSOR_ACTIVE: 60,
  PROCESSES: 1,
  CLOCKS_EVENT_REASONS: 0,
};

/** Counter value before the scenario starts: drops and retransmits from long ago, not growth. */
const OLD_COUNT = 5_000_000;

/** EFA devices of the fake sysfs tree (two of a real p5's). */
const EFA_DEVICES = ['rdmap79s0', 'rdmap80s0'] as const;

/** A real-agent scenario on the fake NVML (2 GPUs), with `settings` applied just before the agent opens it. */
function fakeNvmlScenario(
  name: string,
  label: string,
  instanceId: string,
  settings: FakeNvmlSettings,
  labels: Pick<Scenario, 'expect' | 'allow' | 'diagnosis'>,
  efa?: { sysfs: () => FakeEfaSysfs; tick: (sysfs: FakeEfaSysfs, elapsedS: number) => void },
): Scenario {
  let startMs = 0;
  return agentRuntimeScenario({
    name,
    label,
    labels,
    nvmlLibraryPath: fakeNvmlPath(),
    instanceId,
    instanceType: settings.PRESET === 'p4d' ? 'p4d.24xlarge' : 'p5.48xlarge',
    ...(efa ? { efaRoot: efa.sysfs().root } : {}),
    beforeStart: () => setFakeNvmlEnv(settings),
    ...(efa
      ? {
          onTick: (now: Date) => {
            if (startMs === 0) startMs = now.getTime();
            efa.tick(efa.sysfs(), (now.getTime() - startMs) / 1000);
          },
        }
      : {}),
  });
}

describe('the labelled scenario suite through the real local pipeline', () => {
  let out: string;
  let dropping: FakeEfaSysfs;
  let resetting: FakeEfaSysfs;
  let verdicts: Map<string, ScenarioVerdict>;

  /** Real agent runtime against the fake libnvidia-ml.so, and the fake EFA sysfs tree. */
  const liveScenarios = (): Scenario[] => [
    fakeNvmlScenario(
      'live-fake-load',
      'real agent, fake NVML: a tiny kernel, utilization 100 %, GPM SM active 2 %',
      'i-05e1000000000f001',
      { ...BUSY_H100, SM_ACTIVE: 2, TENSOR_ACTIVE: 0 },
      { expect: ['fake_load', 'waste_rate'], diagnosis: 'fake_load' },
    ),
    fakeNvmlScenario(
      'live-tensor-idle',
      'real agent, fake NVML: GPM SM active 55 %, tensor pipes idle',
      'i-05e1000000000f002',
      { ...BUSY_H100, SM_ACTIVE: 55, TENSOR_ACTIVE: 0 },
      { expect: ['tensor_idle'], diagnosis: 'tensor_idle' },
    ),
    fakeNvmlScenario(
      'live-a100-no-profiling',
      'real agent, fake NVML: 2× A100 busy (utilization 90 %), no GPM, no DCGM',
      'i-05e1000000000f003',
      { PRESET: 'p4d', GPU_COUNT: 2, UTIL_GPU: 90, PROCESSES: 1, CLOCKS_EVENT_REASONS: 0 },
      { expect: ['profiling_unavailable'], diagnosis: 'unknown' },
    ),
    fakeNvmlScenario(
      'live-efa-drops',
      'real agent, fake NVML and EFA sysfs: rdmap80s0 drops 40 packets/s and retransmits',
      'i-05e1000000000f004',
      BUSY_H100,
      { expect: ['efa_drops'], diagnosis: 'compute_bound' },
      {
        sysfs: () => dropping,
        tick: (sysfs, s) => {
          for (const d of EFA_DEVICES) {
            sysfs.set(d, 1, 'rx_pkts', Math.floor(200_000 * s));
            sysfs.set(d, 1, 'tx_pkts', Math.floor(200_000 * s));
          }
          sysfs.set('rdmap80s0', 1, 'rx_drops', Math.floor(40 * s));
          sysfs.set('rdmap80s0', 1, 'retrans_pkts', Math.floor(600 * s));
          sysfs.set('rdmap80s0', 1, 'retrans_timeout_events', Math.floor(s / 20));
        },
      },
    ),
    fakeNvmlScenario(
      'live-efa-counter-reset',
      'real agent, fake NVML and EFA sysfs: old drops, then a driver reload resets every counter (not growth)',
      'i-05e1000000000f005',
      BUSY_H100,
      { expect: [], diagnosis: 'compute_bound' },
      {
        sysfs: () => resetting,
        tick: (sysfs, s) => {
          const reloaded = s >= 600;
          for (const d of EFA_DEVICES) {
            sysfs.set(
              d,
              1,
              'rx_pkts',
              reloaded ? Math.floor(200_000 * (s - 600)) : OLD_COUNT + Math.floor(200_000 * s),
            );
            sysfs.set(d, 1, 'rx_drops', reloaded ? 0 : OLD_COUNT);
            sysfs.set(d, 1, 'retrans_pkts', reloaded ? 0 : OLD_COUNT);
          }
        },
      },
    ),
  ];

  beforeAll(async () => {
    // Prepare
    out = await mkdtemp(join(tmpdir(), 'gpu-sentinel-scenarios-'));
    dropping = makeEfaSysfs({ devices: EFA_DEVICES });
    resetting = makeEfaSysfs({ devices: EFA_DEVICES, value: OLD_COUNT });
    // Act
    const list = await runScenarios([...defaultScenarios(), ...liveScenarios()], {
      outDir: out,
      log: SILENT_LOG,
      agentVersion: '0.1.0-test',
    });
    verdicts = new Map(list.map((v) => [v.scenario, v]));
  }, 240_000);

  afterAll(async () => {
    setFakeNvmlEnv({});
    dropping.cleanup();
    resetting.cleanup();
    await rm(out, { recursive: true, force: true });
  });

  it.each([
    ...defaultScenarios().map((s) => s.name),
    'live-fake-load',
    'live-tensor-idle',
    'live-a100-no-profiling',
    'live-efa-drops',
    'live-efa-counter-reset',
  ])('judges %s as labelled: every expected rule, no other, the right diagnosis', (name) => {
    // Assess
    const verdict = verdicts.get(name);
    expect(verdict, name).toBeDefined();
    expect(verdict?.mismatches).toEqual([]);
  });

  it('raises nothing for a healthy compute-bound host, and diagnoses it compute bound', () => {
    // Assess
    const verdict = verdicts.get('compute-bound');
    expect([...(verdict?.observation.fired ?? ['missing'])]).toEqual([]);
    expect([...(verdict?.observation.diagnoses.values() ?? [])]).toEqual(['compute_bound']);
  });

  it('names the dropping EFA port of the fake sysfs tree in the efa_drops alert, not the healthy one', async () => {
    // Prepare
    const alerts = (await readFile(join(out, 'alerts.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { rule: string; instance_id: string; summary: string });

    // Assess
    const efa = alerts.filter((a) => a.rule === 'efa_drops' && a.instance_id === 'i-05e1000000000f004');
    expect(efa.length).toBeGreaterThan(0);
    expect(efa[0]?.summary).toContain('rdmap80s0');
    expect(efa[0]?.summary).not.toContain('rdmap79s0');
  });

  it('never decides a remediation on an efficiency finding; only the hardware captures lead to one', () => {
    // Assess
    const decided = [...verdicts.values()].flatMap((v) =>
      v.observation.decided.map((rule) => [v.scenario, rule]),
    );
    for (const [, rule] of decided) expect(HARDWARE_RULES).toContain(rule);
    expect(new Set(decided.map(([scenario]) => scenario))).toEqual(
      new Set([
        'capture-xid48-63-94',
        'capture-fallen-off-no-xid',
        'capture-gpu-is-lost',
        'capture-xid119-gsp-hang',
      ]),
    );
  });
});

describe('gpu-sentinel scenarios', () => {
  let dir: string;
  const run = (args: string[]) => runCli(['scenarios', ...args]);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-scenarios-cli-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the confusion matrix and exits 0 when every scenario is judged right', async () => {
    // Act
    const { code, stdout } = await run(['--only', 'compute-bound,fake-load']);

    // Assess
    expect(code).toBe(0);
    expect(stdout).toMatch(/^compute-bound +· +· {2}compute_bound ✓$/m);
    expect(stdout).toMatch(/^fake-load +✓ +✓ {2}fake_load ✓$/m);
    expect(stdout).toMatch(/2 scenarios: 2 judged right, 0 wrong/);
  }, 120_000);

  it('exits 1 and names the miss when --rules moves a threshold so a labelled rule cannot fire', async () => {
    // Prepare: SM active must be below 1 % to count as under-utilised, so the 2 % tiny kernel is not fake load
    const rules = join(dir, 'rules.json');
    await writeFile(rules, JSON.stringify({ underutilizedSmActiveBelow: 0.01 }));

    // Act
    const { code, stdout } = await run(['--only', 'fake-load', '--rules', rules]);

    // Assess
    expect(code).toBe(1);
    expect(stdout).toMatch(/fake-load: expected fake_load, not raised/);
  }, 120_000);

  it('refuses a rules file naming an unknown threshold, naming it', async () => {
    // Prepare
    const rules = join(dir, 'bad.json');
    await writeFile(rules, JSON.stringify({ fakeLoadGpuUtilAtLeastt: 0.8 }));

    // Act
    const { code, stderr } = await run(['--only', 'fake-load', '--rules', rules]);

    // Assess
    expect(code).toBe(2);
    expect(stderr).toMatch(/rules file .*bad\.json: .*`fakeLoadGpuUtilAtLeastt`/);
  }, 60_000);
});
