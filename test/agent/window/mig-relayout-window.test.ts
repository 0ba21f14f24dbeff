import { describe, expect, it } from 'vitest';
import { MigSliceTracker } from '../../../agent/window/mig-slices';
import type { GpuWindow } from '../../../lambdas/contract';

const at = (s: number) => new Date(Date.UTC(2026, 2, 10, 12, 0, s));
const gpuWindow = (kind: 'flush' | 'horizon', start: Date, end: Date): GpuWindow => ({
  kind,
  start: start.toISOString(),
  end: end.toISOString(),
  gpu: { index: 0, name: 'NVIDIA H100 80GB HBM3' },
  metrics: { gpu_temp_c: 61, power_w: 250 },
});

describe('MigSliceTracker across a re-partition inside a window', () => {
  it('never mixes a destroyed instance and a new one under one id: the window keeps the new one only', () => {
    // Prepare: id 3 is a busy 1g.10gb for two polls, then a re-partition makes id 3 an idle 3g.40gb
    const tracker = new MigSliceTracker();
    tracker.add(0, [
      { gpu_instance_id: 3, gpu_instance_profile: '1g.10gb', gpu_util: 1, fb_used_bytes: 9e9 },
    ]);
    tracker.add(0, [
      { gpu_instance_id: 3, gpu_instance_profile: '1g.10gb', gpu_util: 1, fb_used_bytes: 9e9 },
    ]);
    // Act
    tracker.add(0, [
      { gpu_instance_id: 3, gpu_instance_profile: '3g.40gb', gpu_util: 0, fb_used_bytes: 1e9 },
      { gpu_instance_id: 9, gpu_instance_profile: '1g.10gb', gpu_util: 0.5 },
    ]);
    const out = tracker.split([gpuWindow('flush', at(0), at(10))], at(0), at(10));
    // Assess
    expect(
      out.map((w) => [
        w.gpu_instance_id,
        w.gpu_instance_profile,
        w.metrics.gpu_util,
        w.metrics.fb_used_bytes,
      ]),
    ).toEqual([
      [3, '3g.40gb', 0, 1e9],
      [9, '1g.10gb', 0.5, undefined],
    ]);
  });

  it("starts the new instance's horizon afresh instead of averaging in the destroyed one's windows", () => {
    // Prepare: a window of the busy 1g.10gb id 3, then a window of the idle 3g.40gb id 3
    const tracker = new MigSliceTracker();
    tracker.add(0, [{ gpu_instance_id: 3, gpu_instance_profile: '1g.10gb', gpu_util: 1 }]);
    tracker.split([gpuWindow('flush', at(0), at(10))], at(0), at(10));
    tracker.add(0, [{ gpu_instance_id: 3, gpu_instance_profile: '3g.40gb', gpu_util: 0 }]);
    // Act: the horizon spans both windows
    const out = tracker.split(
      [gpuWindow('flush', at(10), at(20)), gpuWindow('horizon', at(0), at(20))],
      at(10),
      at(20),
    );
    // Assess
    const horizon = out.find((w) => w.kind === 'horizon');
    expect(horizon).toMatchObject({ gpu_instance_id: 3, gpu_instance_profile: '3g.40gb' });
    expect(horizon?.metrics.gpu_util).toBe(0);
  });

  it('keeps the profile and the samples of an instance that comes back unchanged', () => {
    // Prepare
    const tracker = new MigSliceTracker();
    // Act
    tracker.add(0, [{ gpu_instance_id: 3, gpu_instance_profile: '1g.10gb', gpu_util: 1 }]);
    tracker.add(0, [{ gpu_instance_id: 3, gpu_instance_profile: '1g.10gb', gpu_util: 0 }]);
    const out = tracker.split([gpuWindow('flush', at(0), at(10))], at(0), at(10));
    // Assess
    expect(out[0]?.metrics.gpu_util).toBe(0.5);
  });
});
