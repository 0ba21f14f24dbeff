import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { EventSchema } from '../../../lambdas/contract';
import { fakeNvmlPath, setFakeNvmlEnv, setFakeNvmlLostGpu } from '../../setup/fake-nvml';

const T0 = new Date('2026-11-21T10:00:00Z');
const T1 = new Date('2026-11-21T10:00:01Z');
const T2 = new Date('2026-11-21T10:00:02Z');
const T3 = new Date('2026-11-21T10:00:03Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource with a lost GPU', () => {
  it('reports one gpu_lost event for a GPU lost mid-run and still samples the other 7', () => {
    // Prepare
    setFakeNvmlEnv({});
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    source.sample(T0);
    setFakeNvmlLostGpu(3);
    // Act
    const first = source.sample(T1);
    const second = source.sample(T2);
    // Assess
    expect(first.events).toEqual([
      {
        at: T1.toISOString(),
        kind: 'gpu_lost',
        source: 'nvml',
        gpu_index: 3,
        pci_bus_id: '0000:5d:00.0',
        detail: 'nvmlDeviceGetUtilizationRates returned 15 (GPU is lost)',
      },
    ]);
    expect(EventSchema.safeParse(first.events[0]).success).toBe(true);
    expect(first.gpus.map((g) => g.gpu_index)).toEqual([0, 1, 2, 4, 5, 6, 7]);
    expect(first.gpus.every((g) => g.power_w !== undefined && g.fb_total_bytes !== undefined)).toBe(true);
    expect(first.errors).toEqual([]);
    expect(second.events).toEqual([]);
    expect(second.gpus).toHaveLength(7);
    expect(source.stats.nvml_errors).toBe(0);
  });

  it('reports a GPU lost at open once, without its bus id when NVML could not read it', () => {
    // Prepare
    setFakeNvmlEnv({ LOST_GPU: 5 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const first = source.sample(T1);
    const second = source.sample(T2);
    // Assess
    expect(source.identity()[5]).toEqual({ index: 5 });
    expect(first.events).toHaveLength(1);
    expect(first.events[0]).toMatchObject({ kind: 'gpu_lost', source: 'nvml', gpu_index: 5 });
    expect(first.events[0]).not.toHaveProperty('pci_bus_id');
    expect(first.gpus).toHaveLength(7);
    expect(second.events).toEqual([]);
  });

  it('reports a second loss after the GPU answered again', () => {
    // Prepare
    setFakeNvmlEnv({});
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    setFakeNvmlLostGpu(0);
    const lost = source.sample(T0);
    setFakeNvmlLostGpu(-1);
    // Act
    const back = source.sample(T1);
    setFakeNvmlLostGpu(0);
    const lostAgain = source.sample(T2);
    const stillLost = source.sample(T3);
    // Assess
    expect(lost.events).toHaveLength(1);
    expect(back.events).toEqual([]);
    expect(back.gpus).toHaveLength(8);
    expect(lostAgain.events).toHaveLength(1);
    expect(lostAgain.events[0]).toMatchObject({ at: T2.toISOString(), gpu_index: 0 });
    expect(stillLost.events).toEqual([]);
  });
});
