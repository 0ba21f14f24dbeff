import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../bin/commands/report';
import { priceFor, type WasteReport } from '../../lambdas/domain';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MIG = join(ROOT, 'test/fixtures/real/mig');
const H100 = 'i-0a5e00000000000c4';
const A100 = 'i-0a5e00000000000c5';
const DURATION_S = 1800;

describe('gpu-sentinel local --replay of real MIG scrapes, then report --by gpu', () => {
  let dir: string;
  let db: string;
  let report: WasteReport;
  let lineItems: Record<string, string>[];
  let startedMs: number;

  const run = async (by: 'gpu', format: 'json' | 'csv'): Promise<string> => {
    let out = '';
    // The replay ends at the CLI's clock: a span around it, whatever the day.
    const from = new Date(startedMs - 2 * DURATION_S * 1000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const code = await runReportCommand({ db, by, format, from, to }, (s) => {
      out += s;
    });
    expect(code).toBe(0);
    return out;
  };

  beforeAll(async () => {
    // Prepare: the H100 (three 1g.10gb slices) and the A100 (two GPUs, each 3g.40gb + 4g.40gb)
    startedMs = Date.now();
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-mig-e2e-'));
    db = join(dir, 'store.duckdb');
    const manifest = join(dir, 'mig.json');
    const host = (instance_id: string, instance_type: string, scrape: string) => ({
      instance_id,
      instance_type,
      region: 'us-east-1',
      lifecycle: 'on-demand',
      tags: { team: 'inference' },
      dcgm_exporter: [join(MIG, scrape)],
    });
    await writeFile(
      manifest,
      JSON.stringify({
        window_s: 60,
        duration_s: DURATION_S,
        hosts: [
          host(H100, 'p5.48xlarge', 'dcgm-exporter-h100-mig-512.prom'),
          host(A100, 'p4de.24xlarge', 'dcgm-exporter-a100-mig-272.prom'),
        ],
      }),
    );
    // Act: the replay as a user runs it (real CLI, loopback HTTP, DuckDB), then the report
    await promisify(execFile)(
      process.execPath,
      [
        join(ROOT, 'bin/gpu-sentinel.mjs'),
        'local',
        '--replay',
        manifest,
        '--only',
        'captures',
        '--out',
        join(dir, 'out'),
        '--db',
        db,
        '--no-nvml',
      ],
      { cwd: ROOT, env: { ...process.env, GPU_SENTINEL_LOG_LEVEL: 'error' }, maxBuffer: 16 * 1024 * 1024 },
    );
    report = JSON.parse(await run('gpu', 'json')) as WasteReport;
    lineItems = parse(await run('gpu', 'csv'), { bom: true, columns: true }) as Record<string, string>[];
  }, 180_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const gpuDollars = (type: string, gpus: number) => {
    const p = priceFor(type, 'us-east-1');
    return (p.price_usd_per_hour / p.gpu_count) * gpus * (DURATION_S / 3600);
  };

  it('shows one group per slice, named with its instance id and profile', () => {
    expect(report.groups.map((g) => g.key).sort()).toEqual(
      [
        `${H100}:0/gi7 1g.10gb`,
        `${H100}:0/gi8 1g.10gb`,
        `${H100}:0/gi9 1g.10gb`,
        `${A100}:0/gi1 3g.40gb`,
        `${A100}:0/gi2 4g.40gb`,
        `${A100}:1/gi1 3g.40gb`,
        `${A100}:1/gi2 4g.40gb`,
      ].sort(),
    );
  });

  it("prices each slice at its compute share, a GPU's slices summing to the GPU's dollars", () => {
    // Prepare
    const cost = (prefix: string) =>
      report.groups.filter((g) => g.key.startsWith(prefix)).reduce((sum, g) => sum + g.cost_usd, 0);
    // Assess: 1g of 7 each on the H100; 3g + 4g = the whole A100
    expect(report.groups.find((g) => g.key === `${H100}:0/gi8 1g.10gb`)?.cost_usd).toBeCloseTo(
      gpuDollars('p5.48xlarge', 1) / 7,
      6,
    );
    expect(cost(`${H100}:0/`)).toBeCloseTo((gpuDollars('p5.48xlarge', 1) * 3) / 7, 6);
    expect(cost(`${A100}:0/`)).toBeCloseTo(gpuDollars('p4de.24xlarge', 1), 6);
    expect(cost(`${A100}:1/gi1`)).toBeCloseTo((gpuDollars('p4de.24xlarge', 1) * 3) / 7, 6);
  });

  it('writes the line items CSV one row per slice and day with its instance id and profile', () => {
    // The replay ends at the clock: a run near midnight UTC spans two days, so one row per slice a day
    const rows = lineItems.filter((r) => r.instance_id === H100);
    const days = [...new Set(rows.map((r) => r.day))];
    expect(days.length).toBeGreaterThanOrEqual(1);
    for (const day of days) {
      expect(
        rows
          .filter((r) => r.day === day)
          .map((r) => [r.gpu_index, r.gpu_instance_id, r.gpu_instance_profile]),
      ).toEqual([
        ['0', '7', '1g.10gb'],
        ['0', '8', '1g.10gb'],
        ['0', '9', '1g.10gb'],
      ]);
    }
  });
});
