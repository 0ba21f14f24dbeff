import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migComputeShare, migComputeSlices, parseDcgmExporterText } from '../../agent/sources/dcgm-exporter';
import { migSliceReadings } from '../../agent/sources/dcgm-mig';
import { DcgmProfilingSource } from '../../agent/sources/dcgm-profiling';
import { GpuMetricsSchema } from '../../lambdas/contract';

const real = (name: string): string =>
  readFileSync(new URL(`../fixtures/real/mig/${name}`, import.meta.url), 'utf8');

describe('parseDcgmExporterText on real MIG scrapes', () => {
  it('reads an H100 MIG scrape (GR engine activity per GPU_I_ID, pods per slice) instead of refusing it', () => {
    // Act
    const { gpus, malformed, ignored_fields } = parseDcgmExporterText(
      real('dcgm-exporter-h100-mig-512.prom'),
    );

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual([]);
    expect(gpus).toHaveLength(1);
    const [gpu] = gpus;
    expect(gpu?.gpu).toMatchObject({ index: 0, name: 'NVIDIA H100 80GB HBM3', pci_bus_id: '0000:1a:00.0' });
    expect(gpu?.metrics.gpu_util).toBe(0);
    expect(GpuMetricsSchema.safeParse(gpu?.metrics).success).toBe(true);
    expect(
      gpu?.mig_instances?.map((i) => [i.gpu_instance_id, i.gpu_instance_profile, i.gr_engine_active]),
    ).toEqual([
      [7, '1g.10gb', 0],
      [8, '1g.10gb', 0],
      [9, '1g.10gb', 0],
    ]);
    expect(gpu?.mig_instances?.[0]?.compute_share).toBeCloseTo(1 / 7);
    expect(gpu?.mig_instances?.[0]?.labels).toMatchObject({
      namespace: 'model-playground-stg',
      pod: 'text-embedding-predictor-00008-deployment-57946f6c67-vdtjl',
    });
    expect(gpu?.mig_instances?.[1]?.labels).toEqual({});
    // The slices' pods are the slices', not the whole GPU's.
    expect(gpu?.labels).toEqual({});
  });

  it('reads an A30 MIG scrape (4 compute slices per GPU)', () => {
    // Act
    const { gpus } = parseDcgmExporterText(real('dcgm-exporter-a30-mig-317.prom'));

    // Assess
    expect(gpus.map((g) => g.mig_instances?.length)).toEqual([4]);
    expect(gpus[0]?.mig_instances?.[0]?.compute_share).toBeCloseTo(1 / 4);
  });

  it('reads a lower-case metric name and uuid label, two GPUs each split 3g + 4g', () => {
    // Act
    const { gpus, ignored_fields } = parseDcgmExporterText(real('dcgm-exporter-a100-mig-272.prom'));

    // Assess
    expect(ignored_fields).toEqual([]);
    expect(gpus.map((g) => g.gpu.uuid)).toEqual([
      'GPU-ed1353d6-52ba-8793-7230-4d5d3eb68167',
      'GPU-6043e4b2-feaa-8010-34c7-61d1a01576bb',
    ]);
    expect(gpus[0]?.mig_instances?.map((i) => i.compute_share)).toEqual([3 / 7, 4 / 7]);
  });
});

