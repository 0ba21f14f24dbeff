import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SIMULATED_FLEET, SIMULATED_INSTANCE_ID_PREFIX } from '../../agent/playback/simulate-fleet';
import { runCli } from './run-cli';

describe('gpu-sentinel local --only simulation --rules FILE', () => {
  let dir: string;
  let run: { code: number; stdout: string };
  let alerts: { rule: string; instance_id: string }[];

  beforeAll(async () => {
    // Prepare: a deployment whose tensor-idle threshold is 0, so tensor pipes are never "idle"
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-sim-'));
    const rules = join(dir, 'rules.json');
    await writeFile(rules, JSON.stringify({ tensorIdleBelow: 0 }));
    // Act
    run = await runCli(['local', '--out', join(dir, 'out'), '--only', 'simulation', '--rules', rules]);
    alerts = (await readFile(join(dir, 'out', 'alerts.jsonl'), 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { rule: string; instance_id: string });
  }, 120_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('feeds only the simulated fleet: no replay, no NVML, every alert from a simulated host', () => {
    // Assess
    expect(run.code).toBe(0);
    expect(run.stdout).not.toMatch(/replaying|NVML found/);
    expect(run.stdout).toContain(`Simulating ${DEFAULT_SIMULATED_FLEET.length} hosts`);
    expect(alerts.length).toBeGreaterThan(0);
    expect(alerts.every((a) => a.instance_id.startsWith(SIMULATED_INSTANCE_ID_PREFIX))).toBe(true);
  });

  it('judges with the thresholds of the rules file: tensor_idle never fires, the other rules still do', () => {
    // Assess
    expect(alerts.map((a) => a.rule)).not.toContain('tensor_idle');
    expect(alerts.map((a) => a.rule)).toEqual(
      expect.arrayContaining(['fake_load', 'memory_bound', 'straggler']),
    );
  });
});

describe('gpu-sentinel local, refused options', () => {
  it('exits 1 when --only live finds no NVML, running nothing', async () => {
    // Act
    const dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-live-'));
    const run = await runCli([
      'local',
      '--out',
      dir,
      '--only',
      'live',
      '--nvml-lib',
      join(dir, 'no-such-libnvidia-ml.so'),
    ]);
    await rm(dir, { recursive: true, force: true });

    // Assess
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/--only live: no usable NVML at .*no-such-libnvidia-ml\.so/);
  }, 60_000);

  it('exits 2 naming the threshold when the rules file gives a value outside its range', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-rules-'));
    const rules = join(dir, 'rules.json');
    await writeFile(rules, JSON.stringify({ wasteRateAtLeast: 7 }));

    // Act
    const run = await runCli(['local', '--out', join(dir, 'out'), '--only', 'simulation', '--rules', rules]);
    await rm(dir, { recursive: true, force: true });

    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/rules file .*rules\.json: Expected `wasteRateAtLeast` to be a number/);
  }, 60_000);
});
