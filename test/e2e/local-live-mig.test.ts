import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLocalLive } from './local-live';

/** The live agent's host in local mode (the simulated fleet's hosts are `i-05e…`). */
const LIVE = 'i-00000000000000000';

describe('gpu-sentinel local with an NVML library and an H100 in MIG mode: the agent measures and prices each slice', () => {
  let out: string;
  let rows: Record<string, string>[];

  beforeAll(async () => {
    // Prepare: the fake libnvidia-ml (8× H100), GPU 3 in MIG mode: instance 1 3g.40gb (SM active 60 %),
    // 5 2g.20gb (30 %), 6 2g.20gb (idle); the other GPUs at SM active 40 %
    out = await mkdtemp(join(tmpdir(), 'gpu-sentinel-live-mig-'));
    // Act
    await runLocalLive(out, { FAKE_NVML_MIG_GPU: '3', FAKE_NVML_UTIL_GPU: '50', FAKE_NVML_SM_ACTIVE: '40' });
    const csv = await readFile(join(out, 'waste.csv'), 'utf8');
    rows = (parse(csv, { bom: true, columns: true }) as Record<string, string>[]).filter(
      (r) => r.instance_id === LIVE,
    );
  }, 120_000);

  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  it('writes one waste row per slice of the MIG GPU, with its instance id and profile, and one per other GPU', () => {
    expect(rows.map((r) => [r.gpu_index, r.gpu_instance_id, r.gpu_instance_profile]).sort()).toEqual(
      [
        ['0', '', ''],
        ['1', '', ''],
        ['2', '', ''],
        ['3', '1', '3g.40gb'],
        ['3', '5', '2g.20gb'],
        ['3', '6', '2g.20gb'],
        ['4', '', ''],
        ['5', '', ''],
        ['6', '', ''],
        ['7', '', ''],
      ].sort(),
    );
  });

  it('prices each slice at its compute share of the GPU and judges it by its own SM activity', () => {
    // Prepare
    const n = (r: Record<string, string> | undefined, column: string): number => Number(r?.[column]);
    const whole = rows.find((r) => r.gpu_index === '2');
    const slice = (id: string) => rows.find((r) => r.gpu_index === '3' && r.gpu_instance_id === id);
    // Assess: 3/7 and 2/7 of a GPU's hours at the p5.48xlarge price
    expect(n(slice('1'), 'gpu_hours')).toBeCloseTo((n(whole, 'gpu_hours') * 3) / 7, 5);
    expect(n(slice('5'), 'gpu_hours')).toBeCloseTo((n(whole, 'gpu_hours') * 2) / 7, 5);
    for (const id of ['1', '5', '6']) {
      expect(slice(id)?.price_usd_per_hour).toBe('55.04');
      expect(slice(id)?.efficiency_source).toBe('sm_active');
    }
    expect(n(slice('1'), 'efficiency')).toBeCloseTo(0.6, 3);
    expect(n(slice('5'), 'efficiency')).toBeCloseTo(0.3, 3);
    expect(n(whole, 'efficiency')).toBeCloseTo(0.4, 3);
    // The idle slice is wasted whole, as idle
    expect(n(slice('6'), 'efficiency')).toBe(0);
    expect(n(slice('6'), 'idle_usd')).toBeCloseTo(n(slice('6'), 'cost_usd'), 6);
    expect(n(slice('6'), 'wasted_usd')).toBeCloseTo(n(slice('6'), 'cost_usd'), 6);
  });
});