describe('MIG GPU activity', () => {
  it('weights each slice by its compute share: a busy 3g slice and an idle 4g slice make 3/7 of the GPU', () => {
    // Prepare
    const text = [
      'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",modelName="NVIDIA A100-SXM4-80GB",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"} 1',
      'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",modelName="NVIDIA A100-SXM4-80GB",GPU_I_PROFILE="4g.40gb",GPU_I_ID="2"} 0',
      'DCGM_FI_DEV_FB_USED{gpu="0",modelName="NVIDIA A100-SXM4-80GB",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"} 1024',
      'DCGM_FI_DEV_POWER_USAGE{gpu="0",modelName="NVIDIA A100-SXM4-80GB"} 250',
    ].join('\n');
    // Act
    const [gpu] = parseDcgmExporterText(text).gpus;
    // Assess
    expect(gpu?.metrics.gpu_util).toBeCloseTo(3 / 7);
    expect(gpu?.metrics.power_w).toBe(250);
    expect(gpu?.metrics.fb_used_bytes).toBe(1024 * 1024 * 1024);
  });

  it('keeps DCGM_FI_DEV_GPU_UTIL over GR engine activity on a GPU that has both', () => {
    // Prepare
    const text = ['DCGM_FI_DEV_GPU_UTIL{gpu="0"} 40', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"} 0.9'].join(
      '\n',
    );
    // Act / Assess
    expect(parseDcgmExporterText(text).gpus[0]?.metrics.gpu_util).toBe(0.4);
  });

  it.each([
    ['1g.10gb', 7, 1 / 7],
    ['7g.80gb', 7, 1],
    ['1g.10gb+me', 7, 1 / 7],
    ['2g.12gb', 4, 0.5],
    ['weird', 7, undefined],
  ])('gives profile %s a share of its %i slices', (profile, slices, share) => {
    // Act / Assess
    expect(migComputeShare(profile, slices)).toBe(share);
  });

  it('counts 4 compute slices on an A30 and 7 elsewhere', () => {
    expect(migComputeSlices('NVIDIA A30')).toBe(4);
    expect(migComputeSlices('NVIDIA H100 80GB HBM3')).toBe(7);
    expect(migComputeSlices(undefined)).toBe(7);
  });
});

describe("board fields of a MIG GPU that come only on its instances' series", () => {
  const A30 = 'gpu="0",UUID="GPU-9",modelName="NVIDIA A30"';
  const slice = (id: number, pod: string): string =>
    `${A30},GPU_I_PROFILE="1g.6gb",GPU_I_ID="${id}",namespace="default",pod="${pod}"`;

  it("reads temperatures, power, clocks and error counters repeated on every instance as the GPU's", () => {
    // Prepare
    const text = [
      `DCGM_FI_DEV_GPU_TEMP{${slice(3, 'a')}} 50`,
      `DCGM_FI_DEV_GPU_TEMP{${slice(6, 'b')}} 50`,
      `DCGM_FI_DEV_MEMORY_TEMP{${slice(3, 'a')}} 35`,
      `DCGM_FI_DEV_MEMORY_TEMP{${slice(6, 'b')}} 35`,
      `DCGM_FI_DEV_POWER_USAGE{${slice(3, 'a')}} 52.5`,
      `DCGM_FI_DEV_SM_CLOCK{${slice(6, 'b')}} 1440`,
      `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{${slice(3, 'a')}} 0`,
      `DCGM_FI_DEV_THERMAL_VIOLATION{${slice(3, 'a')}} 2000`,
      `DCGM_FI_PROF_GR_ENGINE_ACTIVE{${slice(3, 'a')}} 1`,
      `DCGM_FI_PROF_GR_ENGINE_ACTIVE{${slice(6, 'b')}} 0`,
    ].join('\n');

    // Act
    const { gpus, malformed } = parseDcgmExporterText(text);

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus[0]?.metrics).toEqual({
      gpu_temp_c: 50,
      mem_temp_c: 35,
      power_w: 52.5,
      sm_clock_mhz: 1440,
      ecc_dbe_volatile: 0,
      gpu_util: 0.25,
    });
    expect(gpus[0]?.violation_us).toEqual({ thermal_violation_us_total: 2 });
    expect(GpuMetricsSchema.safeParse(gpus[0]?.metrics).success).toBe(true);
  });

  it('keeps per-instance fields per instance: framebuffer, profiling ratios, utilization', () => {
    // Prepare
    const text = [
      `DCGM_FI_DEV_FB_FREE{${slice(3, 'a')}} 2207`,
      `DCGM_FI_DEV_FB_USED{${slice(3, 'a')}} 3744`,
      `DCGM_FI_PROF_DRAM_ACTIVE{${slice(3, 'a')}} 0.8`,
      `DCGM_FI_DEV_GPU_UTIL{${slice(3, 'a')}} 97`,
    ].join('\n');

    // Act
    const [gpu] = parseDcgmExporterText(text).gpus;

    // Assess: one slice's free memory is not the board's total, one slice's DRAM activity not the board's.
    expect(gpu?.metrics).toEqual({ fb_used_bytes: 3744 * 1024 * 1024 });
    expect(gpu?.mig_instances?.[0]?.fb_used_bytes).toBe(3744 * 1024 * 1024);
  });

  it("prefers the GPU's own series, and leaves a board field absent when its instances disagree", () => {
    // Prepare
    const text = [
      `DCGM_FI_DEV_GPU_TEMP{${A30}} 48`,
      `DCGM_FI_DEV_GPU_TEMP{${slice(3, 'a')}} 50`,
      `DCGM_FI_DEV_POWER_USAGE{${slice(3, 'a')}} 52`,
      `DCGM_FI_DEV_POWER_USAGE{${slice(6, 'b')}} 60`,
    ].join('\n');

    // Act
    const { gpus, malformed } = parseDcgmExporterText(text);

    // Assess
    expect(gpus[0]?.metrics).toEqual({ gpu_temp_c: 48 });
    expect(malformed).toEqual([
      {
        line: 3,
        reason: expect.stringMatching(
          /DCGM_FI_DEV_POWER_USAGE differs across the MIG instances of GPU 0 \(52, 60\)/,
        ),
      },
    ]);
  });
});

