import { bench, describe } from 'vitest';
import { NvmlSource } from '../../agent/sources/nvml';
import { aggregateWindow } from '../../agent/window/aggregate';
import type { GpuSample } from '../../agent/window/gpu-sample';
import { fakeNvmlPath, setFakeNvmlEnv } from '../setup/fake-nvml';

/**
 * The agent's hot path against the fake libnvidia-ml.so (8× H100 preset): one `sample()` of all
 * GPUs through koffi, and one 10-sample window aggregation. The fake answers instantly, so this is
 * the agent's own cost (FFI + conversion), not the driver's ioctl time.
 */
setFakeNvmlEnv({ PRESET: 'p5' });
const source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
const t0 = Date.now();
const samples: GpuSample[] = Array.from(
  { length: 10 },
  (_, i) => source.sample(new Date(t0 + i * 1000)).gpus[0]!,
);

describe('NVML source, 8 GPUs (fake library, p5 preset)', () => {
  bench('sample() of 8 GPUs (≈ 20 NVML calls per GPU)', () => {
    source.sample(new Date());
  });

  bench('aggregateWindow of 10 samples of one GPU', () => {
    aggregateWindow(samples, new Date(samples[0]!.at_ms), new Date(samples[9]!.at_ms + 1000), { index: 0 });
  });
});
