import koffi from 'koffi';
import { afterEach, describe, expect, it } from 'vitest';
import {
  loadNvmlBinding,
  MIG_GPM_REQUESTS,
  migProfileName,
  NVML_MIG_CALLS,
  NVML_STRUCT_LAYOUTS,
  NvmlSource,
  nvmlDeviceAttributes,
} from '../../../agent/sources/nvml';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv, setFakeNvmlLostGpu } from '../../setup/fake-nvml';
import { recordingLogger } from './recording-logger';

const AT = new Date('2026-11-21T10:00:00Z');
const LATER = new Date(AT.getTime() + 1000);
const GIB = 1024 ** 3;
/** The fake's H100 80GB HBM3: 81,559 MiB (nvidia-smi -q of a p5). */
const H100_BYTES = 81_559 * 1024 * 1024;

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
  setFakeNvmlEnv({});
});

describe('the MIG binding', () => {
  it('declares nvmlDeviceAttributes_t as nvml.h lays it out: 40 bytes, memorySizeMB at 32', () => {
    // Written here independently of mig-structs.ts so a typo in either fails
    const offsets = {
      multiprocessorCount: 0,
      sharedCopyEngineCount: 4,
      sharedDecoderCount: 8,
      sharedEncoderCount: 12,
      sharedJpegCount: 16,
      sharedOfaCount: 20,
      gpuInstanceSliceCount: 24,
      computeInstanceSliceCount: 28,
      memorySizeMB: 32,
    };
    expect(koffi.sizeof(nvmlDeviceAttributes)).toBe(40);
    for (const [field, offset] of Object.entries(offsets))
      expect(koffi.offsetof(nvmlDeviceAttributes, field), field).toBe(offset);
    expect(NVML_STRUCT_LAYOUTS.map((l) => l.struct)).toContain('nvmlDeviceAttributes_t');
  });

  it('binds the five MIG calls by their nvml.h symbols', () => {
    // Act
    const nvml = loadNvmlBinding(fakeNvmlPath());
    // Assess
    expect(NVML_MIG_CALLS.map((call) => nvml.symbols[call])).toEqual([
      'nvmlDeviceGetMaxMigDeviceCount',
      'nvmlDeviceGetMigDeviceHandleByIndex',
      'nvmlDeviceGetGpuInstanceId',
      'nvmlDeviceGetAttributes_v2',
      'nvmlGpmMigSampleGet',
    ]);
  });

  it('reads a MIG device through the bound calls with the values the C side wrote', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 0 });
    const nvml = loadNvmlBinding(fakeNvmlPath());
    expect(nvml.init()).toBe(0);
    try {
      const parent = new BigUint64Array(1);
      expect(nvml.handleByIndex(0, parent)).toBe(0);
      const count = new Uint32Array(1);
      const mig = new BigUint64Array(1);
      const id = new Uint32Array(1);
      const attributes = Buffer.alloc(koffi.sizeof(nvmlDeviceAttributes));
      // Act
      expect(nvml.maxMigDeviceCount?.(parent[0] ?? 0n, count)).toBe(0);
      expect(nvml.migDeviceHandleByIndex?.(parent[0] ?? 0n, 2, mig)).toBe(6); // NOT_FOUND: no device there
      expect(nvml.migDeviceHandleByIndex?.(parent[0] ?? 0n, 3, mig)).toBe(0);
      expect(nvml.gpuInstanceId?.(mig[0] ?? 0n, id)).toBe(0);
      expect(nvml.deviceAttributes?.(mig[0] ?? 0n, attributes)).toBe(0);
      // Assess
      expect(count[0]).toBe(7);
      expect(id[0]).toBe(5);
      expect(koffi.decode(attributes, nvmlDeviceAttributes)).toMatchObject({
        multiprocessorCount: 32,
        gpuInstanceSliceCount: 2,
        computeInstanceSliceCount: 2,
        memorySizeMB: 20_096,
      });
    } finally {
      nvml.shutdown();
    }
  });
});

