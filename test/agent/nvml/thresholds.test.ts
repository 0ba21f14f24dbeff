import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const AT = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource temperature thresholds', () => {
  it.each([
    { preset: 'p5' as const, want: { shutdown_c: 92, slowdown_c: 87, gpu_max_c: 85 } },
    { preset: 'p4d' as const, want: { shutdown_c: 92, slowdown_c: 89, gpu_max_c: 85 } },
  ])('reads the $preset thresholds once at open', ({ preset, want }) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: preset });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    for (let i = 0; i < 3; i++) source.sample(AT);
    const thresholds = source.thresholds();
    // Assess
    expect(thresholds).toEqual(Array(8).fill(want));
    expect(fakeNvmlCallCount('nvmlDeviceGetTemperatureThreshold')).toBe(8 * 3);
  });

  it('leaves the thresholds absent when NVML cannot give them', () => {
    // Prepare
    setFakeNvmlEnv({ NOT_SUPPORTED: ['nvmlDeviceGetTemperatureThreshold'] });
    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Assess
    expect(source.thresholds()).toEqual(Array(8).fill({}));
    expect(source.sample(AT).errors).toEqual([]);
  });
});
