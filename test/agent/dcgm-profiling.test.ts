import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DcgmProfilingSource } from '../../agent/sources/dcgm-profiling';
import { GpuMetricsSchema } from '../../lambdas/contract';

/** The real p5 scrape: temperatures, power, GPU util, mem-copy util; no profiling fields. */
const REAL = readFileSync(
  new URL('../fixtures/real/dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom', import.meta.url),
  'utf8',
);

/** The real scrape plus DCGM_FI_PROF_* lines with the real capture's labels (one set per GPU). */
const withProfiling = (names: Record<string, (gpu: number) => number>): string => {
  const extra = REAL.split('\n')
    .filter((l) => l.startsWith('DCGM_FI_DEV_GPU_TEMP{'))
    .flatMap((l) => {
      const labels = l.slice('DCGM_FI_DEV_GPU_TEMP'.length, l.lastIndexOf('}') + 1);
      const gpu = Number(/gpu="(\d+)"/.exec(labels)?.[1]);
      return Object.entries(names).map(([name, value]) => `${name}${labels} ${value(gpu).toFixed(6)}`);
    });
  return `${REAL.trimEnd()}\n# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.\n# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n${extra.join('\n')}\n`;
};

let server: Server;
let url: string;
let status: number;
let body: string;

beforeAll(async () => {
  server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'text/plain; version=0.0.4' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  status = 200;
  body = REAL;
});

describe('DcgmProfilingSource', () => {
  it('reads the profiling ratios of 8 GPUs, and nothing from utilization', async () => {
    // Prepare
    body = withProfiling({
      DCGM_FI_PROF_SM_ACTIVE: (g) => 0.1 * g,
      DCGM_FI_PROF_SM_OCCUPANCY: (g) => 0.05 * g,
      DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: () => 0.25,
      DCGM_FI_PROF_DRAM_ACTIVE: () => 0.5,
      DCGM_FI_PROF_PIPE_FP16_ACTIVE: () => 0.125,
      DCGM_FI_PROF_PIPE_FP32_ACTIVE: () => 0.0625,
      DCGM_FI_PROF_PIPE_FP64_ACTIVE: () => 0,
    });
    const dcgm = new DcgmProfilingSource({ url });

    // Act
    const probed = await dcgm.probe();
    const ratios = await dcgm.read();

    // Assess
    expect(probed).toBe(true);
    expect([...ratios.keys()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(ratios.get(3)).toEqual({
      sm_active: 0.3,
      sm_occupancy: 0.15,
      tensor_active: 0.25,
      dram_active: 0.5,
      fp16_active: 0.125,
      fp32_active: 0.0625,
      fp64_active: 0,
    });
    for (const r of ratios.values()) {
      expect(r).not.toHaveProperty('gpu_util');
      expect(GpuMetricsSchema.safeParse(r).error).toBeUndefined();
    }
  });

  it.each([
    ['the DCGM 4 *_RATIO names', { DCGM_FI_PROF_SM_UTIL_RATIO: () => 0.75 }, { sm_active: 0.75 }],
    ['only some fields', { DCGM_FI_PROF_DRAM_ACTIVE: () => 0.2 }, { dram_active: 0.2 }],
  ])('reads %s', async (_name, names, expected) => {
    // Prepare
    body = withProfiling(names);
    const dcgm = new DcgmProfilingSource({ url });

    // Act
    const ratios = await dcgm.read();

    // Assess
    expect(ratios.get(0)).toEqual(expected);
  });

  it('probes false and reads nothing from a real scrape without profiling fields', async () => {
    // Prepare
    const dcgm = new DcgmProfilingSource({ url });

    // Act
    const probed = await dcgm.probe();
    const ratios = await dcgm.read();

    // Assess
    expect(probed).toBe(false);
    expect(ratios.size).toBe(0);
  });

  it('gives an empty map and warns once per outage when the exporter stops answering', async () => {
    // Prepare
    body = withProfiling({ DCGM_FI_PROF_SM_ACTIVE: () => 0.5 });
    const warnings: string[] = [];
    const dcgm = new DcgmProfilingSource({ url, onWarning: (m) => warnings.push(m) });
    const before = await dcgm.read();

    // Act
    status = 503;
    const during = [await dcgm.read(), await dcgm.read(), await dcgm.probe()];
    status = 200;
    const after = await dcgm.read();
    status = 500;
    await dcgm.read();

    // Assess
    expect(before.size).toBe(8);
    expect(during).toEqual([new Map(), new Map(), false]);
    expect(after.size).toBe(8);
    expect(warnings).toHaveLength(2);
  });

  it('gives an empty map when nothing listens', async () => {
    // Prepare
    const warnings: string[] = [];
    const dcgm = new DcgmProfilingSource({
      url: 'http://127.0.0.1:1/metrics',
      onWarning: (m) => warnings.push(m),
    });

    // Act
    const ratios = await dcgm.read();

    // Assess
    expect(ratios.size).toBe(0);
    expect(warnings).toHaveLength(1);
  });

  it('throws a RangeError for timeoutMs 0', () => {
    // Prepare / Act
    const act = () => new DcgmProfilingSource({ timeoutMs: 0 });

    // Assess
    expect(act).toThrow(RangeError);
  });
});
