import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { buildReplayBatches, loadReplayManifest } from '../../agent/playback/replay';
import { parseDcgmExporterText } from '../../agent/sources/dcgm-exporter';
import { migSliceReadings } from '../../agent/sources/dcgm-mig';
import { workloadsFromDcgm } from '../../agent/sources/dcgm-workload';
import { GpuMetricsSchema, parseBatch } from '../../lambdas/contract';

/**
 * Real dcgm-exporter scrapes from public sources (`test/fixtures/real/dcgm/README.md` gives each one's
 * URL): what a GPU SRE reads from each one — which GPUs, which metrics (and which are absent), which
 * pod holds which GPU or MIG slice — is what the reader must give, nothing more.
 */
const DIR = new URL('../fixtures/real/dcgm/', import.meta.url);
const FILES = readdirSync(DIR).filter((f) => f.endsWith('.prom'));
const read = (name: string): string => readFileSync(new URL(name, DIR), 'utf8');
const parse = (name: string) => parseDcgmExporterText(read(name));
const MiB = 1024 * 1024;

describe('every real dcgm-exporter scrape', () => {
  it('holds at least 8 files, each listed in the README with its SHA-256 prefix', () => {
    // Prepare
    const readme = read('README.md');

    // Act / Assess
    expect(FILES.length).toBeGreaterThanOrEqual(8);
    for (const file of FILES) {
      const sha = createHash('sha256')
        .update(readFileSync(new URL(file, DIR)))
        .digest('hex')
        .slice(0, 16);
      expect(readme, file).toContain(`\`${file}\``);
      expect(readme, `${file} ${sha}`).toContain(`${file.replace(/\.prom$/, '')} ${sha}`);
    }
  });

  it.each(FILES)('%s: every GPU reading fits the contract and no value is invented', (file) => {
    // Act
    const { gpus } = parse(file);

    // Assess
    expect(gpus.length).toBeGreaterThan(0);
    for (const g of gpus) {
      expect(GpuMetricsSchema.safeParse(g.metrics).success).toBe(true);
      // Nothing here exports SM activity or occupancy: they stay absent, never filled from utilization.
      expect(g.metrics.sm_active).toBeUndefined();
      expect(g.metrics.sm_occupancy).toBeUndefined();
    }
  });
});

describe('a real scrape saved with other line endings', () => {
  it.each([
    ['CRLF line endings', (t: string) => t.replaceAll('\n', '\r\n')],
    ['a UTF-8 byte-order mark', (t: string) => `\uFEFF${t}`],
    [
      'no HELP/TYPE lines and no final newline',
      (t: string) =>
        t
          .split('\n')
          .filter((l) => !l.startsWith('#'))
          .join('\n')
          .trimEnd(),
    ],
  ])('reads the L4 scrape the same with %s', (_case, rewrite) => {
    // Prepare
    const text = read('dcgm-exporter-l4-aws-kops.prom');

    // Act
    const rewritten = parseDcgmExporterText(rewrite(text));

    // Assess
    expect(rewritten.malformed).toEqual([]);
    expect(rewritten.gpus).toEqual(parseDcgmExporterText(text).gpus);
  });
});

