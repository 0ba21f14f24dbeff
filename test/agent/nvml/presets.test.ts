import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { GpuIdentitySchema } from '../../../lambdas/contract';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const MIB = 1024 * 1024;
const AT = new Date('2026-11-21T10:00:00Z');

// p5 identities from test/fixtures/real/nvidia-smi-query.535.161.08.out.0.valid.txt.
const P5 = [
  {
    index: 0,
    uuid: 'GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa',
    pci_bus_id: '0000:19:00.0',
    serial: '1650124031592',
    power_w: 67.74,
    temp: 29,
  },
  {
    index: 1,
    uuid: 'GPU-47daa2ad-a218-6286-252b-af45f0dfaf00',
    pci_bus_id: '0000:3b:00.0',
    serial: '1650124008135',
    power_w: 69.52,
    temp: 29,
  },
  {
    index: 2,
    uuid: 'GPU-167d8376-ee13-fca4-938a-a05167c43cdc',
    pci_bus_id: '0000:4c:00.0',
    serial: '1650124047722',
    power_w: 70.55,
    temp: 30,
  },
  {
    index: 3,
    uuid: 'GPU-afe9f2ed-9dd0-572c-3cd8-b42b58b3bc99',
    pci_bus_id: '0000:5d:00.0',
    serial: '1650124032506',
    power_w: 71.37,
    temp: 30,
  },
  {
    index: 4,
    uuid: 'GPU-2b6f61f9-8b00-3b57-d912-b62792120662',
    pci_bus_id: '0000:9b:00.0',
    serial: '1650124030635',
    power_w: 70.33,
    temp: 31,
  },
  {
    index: 5,
    uuid: 'GPU-980ea11b-91dc-db7b-72ac-0685abc43658',
    pci_bus_id: '0000:bb:00.0',
    serial: '1650124048576',
    power_w: 70.21,
    temp: 32,
  },
  {
    index: 6,
    uuid: 'GPU-4ef109e9-e925-4834-2b85-0771b4ef696c',
    pci_bus_id: '0000:cb:00.0',
    serial: '1650124047010',
    power_w: 71.05,
    temp: 32,
  },
  {
    index: 7,
    uuid: 'GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5',
    pci_bus_id: '0000:db:00.0',
    serial: '1650124007084',
    power_w: 72.27,
    temp: 31,
  },
];

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource on the p5 preset', () => {
  it.each(P5)('reads GPU $index identity as in the real capture', (want) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const identity = source.identity()[want.index];
    // Assess
    expect(identity).toEqual({
      index: want.index,
      name: 'NVIDIA H100 80GB HBM3',
      uuid: want.uuid,
      pci_bus_id: want.pci_bus_id,
      serial: want.serial,
    });
    expect(GpuIdentitySchema.safeParse(identity).success).toBe(true);
  });

  it.each(P5)('samples GPU $index idle in contract units', (want) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const sample = source.sample(AT).gpus[want.index];
    // Assess
    expect(sample).toMatchObject({
      gpu_index: want.index,
      at_ms: AT.getTime(),
      gpu_util: 0,
      mem_copy_util: 0,
      fb_total_bytes: 81559 * MIB,
      fb_used_bytes: 551 * MIB,
      gpu_temp_c: want.temp,
      power_w: want.power_w,
      power_limit_w: 700,
      sm_clock_mhz: 86,
      mem_clock_mhz: 2619,
      ecc_sbe_volatile: 0,
      ecc_dbe_volatile: 0,
      ecc_sbe_aggregate: 0,
      ecc_dbe_aggregate: 0,
      remapped_rows_pending: false,
      remapped_rows_failure: false,
      compute_processes: 0,
    });
    expect(sample?.energy_mj_total).toBeGreaterThan(0);
  });

  it('reads the driver, NVML and CUDA versions', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const versions = source.versions();
    // Assess
    expect(versions).toEqual({
      driver_version: '535.161.08',
      nvml_version: '12.535.161.08',
      cuda_version: '12.2',
    });
  });
});

describe('NvmlSource on the p4d preset', () => {
  it('reads 8 A100s with 40 GiB and a 400 W limit', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p4d' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const identity = source.identity();
    const { gpus, events, errors } = source.sample(AT);
    // Assess
    expect(identity.map((g) => g.name)).toEqual(Array(8).fill('NVIDIA A100-SXM4-40GB'));
    expect(identity.map((g) => g.pci_bus_id)).toEqual([
      '0000:10:1c.0',
      '0000:10:1d.0',
      '0000:20:1c.0',
      '0000:20:1d.0',
      '0000:90:1c.0',
      '0000:90:1d.0',
      '0000:a0:1c.0',
      '0000:a0:1d.0',
    ]);
    expect(gpus).toHaveLength(8);
    expect(gpus.every((g) => g.fb_total_bytes === 40960 * MIB && g.power_limit_w === 400)).toBe(true);
    expect(gpus[0]).toMatchObject({ power_w: 52, gpu_temp_c: 27, sm_clock_mhz: 210, mem_clock_mhz: 1215 });
    expect(events).toEqual([]);
    expect(errors).toEqual([]);
    expect(source.versions()).toEqual({
      driver_version: '550.90.07',
      nvml_version: '12.550.90.07',
      cuda_version: '12.4',
    });
  });
});

describe('NvmlSource under load', () => {
  it('converts utilization to 0..1, counts processes and reads the DBE counter', () => {
    // Prepare
    setFakeNvmlEnv({ UTIL_GPU: 97, PROCESSES: 3, DBE_VOLATILE: 2 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const sample = source.sample(AT).gpus[0];
    // Assess
    expect(sample).toMatchObject({
      gpu_util: 0.97,
      mem_copy_util: 0.48,
      compute_processes: 3,
      fb_used_bytes: (551 + 3 * 1024) * MIB,
      ecc_dbe_volatile: 2,
      ecc_dbe_aggregate: 2,
      remapped_rows_pending: true,
      sm_clock_mhz: 1980,
    });
    expect(sample?.power_w).toBeGreaterThan(600);
  });

  it('exposes up to 64 GPUs with distinct UUIDs and PCI addresses, for benchmarks of large hosts', () => {
    // Prepare
    setFakeNvmlEnv({ GPU_COUNT: 64 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const { gpus } = source.sample(AT);
    const ids = source.identity();
    // Assess
    expect(gpus.map((g) => g.gpu_index)).toEqual([...Array(64).keys()]);
    expect(new Set(ids.map((g) => g.uuid)).size).toBe(64);
    expect(new Set(ids.map((g) => g.pci_bus_id)).size).toBe(64);
    expect(ids[9]?.pci_bus_id).toMatch(/^0001:/);
  });

  it('limits the GPUs to what NVML counts', () => {
    // Prepare
    setFakeNvmlEnv({ GPU_COUNT: 2 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const { gpus } = source.sample(AT);
    // Assess
    expect(source.identity()).toHaveLength(2);
    expect(gpus.map((g) => g.gpu_index)).toEqual([0, 1]);
    expect(source.stats).toEqual({ samples: 1, nvml_errors: 0 });
  });
});