describe('MIG slices for one window per slice', () => {
  it('reads the H100 slices of the real scrape (profile, GR activity, the pod of each held slice)', () => {
    // Prepare
    const [gpu] = parseDcgmExporterText(real('dcgm-exporter-h100-mig-512.prom')).gpus;
    // Act
    const slices = gpu === undefined ? undefined : migSliceReadings(gpu);
    // Assess
    expect(
      slices?.map((s) => [s.gpu_instance_id, s.gpu_instance_profile, s.gpu_util, s.k8s?.namespace]),
    ).toEqual([
      [7, '1g.10gb', 0, 'model-playground-stg'],
      [8, '1g.10gb', 0, undefined],
      [9, '1g.10gb', 0, expect.any(String)],
    ]);
  });

  it.each([
    ['a slice without a profile', 'GPU_I_ID="1"'],
    ['a profile that is not a MIG profile', 'GPU_I_ID="1",GPU_I_PROFILE="whole"'],
  ])('measures the GPU whole for %s (nothing invented)', (_case, labels) => {
    // Prepare
    const text = `DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",modelName="NVIDIA A100-SXM4-80GB",${labels}} 0.5`;
    const [gpu] = parseDcgmExporterText(text).gpus;
    // Act / Assess
    expect(gpu === undefined ? 'no gpu' : migSliceReadings(gpu)).toBeUndefined();
  });

  it('gives a live host its slices from the dcgm profiling source, matched by GPU UUID', async () => {
    // Prepare
    const body = real('dcgm-exporter-a100-mig-272.prom');
    const source = new DcgmProfilingSource({
      url: 'http://127.0.0.1:9400/metrics',
      fetch: (async () => new Response(body, { status: 200 })) as typeof fetch,
    });
    await source.open({
      clock: () => new Date('2026-03-10T12:00:00Z'),
      emit: () => {},
      warn: () => {},
      timers: { setInterval: () => 0, clearInterval: () => {} },
    });
    // Act
    const second = source.migSlices({ index: 0, uuid: 'GPU-6043e4b2-feaa-8010-34c7-61d1a01576bb' });
    const none = source.migSlices({ index: 0, uuid: 'GPU-00000000-0000-0000-0000-000000000000' });
    await source.close();
    // Assess
    expect(second?.map((s) => s.gpu_instance_profile)).toEqual(['3g.40gb', '4g.40gb']);
    expect(none).toBeUndefined();
  });
});