describe('real single-GPU scrapes of the dcgm-exporter 4.x default counters', () => {
  it('reads an idle L4 on AWS (kops, g6): 16 W at idle clocks, no memory sensor, no pod', () => {
    // Act
    const { gpus, malformed, ignored_fields } = parse('dcgm-exporter-l4-aws-kops.prom');

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus).toEqual([
      {
        gpu: {
          index: 0,
          uuid: 'GPU-c2f76b33-7953-256e-8f33-1343419b1a1c',
          name: 'NVIDIA L4',
          pci_bus_id: '0000:31:00.0',
        },
        metrics: {
          sm_clock_mhz: 210,
          mem_clock_mhz: 405,
          gpu_temp_c: 31,
          power_w: 16.365,
          pcie_replay_count: 0,
          gpu_util: 0,
          mem_copy_util: 0,
          fb_used_bytes: 0,
          // used 0 + free 22563 + reserved 470 MiB: the L4's 23033 MiB
          fb_total_bytes: 23033 * MiB,
          remapped_rows_failure: false,
          tensor_active: 0,
          dram_active: 0,
          pcie_tx_bytes_per_s: 112603,
          pcie_rx_bytes_per_s: 17544,
        },
        hostname: 'i-030791dc5a37cd257',
        driver_version: '580.105.08',
        labels: {},
      },
    ]);
    expect(ignored_fields).toEqual(
      expect.arrayContaining(['DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION', 'DCGM_FI_DEV_VGPU_LICENSE_STATUS']),
    );
  });

  it('reads an idle L40S (UpCloud, driver 595): 35.7 W, 45 GiB free, DRAM barely active', () => {
    // Act
    const { gpus, malformed } = parse('dcgm-exporter-l40s-upcloud.prom');

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus).toHaveLength(1);
    expect(gpus[0]).toMatchObject({
      gpu: { name: 'NVIDIA L40S', pci_bus_id: '0000:00:07.0' },
      hostname: 'gpu1-wl8sg',
      driver_version: '595.58.03',
      labels: {},
    });
    expect(gpus[0]?.metrics).toEqual({
      sm_clock_mhz: 210,
      mem_clock_mhz: 405,
      gpu_temp_c: 32,
      power_w: 35.686,
      pcie_replay_count: 0,
      gpu_util: 0,
      mem_copy_util: 0,
      fb_used_bytes: 0,
      fb_total_bytes: (45459 + 608) * MiB,
      remapped_rows_failure: false,
      tensor_active: 0,
      dram_active: 0.000131,
      pcie_tx_bytes_per_s: 175084,
      pcie_rx_bytes_per_s: 19831,
    });
  });

  it('reads a busy T4 (Ericsson CCD, no HELP/TYPE lines): 91 % util, 74 °C, 5 GiB used', () => {
    // Act
    const { gpus, malformed } = parse('dcgm-exporter-t4-busy-ericsson.prom');

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus.map((g) => g.gpu.name)).toEqual(['Tesla T4']);
    expect(gpus[0]?.metrics).toMatchObject({
      gpu_util: 0.91,
      mem_copy_util: 0.73,
      gpu_temp_c: 74,
      power_w: 68.244,
      fb_used_bytes: 5120 * MiB,
      fb_total_bytes: (5120 + 9791 + 447) * MiB,
      tensor_active: 0.005822,
      dram_active: 0.092781,
      sm_clock_mhz: 660,
    });
    // A T4 has GDDR6: DCGM's memory temperature of 0 is no reading.
    expect(gpus[0]?.metrics.mem_temp_c).toBeUndefined();
    expect(gpus[0]?.driver_version).toBe('590.48.01');
  });

  it('reads a vGPU guest (GRID A100-40C on VMware VKS): util and memory, but no power and no temperature', () => {
    // Act
    const { gpus, malformed } = parse('dcgm-exporter-grid-a100-40c-vgpu-vks.prom');

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus).toHaveLength(1);
    expect(gpus[0]?.gpu).toEqual({
      index: 0,
      uuid: 'GPU-0946f70c-659b-4c39-8b78-7e7600000000',
      name: 'GRID A100-40C',
      pci_bus_id: '0000:03:00.0',
    });
    expect(gpus[0]?.metrics).toEqual({
      sm_clock_mhz: 1410,
      mem_clock_mhz: 1215,
      gpu_util: 0,
      mem_copy_util: 0,
      fb_used_bytes: 0,
      fb_total_bytes: (37739 + 3220) * MiB,
    });
  });

  it('reads an RTX 4000 Ada on Akamai LKE held by a pod, with err_code/err_msg XID and an empty pod_uid', () => {
    // Act
    const { gpus, malformed, ignored_fields } = parse('dcgm-exporter-rtx4000ada-lke-pod.prom');
    const { held, dropped } = workloadsFromDcgm(gpus);

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus).toHaveLength(1);
    expect(gpus[0]?.gpu.name).toBe('NVIDIA RTX 4000 Ada Generation');
    expect(gpus[0]?.labels).toEqual({
      container: 'cuda',
      namespace: 'default',
      pod: 'cuda-75454ffb9f-8ljq7',
    });
    expect(held).toEqual([
      {
        gpu: expect.objectContaining({ uuid: 'GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c' }),
        k8s: { namespace: 'default', pod: 'cuda-75454ffb9f-8ljq7', container: 'cuda' },
      },
    ]);
    expect(dropped).toEqual([]);
    expect(gpus[0]?.metrics).toMatchObject({
      power_w: 40.979,
      gpu_temp_c: 48,
      sm_clock_mhz: 2310,
      gpu_util: 0,
      fb_used_bytes: MiB,
      fb_total_bytes: (1 + 20015 + 457) * MiB,
      dram_active: 0.003074,
      pcie_tx_bytes_per_s: 78398480,
    });
    expect(gpus[0]?.metrics.mem_temp_c).toBeUndefined();
    // The XID series (last XID 0, "No Error") is read by the kernel-log source, not from here.
    expect(ignored_fields).toContain('DCGM_FI_DEV_XID_ERRORS');
  });
});

