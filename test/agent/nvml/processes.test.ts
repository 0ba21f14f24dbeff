import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { GpuProcessSchema } from '../../../lambdas/contract';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const MIB = 1024 * 1024;
const AT = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource process list', () => {
  it.each([
    { case: 'no process', settings: {}, count: 0, want: [] },
    {
      case: 'three processes, largest first',
      settings: { PROCESSES: 3 },
      count: 3,
      want: [
        { pid: 4102, fb_used_bytes: 512 * MIB },
        { pid: 4101, fb_used_bytes: 384 * MIB },
        { pid: 4100, fb_used_bytes: 256 * MIB },
      ],
    },
    {
      case: 'memory NVML cannot tell, omitted and listed last',
      settings: { PROCESSES: 3, PROCESS_MEMORY_UNAVAILABLE: 1 },
      count: 3,
      want: [{ pid: 4102, fb_used_bytes: 512 * MIB }, { pid: 4101, fb_used_bytes: 384 * MIB }, { pid: 4100 }],
    },
  ])('lists $case on GPU 1', ({ settings, count, want }) => {
    // Prepare
    setFakeNvmlEnv(settings);
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const gpu = source.sample(AT).gpus[1];
    // Assess
    expect(gpu?.compute_processes).toBe(count);
    expect(gpu?.processes).toEqual(want);
    for (const process of gpu?.processes ?? [])
      expect(GpuProcessSchema.safeParse(process).success).toBe(true);
  });

  it('counts every process but keeps the 64 largest', () => {
    // Prepare
    setFakeNvmlEnv({ PROCESSES: 70 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const gpu = source.sample(AT).gpus[0];
    // Assess
    expect(gpu?.compute_processes).toBe(70);
    expect(gpu?.processes).toHaveLength(64);
    expect(gpu?.processes?.[0]).toEqual({ pid: 4069, fb_used_bytes: (256 + 128 * 69) * MIB });
    expect(gpu?.processes?.[63]?.pid).toBe(4006);
  });

  it.each([
    { case: 'processes that fit the buffer', processes: 3, extraFirst: 0 },
    // The buffer is shared by the GPUs: the first GPU grows it (a second call), the others fit.
    { case: 'more processes than the buffer holds (grown once)', processes: 40, extraFirst: 1 },
  ])('makes one call per GPU and sample for $case', ({ processes, extraFirst }) => {
    // Prepare
    setFakeNvmlEnv({ PROCESSES: processes });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const gpus = source.identity().length;
    const perSample = (): number => {
      const before = fakeNvmlCallCount('nvmlDeviceGetComputeRunningProcesses_v3');
      source?.sample(AT);
      return fakeNvmlCallCount('nvmlDeviceGetComputeRunningProcesses_v3') - before;
    };

    // Act
    const first = perSample();
    const second = perSample();

    // Assess
    expect([first, second]).toEqual([gpus + extraFirst, gpus]);
    expect(source.sample(AT).gpus[0]?.processes).toHaveLength(processes);
  });
});
