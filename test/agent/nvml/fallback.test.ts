import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { type FakeNvmlVariant, fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const MIB = 1024 * 1024;
const AT = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource symbol fallbacks', () => {
  it.each<{ variant: FakeNvmlVariant; used: string[]; unused: string[] }>([
    {
      variant: 'current',
      used: [
        'nvmlDeviceGetMemoryInfo_v2',
        'nvmlSystemGetCudaDriverVersion_v2',
        'nvmlDeviceGetCurrentClocksEventReasons',
      ],
      unused: [
        'nvmlDeviceGetMemoryInfo',
        'nvmlSystemGetCudaDriverVersion',
        'nvmlDeviceGetCurrentClocksThrottleReasons',
      ],
    },
    {
      variant: 'legacy',
      used: [
        'nvmlDeviceGetMemoryInfo',
        'nvmlSystemGetCudaDriverVersion',
        'nvmlDeviceGetCurrentClocksThrottleReasons',
      ],
      unused: [
        'nvmlDeviceGetMemoryInfo_v2',
        'nvmlSystemGetCudaDriverVersion_v2',
        'nvmlDeviceGetCurrentClocksEventReasons',
      ],
    },
  ])('binds the newest symbols the $variant library has', ({ variant, used, unused }) => {
    // Prepare
    setFakeNvmlEnv({});
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(variant) });
    // Act
    const { gpus, errors } = source.sample(AT);
    // Assess
    expect(errors).toEqual([]);
    expect(gpus[0]).toMatchObject({ fb_total_bytes: 81559 * MIB, fb_used_bytes: 551 * MIB });
    expect(source.versions().cuda_version).toBe('12.2');
    for (const symbol of used) expect(fakeNvmlCallCount(symbol, variant)).toBeGreaterThan(0);
    for (const symbol of unused) expect(fakeNvmlCallCount(symbol, variant)).toBe(0);
  });
});