describe('real multi-GPU and MIG scrapes', () => {
  it('reads 4 V100s (issue excerpt, dcgm-exporter 3.x labels without pci_bus_id)', () => {
    // Act
    const { gpus, malformed, ignored_fields } = parse('dcgm-exporter-v100-sxm2-x4-issue250.prom');

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual(['DCGM_FI_DEV_POWER_MGMT_LIMIT']);
    expect(gpus.map((g) => [g.gpu.index, g.gpu.name, g.gpu.pci_bus_id, g.hostname])).toEqual([
      [0, 'Tesla V100-SXM2-32GB', undefined, 'r6i3n0'],
      [1, 'Tesla V100-SXM2-32GB', undefined, 'r6i3n0'],
      [2, 'Tesla V100-SXM2-32GB', undefined, 'r6i3n0'],
      [3, 'Tesla V100-SXM2-32GB', undefined, 'r6i3n0'],
    ]);
    expect(gpus.map((g) => g.metrics)).toEqual([
      { pcie_replay_count: 0, gpu_util: 0 },
      { pcie_replay_count: 0 },
      { pcie_replay_count: 0 },
      { pcie_replay_count: 0 },
    ]);
  });

  it('reads 4 idle GB200s of an AWS p6e-gb200 node: ~166 W each with nothing running, no pod', () => {
    // Act
    const { gpus, malformed, ignored_fields } = parse('dcgm-exporter-gb200-aws-p6e.prom');

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual([]);
    expect(gpus.map((g) => [g.gpu.index, g.gpu.name, g.gpu.pci_bus_id])).toEqual([
      [0, 'NVIDIA GB200', '0000:29:00.0'],
      [1, 'NVIDIA GB200', '0000:3f:00.0'],
      [2, 'NVIDIA GB200', '0000:9c:00.0'],
      [3, 'NVIDIA GB200', '0000:b2:00.0'],
    ]);
    expect(gpus.map((g) => g.metrics.power_w)).toEqual([165.926, 168.57, 156.479, 174.197]);
    expect(gpus[3]?.metrics).toEqual({
      gpu_temp_c: 26,
      power_w: 174.197,
      gpu_util: 0,
      mem_copy_util: 0,
      fb_used_bytes: 0,
      fb_total_bytes: 188729 * MiB,
    });
    expect(workloadsFromDcgm(gpus).held).toEqual([]);
  });

  it('reads 3 L40S on OpenShift, one pod holding two of them', () => {
    // Act
    const { gpus } = parse('dcgm-exporter-l40s-openshift-dcgm226.prom');
    const { held } = workloadsFromDcgm(gpus);

    // Assess
    expect(gpus.map((g) => g.metrics)).toEqual([{ gpu_util: 0 }, { gpu_util: 0 }, { gpu_util: 0 }]);
    expect(held.map((h) => [h.gpu.index, h.k8s.namespace, h.k8s.pod])).toEqual([
      [0, 'redacted', 'tensorflow-0'],
      [1, 'redacted', 'tensorflow-0'],
    ]);
    expect(gpus[2]?.labels).toEqual({});
  });

  it('reads an A100 in MIG mode from the 2.x docs: the whole GPU busy, one 1g.5gb slice, no modelName', () => {
    // Act
    const { gpus, malformed } = parse('dcgm-exporter-a100-mig-2x-labels.prom');
    const [gpu] = gpus;

    // Assess
    expect(malformed).toEqual([]);
    expect(gpu?.gpu).toEqual({ index: 0, uuid: 'GPU-34319582-d595-d1c7-d1d2-179bcfa61660' });
    expect(gpu?.hostname).toBe('ub20-a100-k8s');
    expect(gpu?.metrics).toMatchObject({
      power_w: 409.692,
      gpu_temp_c: 61,
      mem_temp_c: 69,
      // The GPU's own GR engine series, not the slice's weighted by its share.
      gpu_util: 0.99563,
      tensor_active: 0.92926,
      dram_active: 0.690789,
      fb_used_bytes: 4845 * MiB,
      fb_total_bytes: (4845 + 35690) * MiB,
    });
    expect(gpu === undefined ? undefined : migSliceReadings(gpu)).toEqual([
      { gpu_instance_id: 13, gpu_instance_profile: '1g.5gb', gpu_util: 0.995687 },
    ]);
  });

  it('reads a mixed node (A30s in MIG mode next to an RTX 2000 Ada): board temperature from the slices, a pod per slice', () => {
    // Act
    const part1 = parse('dcgm-exporter-a30-mig-rtx2000ada-mixed-pr736-part1.prom');
    const part2 = parse('dcgm-exporter-a30-mig-rtx2000ada-mixed-pr736-part2.prom');

    // Assess
    expect([...part1.malformed, ...part2.malformed]).toEqual([]);
    // Lower-case `hostname` (dcgm-exporter 4.x) is the hostname.
    expect(part2.gpus.map((g) => [g.gpu.index, g.gpu.name, g.hostname])).toEqual([
      [0, 'NVIDIA A30', 'dcgm-exporter-wwwjh'],
      [1, 'NVIDIA RTX 2000 Ada Generation', 'dcgm-exporter-wwwjh'],
      [2, 'NVIDIA A30', 'dcgm-exporter-wwwjh'],
    ]);
    // DCGM_FI_DEV_GPU_TEMP of the MIG A30s comes only labelled GPU_I_ID: it is the board's temperature.
    expect(part2.gpus.map((g) => g.metrics.gpu_temp_c)).toEqual([50, 44, 45]);
    const [a30] = part2.gpus;
    expect(a30 === undefined ? undefined : migSliceReadings(a30)).toEqual([
      {
        gpu_instance_id: 3,
        gpu_instance_profile: '1g.6gb',
        k8s: { namespace: 'default', pod: 'triton-server-f7cb5d77-wwk9g', container: 'triton-server' },
      },
      {
        gpu_instance_id: 6,
        gpu_instance_profile: '1g.6gb',
        fb_used_bytes: 3744 * MiB,
        k8s: { namespace: 'default', pod: 'triton-server-f7cb5d77-2w5b2', container: 'triton-server' },
      },
    ]);
    expect(a30?.mig_instances?.map((i) => i.compute_share)).toEqual([0.25, 0.25]);
    // One slice's free framebuffer is not the board's total; the RTX's free memory alone gives no total either.
    expect(part1.gpus.map((g) => g.metrics)).toEqual([{}, {}]);
    expect(part1.ignored_fields).toEqual(['DCGM_FI_DEV_DEC_UTIL', 'DCGM_FI_DEV_ENC_UTIL']);
  });

  it('reads a dcgm-exporter 1.x scrape (dcgm_* names, legacy pod labels): one pod holding both GPUs', () => {
    // Act
    const { gpus, malformed, ignored_fields } = parse('dcgm-exporter-1.x-pod-gpu-metrics.prom');
    const { held } = workloadsFromDcgm(gpus);

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual(['DCGM_LOW_UTIL_VIOLATION']);
    expect(gpus.map((g) => [g.gpu, g.metrics])).toEqual([
      [
        { index: 0, uuid: 'GPU-2b399198-c670-a848-173b-d3400051a200' },
        { gpu_temp_c: 33, gpu_util: 0, mem_copy_util: 0, mem_clock_mhz: 810 },
      ],
      [
        { index: 1, uuid: 'GPU-9567a9e7-341e-bb7e-fcf5-788d8caa50f9' },
        { gpu_temp_c: 34, gpu_util: 0, mem_copy_util: 0, mem_clock_mhz: 810 },
      ],
    ]);
    expect(held.map((h) => [h.gpu.index, h.k8s])).toEqual([
      [0, { namespace: 'default', pod: 'pod1', container: 'pod1-ctr' }],
      [1, { namespace: 'default', pod: 'pod1', container: 'pod1-ctr' }],
    ]);
  });

  it('reads the dcgm-exporter 2.0 README scrape: the "not supported" memory temperature is no reading', () => {
    // Act
    const { gpus, malformed } = parse('dcgm-exporter-2.0-not-supported-sentinel.prom');

    // Assess
    expect(gpus).toEqual([
      {
        gpu: { index: 0, uuid: 'GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52' },
        metrics: { sm_clock_mhz: 139, mem_clock_mhz: 405 },
        labels: {},
      },
    ]);
    expect(malformed).toEqual([
      { line: 9, reason: expect.stringMatching(/DCGM_FI_DEV_MEMORY_TEMP is DCGM int64 blank/) },
    ]);
    // container="", namespace="", pod="": no pod holds the GPU.
    expect(workloadsFromDcgm(gpus)).toEqual({ held: [], dropped: [] });
  });
});

