import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReplayBatches, loadReplayManifest } from '../../../agent/playback/replay';
import { type Batch, parseBatch } from '../../../lambdas/contract';
import { computeLedger, priceFor } from '../../../lambdas/domain';

const MIG = fileURLToPath(new URL('../../fixtures/real/mig/', import.meta.url));
const NOW = new Date('2026-03-10T12:00:00Z');
const H100 = 'i-0a5e00000000000c4';
const A100 = 'i-0a5e00000000000c5';

describe('replaying real MIG scrapes: one window per slice, priced per slice', () => {
  let dir: string;
  let batches: Batch[];

  beforeAll(async () => {
    // Prepare: the H100 (three 1g.10gb) and the A100 (two GPUs, each 3g.40gb + 4g.40gb) captures, 10 min
    dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-mig-'));
    const host = (instance_id: string, instance_type: string, scrape: string) => ({
      instance_id,
      instance_type,
      region: 'us-east-1',
      dcgm_exporter: [join(MIG, scrape)],
    });
    const manifest = join(dir, 'mig.json');
    writeFileSync(
      manifest,
      JSON.stringify({
        window_s: 60,
        duration_s: 600,
        hosts: [
          host(H100, 'p5.48xlarge', 'dcgm-exporter-h100-mig-512.prom'),
          host(A100, 'p4de.24xlarge', 'dcgm-exporter-a100-mig-272.prom'),
        ],
      }),
    );
    // Act
    batches = await buildReplayBatches(await loadReplayManifest(manifest), {
      now: NOW,
      agentVersion: '0.1.0-test',
    });
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const flush = (id: string) =>
    batches
      .filter((b) => b.host.instance_id === id)
      .flatMap((b) => b.windows.filter((w) => w.kind === 'flush'));

  it('sends every window through the contract', () => {
    for (const batch of batches)
      expect(() => parseBatch(JSON.parse(JSON.stringify(batch)), NOW)).not.toThrow();
  });

  it('sends one flush and one horizon window per H100 slice, with its profile, activity and pod, never a whole-GPU window', () => {
    // Prepare
    const last = batches.filter((b) => b.host.instance_id === H100).at(-1);
    // Assess
    expect(
      last?.windows.map((w) => [w.kind, w.gpu.index, w.gpu_instance_id, w.gpu_instance_profile]),
    ).toEqual([
      ['flush', 0, 7, '1g.10gb'],
      ['flush', 0, 8, '1g.10gb'],
      ['flush', 0, 9, '1g.10gb'],
      ['horizon', 0, 7, '1g.10gb'],
      ['horizon', 0, 8, '1g.10gb'],
      ['horizon', 0, 9, '1g.10gb'],
    ]);
    expect(last?.windows[0]?.metrics.gpu_util).toBe(0);
    expect(last?.windows[0]?.k8s).toMatchObject({ namespace: 'model-playground-stg' });
    expect(last?.windows[1]?.k8s).toBeUndefined();
    expect(last?.windows.every((w) => w.processes === undefined)).toBe(true);
  });

  it("prices each slice at the GPU's price share × n/7: the H100's three 1g slices 1/7 each, the A100's 3g + 4g the whole GPU", () => {
    // Prepare
    const cost = (id: string, type: string, keep: (w: Batch['windows'][number]) => boolean) =>
      flush(id)
        .filter(keep)
        .reduce((sum, w) => sum + computeLedger(w, priceFor(type, 'us-east-1')).cost_usd, 0);
    const gpuShare = (type: string, hours: number) => {
      const p = priceFor(type, 'us-east-1');
      return (p.price_usd_per_hour / p.gpu_count) * hours;
    };
    const hours = 600 / 3600;
    // Act
    const slice7 = cost(H100, 'p5.48xlarge', (w) => w.gpu_instance_id === 7);
    const h100 = cost(H100, 'p5.48xlarge', () => true);
    const a100gpu0 = cost(A100, 'p4de.24xlarge', (w) => w.gpu.index === 0);
    // Assess
    expect(flush(H100)).toHaveLength(30);
    expect(slice7).toBeCloseTo(gpuShare('p5.48xlarge', hours) / 7, 10);
    expect(h100).toBeCloseTo((gpuShare('p5.48xlarge', hours) * 3) / 7, 10);
    expect(
      flush(A100)
        .map((w) => w.gpu_instance_profile)
        .slice(0, 4),
    ).toEqual(['3g.40gb', '4g.40gb', '3g.40gb', '4g.40gb']);
    expect(a100gpu0).toBeCloseTo(gpuShare('p4de.24xlarge', hours), 10);
  });
});
