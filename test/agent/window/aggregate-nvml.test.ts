import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { aggregateWindow, type GpuSample } from '../../../agent/window';
import { GpuWindowSchema } from '../../../lambdas/contract';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const START = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('aggregateWindow over real NvmlSource samples', () => {
  it.each([
    { preset: 'p5' as const, util: 0, limit: 700 },
    { preset: 'p4d' as const, util: 80, limit: 400 },
  ])('builds contract-valid $preset windows from 10 sample() calls', ({ preset, util, limit }) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: preset, UTIL_GPU: util, PROCESSES: util > 0 ? 1 : 0 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const perGpu = new Map<number, GpuSample[]>();
    for (let second = 1; second <= 10; second++) {
      for (const sample of source.sample(new Date(START.getTime() + second * 1000)).gpus) {
        perGpu.set(sample.gpu_index, [...(perGpu.get(sample.gpu_index) ?? []), sample]);
      }
    }
    const end = new Date(START.getTime() + 10_000);
    // Act
    const windows = source
      .identity()
      .map((gpu) => aggregateWindow(perGpu.get(gpu.index) ?? [], START, end, gpu));
    // Assess
    expect(windows).toHaveLength(8);
    for (const window of windows) {
      const parsed = GpuWindowSchema.safeParse(window);
      expect(parsed.error?.issues ?? []).toEqual([]);
      expect(window.metrics).toMatchObject({
        gpu_util: util / 100,
        power_limit_w: limit,
        compute_processes: util > 0 ? 1 : 0,
      });
      expect(window.metrics.energy_j).toBeGreaterThanOrEqual(0);
      expect(window.metrics.power_w).toBeGreaterThanOrEqual(0);
      expect(window.metrics.power_cv).toBe(0);
    }
  });
});