describe('replaying every real scrape (gpu-sentinel local)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-dcgm-real-'));
  const NOW = new Date('2026-03-10T12:00:00Z');

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends each scrape as one host through the contract, a window per GPU or MIG slice', async () => {
    // Prepare: one host per file; the instance ids and type are replay labels, the telemetry the scrape's
    const manifest = join(dir, 'real-dcgm.json');
    writeFileSync(
      manifest,
      JSON.stringify({
        window_s: 60,
        duration_s: 300,
        hosts: FILES.map((file, i) => ({
          instance_id: `i-0d00000000000${String(i).padStart(4, '0')}`,
          instance_type: 'g6.xlarge',
          region: 'us-east-1',
          dcgm_exporter: [join(fileURLToPath(DIR), file)],
        })),
      }),
    );

    // Act
    const batches = await buildReplayBatches(await loadReplayManifest(manifest), {
      now: NOW,
      agentVersion: '0.1.0-test',
    });

    // Assess
    expect(new Set(batches.map((b) => b.host.instance_id)).size).toBe(FILES.length);
    for (const batch of batches)
      expect(() => parseBatch(JSON.parse(JSON.stringify(batch)), NOW)).not.toThrow();
    const mixed = FILES.indexOf('dcgm-exporter-a30-mig-rtx2000ada-mixed-pr736-part2.prom');
    const last = batches.filter((b) => b.host.instance_id.endsWith(String(mixed).padStart(4, '0'))).at(-1);
    expect(
      last?.windows
        .filter((w) => w.kind === 'flush')
        .map((w) => [w.gpu.index, w.gpu_instance_id, w.metrics.gpu_temp_c, w.k8s?.pod]),
    ).toEqual([
      // The board's temperature (read from its slices' series) goes once per GPU, on its first slice.
      [0, 3, 50, 'triton-server-f7cb5d77-wwk9g'],
      [0, 6, undefined, 'triton-server-f7cb5d77-2w5b2'],
      [1, undefined, 44, undefined],
      [2, 3, 45, 'triton-server-f7cb5d77-95xcf'],
    ]);
  });
});