describe('migProfileName', () => {
  it.each([
    [1, 9_856, H100_BYTES, '1g.10gb'],
    [2, 20_096, H100_BYTES, '2g.20gb'],
    [3, 40_448, H100_BYTES, '3g.40gb'],
    [7, 80_896, H100_BYTES, '7g.80gb'],
    [1, 4_864, 40_960 * 1024 * 1024, '1g.5gb'],
    [3, 40_448, 80 * GIB, '3g.40gb'],
  ])('names %i slices of %i MiB on a GPU of %i bytes %s', (slices, mib, total, name) => {
    expect(migProfileName(slices, mib, total)).toBe(name);
  });

  it('names nothing without slices or memory', () => {
    expect(migProfileName(0, 9_856, H100_BYTES)).toBeUndefined();
    expect(migProfileName(1, 0, H100_BYTES)).toBeUndefined();
    expect(migProfileName(1, 9_856, 0)).toBeUndefined();
  });
});

describe('NvmlSource on an H100 in MIG mode (3g.40gb + 2 × 2g.20gb)', () => {
  it('finds the three GPU instances once each (two compute instances of one count once) and says so', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3 });
    const { logger, lines } = recordingLogger();
    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    // Assess
    const mig = lines.filter((l) => l.data.mig === true);
    expect(mig).toHaveLength(1);
    expect(mig[0]).toMatchObject({
      level: 'info',
      data: { gpu_index: 3, gpu_instances: ['1:3g.40gb', '5:2g.20gb', '6:2g.20gb'] },
    });
    expect(mig[0]?.message).toMatch(/GPU 3 is in MIG mode: read per GPU instance .*one window per instance$/);
    expect(fakeNvmlCallCount('nvmlDeviceGetAttributes_v2')).toBe(3);
  });

  it('reads memory used at once and the GPM ratios of each instance from the second sample on', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3, UTIL_GPU: 50 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const first = source.sample(AT);
    const firstSlices = source.migSlices(3);
    const second = source.sample(LATER);
    const slices = source.migSlices(3);
    // Assess
    expect(first.errors).toEqual([]);
    expect(firstSlices).toEqual([
      { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', fb_used_bytes: 12 * GIB },
      { gpu_instance_id: 5, gpu_instance_profile: '2g.20gb', fb_used_bytes: 4 * GIB },
      { gpu_instance_id: 6, gpu_instance_profile: '2g.20gb', fb_used_bytes: 0 },
    ]);
    expect(second.errors).toEqual([]);
    expect(slices).toEqual([
      {
        gpu_instance_id: 1,
        gpu_instance_profile: '3g.40gb',
        fb_used_bytes: 12 * GIB,
        gpu_util: 0.8,
        sm_active: 0.6,
        sm_occupancy: 0.3,
        tensor_active: 0.4,
        dram_active: 0.5,
      },
      {
        gpu_instance_id: 5,
        gpu_instance_profile: '2g.20gb',
        fb_used_bytes: 4 * GIB,
        gpu_util: 0.4,
        sm_active: 0.3,
        sm_occupancy: 0.15,
        tensor_active: 0,
        dram_active: 0.2,
      },
      {
        gpu_instance_id: 6,
        gpu_instance_profile: '2g.20gb',
        fb_used_bytes: 0,
        gpu_util: 0,
        sm_active: 0,
        sm_occupancy: 0,
        tensor_active: 0,
        dram_active: 0,
      },
    ]);
    // The parent's utilization is per instance only in MIG mode; the other GPUs are read whole
    expect(second.gpus[3]).not.toHaveProperty('gpu_util');
    expect(second.gpus[2]?.gpu_util).toBe(0.5);
    expect(source.migSlices(2)).toBeUndefined();
    expect(fakeNvmlCallCount('nvmlGpmMigSampleGet')).toBe(3 * 2);
    expect(MIG_GPM_REQUESTS.map((r) => r.metricId)).toEqual([1, 2, 3, 5, 10]);
  });

  it('reads the memory through nvmlDeviceGetMemoryInfo where the driver lacks the _v2 call', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 0 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath('legacy') });
    // Act
    source.sample(AT);
    // Assess
    expect(source.migSlices(0)?.map((s) => s.fb_used_bytes)).toEqual([12 * GIB, 4 * GIB, 0]);
  });

  it('leaves the ratios absent and says once what it cannot read where GPM per instance is not supported', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3, NOT_SUPPORTED: ['nvmlGpmMigSampleGet'] });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    // Act
    for (let i = 0; i < 3; i++) source.sample(new Date(AT.getTime() + i * 1000));
    // Assess
    expect(source.migSlices(3)).toEqual([
      { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', fb_used_bytes: 12 * GIB },
      { gpu_instance_id: 5, gpu_instance_profile: '2g.20gb', fb_used_bytes: 4 * GIB },
      { gpu_instance_id: 6, gpu_instance_profile: '2g.20gb', fb_used_bytes: 0 },
    ]);
    const said = lines.filter((l) => l.data.call === 'nvmlGpmMigSampleGet');
    expect(said).toHaveLength(1);
    expect(said[0]?.message).toMatch(/does not support nvmlGpmMigSampleGet per GPU instance: sm_active/);
    expect(fakeNvmlCallCount('nvmlGpmMigSampleGet')).toBe(1);
  });

  it('says at open that no ratio is readable on a GPU without GPM (A100) and still reads memory per instance', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p4d', MIG_GPU: 1 });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    // Act
    source.sample(AT);
    source.sample(LATER);
    // Assess
    expect(lines.find((l) => l.data.mig === true)?.message).toMatch(
      /not readable here: sm_active, sm_occupancy, tensor_active, dram_active and gpu_util \(no GPM per instance/,
    );
    expect(source.migSlices(1)?.map((s) => Object.keys(s).sort())).toEqual([
      ['fb_used_bytes', 'gpu_instance_id', 'gpu_instance_profile'],
      ['fb_used_bytes', 'gpu_instance_id', 'gpu_instance_profile'],
      ['fb_used_bytes', 'gpu_instance_id', 'gpu_instance_profile'],
    ]);
    expect(fakeNvmlCallCount('nvmlGpmMigSampleGet')).toBe(0);
  });

  it('measures the GPU whole, and says why, when the instance profiles cannot be read', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3, NOT_SUPPORTED: ['nvmlDeviceGetAttributes_v2'] });
    const { logger, lines } = recordingLogger();
    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    source.sample(AT);
    // Assess
    expect(source.migSlices(3)).toBeUndefined();
    const mig = lines.filter((l) => l.data.mig === true);
    expect(mig).toHaveLength(1);
    expect(mig[0]).toMatchObject({ level: 'warn', data: { gpu_index: 3 } });
    expect(mig[0]?.message).toMatch(
      /GPU 3 is in MIG mode but its GPU instances cannot be read: nvmlDeviceGetAttributes_v2/,
    );
  });

  it('drops the instances of a GPU that is lost, and reads them again when it answers', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    source.sample(AT);
    // Act
    setFakeNvmlLostGpu(3);
    const lostAt = source.sample(LATER);
    const whileLost = source.migSlices(3);
    setFakeNvmlLostGpu(-1);
    source.sample(new Date(LATER.getTime() + 1000));
    const back = source.migSlices(3);
    // Assess
    expect(lostAt.events.map((e) => e.kind)).toEqual(['gpu_lost']);
    expect(whileLost).toBeUndefined();
    expect(back?.map((s) => s.gpu_instance_id)).toEqual([1, 5, 6]);
  });

  it('says nothing of MIG where no GPU is in MIG mode', () => {
    // Prepare
    const { logger, lines } = recordingLogger();
    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    source.sample(AT);
    // Assess
    expect(lines.filter((l) => l.data.mig === true)).toEqual([]);
    expect(source.migSlices(0)).toBeUndefined();
    expect(fakeNvmlCallCount('nvmlDeviceGetMaxMigDeviceCount')).toBe(0);
  });
});
