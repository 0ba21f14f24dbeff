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

describe('MigSliceTracker when a re-partition leaves instances that do not fit the GPU together', () => {
  it('keeps only the instances of the last poll: 7 × 1g.10gb then 3g.40gb + 2 × 2g.20gb is never 14 slices of 7', () => {
    // Prepare: two polls of seven 1g instances, then two of the new layout
    const tracker = new MigSliceTracker();
    const sevenOnes = [7, 8, 9, 10, 11, 12, 13].map((id) => ({
      gpu_instance_id: id,
      gpu_instance_profile: '1g.10gb',
      gpu_util: 1,
    }));
    const newLayout = [
      { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', gpu_util: 0.25 },
      { gpu_instance_id: 5, gpu_instance_profile: '2g.20gb', gpu_util: 0 },
      { gpu_instance_id: 6, gpu_instance_profile: '2g.20gb', gpu_util: 0 },
    ];
    tracker.add(0, sevenOnes);
    tracker.add(0, sevenOnes);
    tracker.add(0, newLayout);
    tracker.add(0, newLayout);
    // Act
    const out = tracker.split(
      [gpuWindow('flush', at(0), at(10)), gpuWindow('horizon', at(0), at(10))],
      at(0),
      at(10),
    );
    // Assess: both kinds keep the new layout only, and a later window knows nothing of the old
    expect(out.map((w) => [w.kind, w.gpu_instance_id, w.gpu_instance_profile, w.metrics.gpu_util])).toEqual([
      ['flush', 1, '3g.40gb', 0.25],
      ['flush', 5, '2g.20gb', 0],
      ['flush', 6, '2g.20gb', 0],
      ['horizon', 1, '3g.40gb', 0.25],
      ['horizon', 5, '2g.20gb', 0],
      ['horizon', 6, '2g.20gb', 0],
    ]);
    tracker.add(0, newLayout);
    const next = tracker.split([gpuWindow('flush', at(10), at(20))], at(10), at(20));
    expect(next.map((w) => w.gpu_instance_id)).toEqual([1, 5, 6]);
  });

  it('keeps every instance that fits beside the others: one added, or a lone one replaced on a GPU with room', () => {
    // Prepare: a 3g.40gb alone, then a 2g.20gb is added beside it; on GPU 1 a lone 3g id 1 becomes 3g id 2
    const tracker = new MigSliceTracker();
    tracker.add(0, [{ gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', gpu_util: 1 }]);
    tracker.add(0, [
      { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', gpu_util: 1 },
      { gpu_instance_id: 5, gpu_instance_profile: '2g.20gb', gpu_util: 0 },
    ]);
    tracker.add(1, [{ gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', gpu_util: 1 }]);
    tracker.add(1, [{ gpu_instance_id: 2, gpu_instance_profile: '3g.40gb', gpu_util: 0 }]);
    // Act
    const out = tracker.split(
      [gpuWindow('flush', at(0), at(10)), { ...gpuWindow('flush', at(0), at(10)), gpu: { index: 1 } }],
      at(0),
      at(10),
    );
    // Assess
    expect(out.map((w) => [w.gpu.index, w.gpu_instance_id])).toEqual([
      [0, 1],
      [0, 5],
      [1, 1],
      [1, 2],
    ]);
  });
});

describe('MigSliceTracker across a MIG mode switch inside a window', () => {
  const slice = { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', gpu_util: 1 };

  it("sends the GPU whole when its last poll read it whole (MIG off), dropping the slices' samples", () => {
    // Prepare
    const tracker = new MigSliceTracker();
    tracker.add(0, [slice]);
    // Act
    tracker.whole(0);
    const out = tracker.split([gpuWindow('flush', at(0), at(10))], at(0), at(10));
    // Assess
    expect(out).toEqual([gpuWindow('flush', at(0), at(10))]);
  });

  it('sends the slices when they came after the whole polls (MIG on), and a GPU only ever whole as it is', () => {
    // Prepare
    const tracker = new MigSliceTracker();
    tracker.whole(0);
    tracker.whole(1);
    // Act
    tracker.add(0, [slice]);
    tracker.whole(1);
    const out = tracker.split(
      [gpuWindow('flush', at(0), at(10)), { ...gpuWindow('flush', at(0), at(10)), gpu: { index: 1 } }],
      at(0),
      at(10),
    );
    // Assess
    expect(out.map((w) => [w.gpu.index, w.gpu_instance_id])).toEqual([
      [0, 1],
      [1, undefined],
    ]);
  });
});
