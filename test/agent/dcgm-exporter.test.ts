import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DcgmScrapeError } from '../../agent/errors';
import { parseDcgmExporterText, scrapeDcgmExporter } from '../../agent/sources/dcgm-exporter';
import { GpuMetricsSchema } from '../../lambdas/contract';

const real = (name: string): string =>
  readFileSync(new URL(`../fixtures/real/${name}`, import.meta.url), 'utf8');
const EKS_171 = 'dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom';
const EKS_147 = 'dcgm-exporter-h100-eks_ip-100-64-147-149_2026-03-02.prom';
const MiB = 1024 * 1024;

describe('parseDcgmExporterText on real p5 scrapes', () => {
  it('reads 8 H100s of ip-10-0-171-111, GPU 0 held by the vLLM pod', () => {
    // Prepare
    const text = real(EKS_171);

    // Act
    const { gpus, malformed, ignored_fields } = parseDcgmExporterText(text);

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual([]);
    expect(gpus.map((g) => g.gpu.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(gpus[0]).toEqual({
      gpu: {
        index: 0,
        uuid: 'GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005',
        name: 'NVIDIA H100 80GB HBM3',
        pci_bus_id: '0000:53:00.0',
      },
      metrics: { gpu_temp_c: 30, power_w: 113.611, gpu_util: 0, mem_copy_util: 0 },
      hostname: 'ip-10-0-171-111.ec2.internal',
      driver_version: '580.105.08',
      labels: { container: 'main', namespace: 'dynamo-workload', pod: 'vllm-agg-0-vllmdecodeworker-s65j5' },
    });
    expect(gpus[5]?.gpu.pci_bus_id).toBe('0000:a8:00.0');
    expect(gpus[7]?.metrics).toEqual({ gpu_temp_c: 26, power_w: 66.997, gpu_util: 0 });
    expect(gpus[7]?.labels).toEqual({});
    for (const g of gpus) {
      expect(g.metrics.power_w).toBeGreaterThanOrEqual(65);
      expect(g.metrics.power_w).toBeLessThanOrEqual(114);
      expect(GpuMetricsSchema.safeParse(g.metrics).success).toBe(true);
    }
  });

  it('reads 8 H100s of ip-100-64-147-149, GPU 2 held by the vLLM pod', () => {
    // Prepare
    const text = real(EKS_147);

    // Act
    const { gpus, malformed } = parseDcgmExporterText(text);

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus).toHaveLength(8);
    const held = gpus.filter((g) => g.labels.pod !== undefined);
    expect(held.map((g) => g.gpu.index)).toEqual([2]);
    expect(held[0]).toMatchObject({
      gpu: { uuid: 'GPU-8d76cfcf-a144-5e43-876b-a4b71f2aecd1', pci_bus_id: '0000:75:00.0' },
      metrics: { power_w: 110.786, gpu_temp_c: 29, gpu_util: 0 },
      labels: { pod: 'vllm-agg-0-vllmdecodeworker-dkb9q', namespace: 'dynamo-workload' },
    });
    expect(gpus[0]?.metrics.power_w).toBe(67.433);
  });
});

const L = 'gpu="0",UUID="GPU-1",pci_bus_id="00000000:10:1C.0",modelName="NVIDIA A100-SXM4-40GB"';

describe('parseDcgmExporterText edge cases', () => {
  it.each([
    ['percent util → ratio', `DCGM_FI_DEV_GPU_UTIL{${L}} 97`, { gpu_util: 0.97 }],
    ['mem copy util → ratio', `DCGM_FI_DEV_MEM_COPY_UTIL{${L}} 40`, { mem_copy_util: 0.4 }],
    ['legacy SM active', `DCGM_FI_PROF_SM_ACTIVE{${L}} 0.12`, { sm_active: 0.12 }],
    ['DCGM 4 SM util ratio', `DCGM_FI_PROF_SM_UTIL_RATIO{${L}} 0.5`, { sm_active: 0.5 }],
    [
      'tensor and dram',
      `DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{${L}} 0.25\nDCGM_FI_PROF_DRAM_ACTIVE{${L}} 0.3`,
      { tensor_active: 0.25, dram_active: 0.3 },
    ],
    [
      'fp pipes',
      `DCGM_FI_PROF_PIPE_FP16_ACTIVE{${L}} 0.1\nDCGM_FI_PROF_FP32_UTIL_RATIO{${L}} 0.2\nDCGM_FI_PROF_PIPE_FP64_ACTIVE{${L}} 0`,
      { fp16_active: 0.1, fp32_active: 0.2, fp64_active: 0 },
    ],
    ['occupancy', `DCGM_FI_PROF_SM_OCCUPANCY{${L}} 0.05`, { sm_occupancy: 0.05 }],
    [
      'fb MiB → bytes, total from used + free',
      `DCGM_FI_DEV_FB_USED{${L}} 1024\nDCGM_FI_DEV_FB_FREE{${L}} 3072`,
      { fb_used_bytes: 1024 * MiB, fb_total_bytes: 4096 * MiB },
    ],
    [
      'fb total from FB_TOTAL',
      `DCGM_FI_DEV_FB_USED{${L}} 1\nDCGM_FI_DEV_FB_FREE{${L}} 1\nDCGM_FI_DEV_FB_TOTAL{${L}} 81559`,
      { fb_used_bytes: MiB, fb_total_bytes: 81559 * MiB },
    ],
    [
      'temperatures and clocks',
      `DCGM_FI_DEV_GPU_TEMP{${L}} 45\nDCGM_FI_DEV_MEMORY_TEMP{${L}} 50\nDCGM_FI_DEV_SM_CLOCK{${L}} 1410\nDCGM_FI_DEV_MEM_CLOCK{${L}} 1593`,
      { gpu_temp_c: 45, mem_temp_c: 50, sm_clock_mhz: 1410, mem_clock_mhz: 1593 },
    ],
    [
      'ECC counters',
      `DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{${L}} 3\nDCGM_FI_DEV_ECC_DBE_VOL_TOTAL{${L}} 1\nDCGM_FI_DEV_ECC_SBE_AGG_TOTAL{${L}} 30\nDCGM_FI_DEV_ECC_DBE_AGG_TOTAL{${L}} 2`,
      { ecc_sbe_volatile: 3, ecc_dbe_volatile: 1, ecc_sbe_aggregate: 30, ecc_dbe_aggregate: 2 },
    ],
    [
      'NVLink CRC flit + data',
      `DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{${L}} 5\nDCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{${L}} 2`,
      { nvlink_crc_errors: 7 },
    ],
    [
      'clock event reasons, both names OR-ed',
      `DCGM_FI_DEV_CLOCKS_EVENT_REASONS{${L}} 4\nDCGM_FI_DEV_CLOCK_THROTTLE_REASONS{${L}} 32`,
      { clocks_event_reasons: 36 },
    ],
    [
      'the enforced power limit, never the configured one',
      `DCGM_FI_DEV_ENFORCED_POWER_LIMIT{${L}} 250\nDCGM_FI_DEV_POWER_MGMT_LIMIT{${L}} 400`,
      { power_limit_w: 250 },
    ],
    [
      'pages pending retirement → boolean',
      `DCGM_FI_DEV_RETIRED_PENDING{${L}} 2`,
      { retired_pages_pending: true },
    ],
    [
      'row remap flags → booleans',
      `DCGM_FI_DEV_ROW_REMAP_FAILURE{${L}} 0\nDCGM_FI_DEV_ROW_REMAP_PENDING{${L}} 1`,
      { remapped_rows_failure: false, remapped_rows_pending: true },
    ],
    [
      'PCIe replays and PCIe/NVLink bytes',
      `DCGM_FI_DEV_PCIE_REPLAY_COUNTER{${L}} 120\nDCGM_FI_PROF_PCIE_TX_BYTES{${L}} 1.5e9\nDCGM_FI_PROF_PCIE_RX_BYTES{${L}} 2e9\nDCGM_FI_PROF_NVLINK_TX_BYTES{${L}} 3\nDCGM_FI_PROF_NVLINK_RX_BYTES{${L}} 4`,
      {
        pcie_replay_count: 120,
        pcie_tx_bytes_per_s: 1.5e9,
        pcie_rx_bytes_per_s: 2e9,
        nvlink_tx_bytes_per_s: 3,
        nvlink_rx_bytes_per_s: 4,
      },
    ],
    [
      'HELP, TYPE, comments, blank lines and timestamps',
      `# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\n# a comment\nDCGM_FI_DEV_POWER_USAGE{${L}} 250.5 1700000000000\n`,
      { power_w: 250.5 },
    ],
  ])('maps %s', (_case, text, expected) => {
    // Prepare / Act
    const { gpus, malformed } = parseDcgmExporterText(text);

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus).toHaveLength(1);
    expect(gpus[0]?.metrics).toEqual(expected);
    expect(gpus[0]?.gpu).toEqual({
      index: 0,
      uuid: 'GPU-1',
      name: 'NVIDIA A100-SXM4-40GB',
      pci_bus_id: '0000:10:1c.0',
    });
  });

  it.each([
    ['util 250 %', `DCGM_FI_DEV_GPU_UTIL{${L}} 250`, 1, /outside the contract's range/],
    ['a NaN value', `DCGM_FI_PROF_SM_ACTIVE{${L}} NaN`, 1, /finite number/],
    ['a +Inf value', `DCGM_FI_DEV_POWER_USAGE{${L}} +Inf`, 1, /finite number/],
    ['a negative temperature below the sensor range', `DCGM_FI_DEV_GPU_TEMP{${L}} -273`, 1, /range/],
    ['a garbage value', `DCGM_FI_DEV_GPU_TEMP{${L}} hot`, 1, /expected a number/],
    ['an unterminated label', `# x\nDCGM_FI_DEV_GPU_TEMP{gpu="0 40`, 2, /unterminated/],
    ['a bad escape', `DCGM_FI_DEV_GPU_TEMP{gpu="0",pod="a\\tb"} 40`, 1, /escape/],
    ['no gpu label', 'DCGM_FI_DEV_GPU_TEMP{UUID="GPU-1"} 40', 1, /label gpu/],
    ['a line with no value', `DCGM_FI_DEV_GPU_TEMP{${L}}`, 1, /expected a value/],
    ['a fractional ECC count', `DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{${L}} 1.5`, 1, /range|integer/],
    ['FB used above total', `DCGM_FI_DEV_FB_USED{${L}} 10\nDCGM_FI_DEV_FB_TOTAL{${L}} 5`, 1, /exceeds/],
  ])('reports %s with its line number and leaves the field absent', (_case, text, line, reason) => {
    // Prepare / Act
    const { gpus, malformed } = parseDcgmExporterText(text);

    // Assess
    expect(malformed).toHaveLength(1);
    expect(malformed[0]?.line).toBe(line);
    expect(malformed[0]?.reason).toMatch(reason);
    for (const g of gpus) expect(g.metrics).toEqual({});
  });

  it('keeps reading the other lines after a malformed one', () => {
    // Prepare
    const text = `DCGM_FI_DEV_GPU_UTIL{${L}} 250\nDCGM_FI_DEV_GPU_TEMP{${L}} 40`;

    // Act
    const { gpus } = parseDcgmExporterText(text);

    // Assess
    expect(gpus[0]?.metrics).toEqual({ gpu_temp_c: 40 });
  });

  it('unescapes label values and keeps the workload labels', () => {
    // Prepare
    const text = `DCGM_FI_DEV_GPU_TEMP{gpu="3", pod="a\\"b\\\\c\\nd",namespace="ns",pod_uid="",} 40`;

    // Act
    const { gpus } = parseDcgmExporterText(text);

    // Assess
    expect(gpus[0]?.gpu).toEqual({ index: 3 });
    expect(gpus[0]?.labels).toEqual({ pod: 'a"b\\c\nd', namespace: 'ns' });
  });

  it('lists unknown fields once and never fails on them', () => {
    // Prepare
    const text = [
      `DCGM_FI_DEV_XID_ERRORS{${L},err_code="0"} 0`,
      `DCGM_FI_PROF_GR_ENGINE_ACTIVE{${L}} 0.5`,
      `DCGM_FI_DEV_XID_ERRORS{gpu="1"} 0`,
      'go_goroutines 12',
      `DCGM_FI_DEV_GPU_TEMP{${L}} 40`,
    ].join('\n');

    // Act
    const { gpus, malformed, ignored_fields } = parseDcgmExporterText(text);

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual(['DCGM_FI_DEV_XID_ERRORS', 'go_goroutines']);
    expect(gpus.map((g) => g.gpu.index)).toEqual([0]);
    // GR engine activity (1001) is read: it is gpu_util where DCGM_FI_DEV_GPU_UTIL is absent (MIG).
    expect(gpus[0]?.metrics.gpu_util).toBe(0.5);
  });
});

describe('parseDcgmExporterText on dcgm-exporter 1.x names', () => {
  it.each([
    ['dcgm_gpu_temp', '61', { gpu_temp_c: 61 }],
    ['dcgm_memory_temp', '70', { mem_temp_c: 70 }],
    ['dcgm_sm_clock', '1410', { sm_clock_mhz: 1410 }],
    ['dcgm_memory_clock', '1215', { mem_clock_mhz: 1215 }],
    ['dcgm_power_usage', '250.5', { power_w: 250.5 }],
    ['dcgm_gpu_utilization', '97', { gpu_util: 0.97 }],
    ['dcgm_mem_copy_utilization', '40', { mem_copy_util: 0.4 }],
    ['dcgm_fb_used', '1024', { fb_used_bytes: 1024 * MiB }],
    ['dcgm_pcie_replay_counter', '3', { pcie_replay_count: 3 }],
    ['dcgm_ecc_dbe_volatile_total', '1', { ecc_dbe_volatile: 1 }],
    ['dcgm_ecc_sbe_aggregate_total', '30', { ecc_sbe_aggregate: 30 }],
    ['dcgm_retired_pages_pending', '0', { retired_pages_pending: false }],
    ['dcgm_nvlink_flit_crc_error_count_total', '5', { nvlink_crc_errors: 5 }],
    ['dcgm_fi_prof_sm_active', '0.5', { sm_active: 0.5 }],
  ])('reads %s as its DCGM field', (name, value, expected) => {
    // Prepare / Act
    const { gpus, malformed, ignored_fields } = parseDcgmExporterText(
      `${name}{gpu="0",uuid="GPU-1"} ${value}`,
    );

    // Assess
    expect(malformed).toEqual([]);
    expect(ignored_fields).toEqual([]);
    expect(gpus[0]?.metrics).toEqual(expected);
    expect(gpus[0]?.gpu).toEqual({ index: 0, uuid: 'GPU-1' });
  });

  it('reads the 1.x violation counters as ns, like the current ones', () => {
    // Prepare / Act
    const [gpu] = parseDcgmExporterText('dcgm_thermal_violation{gpu="0",uuid="GPU-1"} 5000').gpus;

    // Assess
    expect(gpu?.violation_us).toEqual({ thermal_violation_us_total: 5 });
  });
});

describe('parseDcgmExporterText on DCGM blank values and unread sensors', () => {
  it.each([
    ['an int64 blank ECC count', 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', '9223372036854775792'],
    ['an int64 "not supported" memory temperature', 'DCGM_FI_DEV_MEMORY_TEMP', '9223372036854775794'],
    ['an int64 blank printed as a float', 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER', '9.223372036854776e+18'],
    [
      'an int64 blank PCIe byte rate (no upper bound in the contract)',
      'DCGM_FI_PROF_PCIE_TX_BYTES',
      '9223372036854775795',
    ],
    ['an int64 blank NVLink byte rate', 'DCGM_FI_PROF_NVLINK_RX_BYTES', '9223372036854775793'],
    ['an int64 blank violation counter', 'DCGM_FI_DEV_THERMAL_VIOLATION', '9223372036854775794'],
    [
      'an int64 blank NVLink CRC count',
      'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
      '9223372036854775794',
    ],
    ['an fp64 blank power', 'DCGM_FI_DEV_POWER_USAGE', '140737488355328'],
    ['an fp64 "not supported" PCIe byte rate', 'DCGM_FI_PROF_PCIE_RX_BYTES', '140737488355330.000000'],
    ['an fp64 "not permissioned" ratio', 'DCGM_FI_PROF_DRAM_ACTIVE', '140737488355331'],
  ])('leaves %s absent and says it is a DCGM blank', (_case, field, value) => {
    // Prepare / Act
    const { gpus, malformed } = parseDcgmExporterText(`${field}{${L}} ${value}`);

    // Assess
    expect(malformed).toEqual([{ line: 1, reason: expect.stringMatching(/DCGM (int64|fp64) blank/) }]);
    for (const g of gpus) {
      expect(g.metrics).toEqual({});
      expect(g.violation_us).toBeUndefined();
    }
  });

  it.each([
    ['one below the fp64 blank', '140737488355327', 140737488355327],
    ['four above it (past not-permissioned)', '140737488355332', 140737488355332],
    ['a large real rate', '2.5e12', 2.5e12],
  ])('keeps a PCIe byte rate %s: it is a reading', (_case, value, expected) => {
    // Prepare / Act
    const { gpus, malformed } = parseDcgmExporterText(`DCGM_FI_PROF_PCIE_TX_BYTES{${L}} ${value}`);

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus[0]?.metrics.pcie_tx_bytes_per_s).toBe(expected);
  });

  it.each([['<<<NULL>>>'], ['<<<NOT_FOUND>>>'], ['<<<NOT_SUPPORTED>>>'], ['<<<NOT_PERM>>>']])(
    'reads a %s label as no label: never a model, a pod or a MIG profile',
    (blank) => {
      // Prepare
      const text = [
        `DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",modelName="${blank}",pod="${blank}",namespace="ml"} 40`,
        `DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",GPU_I_PROFILE="${blank}",GPU_I_ID="6"} 0.5`,
      ].join('\n');

      // Act
      const { gpus, malformed } = parseDcgmExporterText(text);

      // Assess
      expect(malformed).toEqual([]);
      expect(gpus[0]?.gpu).toEqual({ index: 0, uuid: 'GPU-1' });
      expect(gpus[0]?.labels).toEqual({ namespace: 'ml' });
      expect(gpus[1]?.mig_instances).toEqual([{ gpu_instance_id: 6, gr_engine_active: 0.5, labels: {} }]);
    },
  );

  it.each([
    ['0 (a board with no memory sensor: GDDR, vGPU)', '0', undefined],
    ['1', '1', 1],
    ['85', '85', 85],
  ])('reads DCGM_FI_DEV_MEMORY_TEMP %s', (_case, value, expected) => {
    // Prepare / Act
    const { gpus, malformed } = parseDcgmExporterText(
      `DCGM_FI_DEV_MEMORY_TEMP{${L}} ${value}\nDCGM_FI_DEV_GPU_TEMP{${L}} 31`,
    );

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus[0]?.metrics.mem_temp_c).toBe(expected);
    expect(gpus[0]?.metrics.gpu_temp_c).toBe(31);
  });
});

describe('scrapeDcgmExporter', () => {
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(real(EKS_171));
      } else {
        res.writeHead(404);
        res.end('not found');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('scrapes and parses a loopback exporter', async () => {
    // Prepare / Act
    const { gpus } = await scrapeDcgmExporter(`${base}/metrics`, { timeoutMs: 2000 });

    // Assess
    expect(gpus).toHaveLength(8);
    expect(gpus[0]?.metrics.power_w).toBe(113.611);
  });

  it('throws DcgmScrapeError with the status on a non-2xx answer', async () => {
    // Prepare / Act
    const error = await scrapeDcgmExporter(`${base}/nope`, { timeoutMs: 2000 }).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(DcgmScrapeError);
    expect((error as DcgmScrapeError).status).toBe(404);
  });

  it('throws DcgmScrapeError when nothing answers', async () => {
    // Prepare
    const refuse = (() => Promise.reject(new TypeError('fetch failed'))) as typeof fetch;

    // Act
    const error = await scrapeDcgmExporter(`${base}/metrics`, { fetch: refuse, timeoutMs: 100 }).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(DcgmScrapeError);
    expect((error as DcgmScrapeError).status).toBeUndefined();
  });
});
