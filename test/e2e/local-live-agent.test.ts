import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_SIMULATED_FLEET, SIMULATED_INSTANCE_ID_PREFIX } from '../../agent/playback/simulate-fleet';
import { runLocalLive } from './local-live';

function jsonl(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('gpu-sentinel local with an NVML library: the real agent runs under local mode end to end', () => {
  let out: string;
  let stdout: string;
  let waste: string;
  let alerts: Record<string, unknown>[];
  let decisions: Record<string, unknown>[];

  beforeAll(async () => {
    // Prepare: the fake libnvidia-ml (8× H100), one GPU busy with a tiny kernel (util 100 %, SM active 2 %), and an
    // Xid 79 delivered through the NVML event set on GPU 5
    out = await mkdtemp(join(tmpdir(), 'gpu-sentinel-live-'));
    // Act
    stdout = await runLocalLive(out, {
      FAKE_NVML_UTIL_GPU: '100',
      FAKE_NVML_SM_ACTIVE: '2',
      FAKE_NVML_XID_EVENTS: '5:79',
    });
    waste = await readFile(join(out, 'waste.csv'), 'utf8');
    alerts = jsonl(await readFile(join(out, 'alerts.jsonl'), 'utf8'));
    decisions = jsonl(await readFile(join(out, 'remediation.jsonl'), 'utf8'));
  }, 120_000);

  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  it('runs the agent against NVML, not the replay', () => {
    expect(stdout).toMatch(/NVML found at .*libnvidia-ml\.so\.1: running the agent/);
  });

  it('costs 8 GPUs at the p5.48xlarge price, wasting 98 % of a tiny-kernel GPU (efficiency from GPM SM activity, not utilization)', () => {
    const [header = '', ...lines] = waste
      .replace(/^\uFEFF/, '')
      .trim()
      .split(/\r?\n/);
    const names = header.split(',');
    const rows = lines
      .map((l) => Object.fromEntries(l.split(',').map((v, i) => [names[i] ?? `${i}`, v])))
      .filter((r) => !r.instance_id?.startsWith(SIMULATED_INSTANCE_ID_PREFIX));
    const n = (r: Record<string, string>, column: string): number => Number(r[column]);
    expect(rows).toHaveLength(8);
    for (const r of rows) {
      expect(r.price_usd_per_hour).toBe('55.04');
      expect(r.efficiency_source).toBe('sm_active');
      expect(n(r, 'efficiency')).toBeCloseTo(0.02, 3);
      if (r.gpu_index === '5') {
        // GPU 5 is broken from its Xid 79 on: those windows are wasted whole
        expect(n(r, 'broken_usd')).toBeGreaterThan(0);
        expect(n(r, 'wasted_usd')).toBeCloseTo(
          n(r, 'held_idle_usd') + n(r, 'underused_usd') + n(r, 'broken_usd'),
          5,
        );
      } else {
        expect(n(r, 'wasted_usd')).toBeCloseTo(n(r, 'cost_usd') * 0.98, 5); // the CSV rounds to micro-dollars
      }
    }
  });

  it('shows the labelled simulated fleet next to the live GPUs', () => {
    expect(stdout).toMatch(
      new RegExp(
        `Simulating ${DEFAULT_SIMULATED_FLEET.length} hosts .*tagged simulated=true, not real machines`,
      ),
    );
    expect(stdout).toMatch(/Simulated fleet \(not real machines; tag simulated=true\):/);
  });

  it('turns the Xid 79 from the NVML event set into a critical alert and a quarantine decision (no Auto Scaling group)', () => {
    const fatal = alerts.find((a) => a.rule === 'xid_fatal' && (a.evidence as { xid?: number }).xid === 79);
    expect(fatal).toMatchObject({ severity: 'critical', gpu_index: 5 });
    expect(decisions).toContainEqual(
      expect.objectContaining({ rule: 'xid_fatal', action: 'quarantine', gpu_index: 5, dry_run: true }),
    );
  });
});
