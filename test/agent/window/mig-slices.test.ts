import { describe, expect, it } from 'vitest';
import { MigSliceTracker } from '../../../agent/window/mig-slices';
import type { GpuWindow } from '../../../lambdas/contract';

const at = (s: number) => new Date(Date.UTC(2026, 2, 10, 12, 0, s));
const gpuWindow = (kind: 'flush' | 'horizon', start: Date, end: Date, index = 0): GpuWindow => ({
  kind,
  start: start.toISOString(),
  end: end.toISOString(),
  gpu: { index, name: 'NVIDIA A100-SXM4-80GB' },
  metrics: {
    gpu_util: 0.5,
    gpu_temp_c: 61,
    power_w: 250,
    fb_used_bytes: 2e9,
    fb_total_bytes: 8e10,
    compute_processes: 2,
  },
  processes: [{ pid: 42, fb_used_bytes: 1e9 }],
  k8s: { namespace: 'ml', pod: 'whole-gpu-pod' },
});

describe('MigSliceTracker', () => {
  it("replaces a MIG GPU's window by one per slice: its own mean activity, framebuffer and pod; GPU-wide readings once", () => {
    // Prepare: GPU 0 split 3g + 4g, read twice; GPU 1 not in MIG mode
    const tracker = new MigSliceTracker();
    tracker.add(0, [
      { gpu_instance_id: 2, gpu_instance_profile: '4g.40gb', gpu_util: 0 },
      {
        gpu_instance_id: 1,
        gpu_instance_profile: '3g.40gb',
        gpu_util: 1,
        fb_used_bytes: 1000,
        k8s: { namespace: 'a', pod: 'p' },
      },
    ]);
    tracker.add(0, [
      {
        gpu_instance_id: 1,
        gpu_instance_profile: '3g.40gb',
        gpu_util: 0.5,
        fb_used_bytes: 3000,
        k8s: { namespace: 'a', pod: 'p' },
      },
      { gpu_instance_id: 2, gpu_instance_profile: '4g.40gb' },
    ]);
    // Act
    const out = tracker.split(
      [gpuWindow('flush', at(0), at(10)), gpuWindow('flush', at(0), at(10), 1)],
      at(0),
      at(10),
    );
    // Assess
    expect(out.map((w) => [w.gpu.index, w.gpu_instance_id, w.gpu_instance_profile])).toEqual([
      [0, 1, '3g.40gb'],
      [0, 2, '4g.40gb'],
      [1, undefined, undefined],
    ]);
    expect(out[0]).toMatchObject({
      metrics: { gpu_util: 0.75, fb_used_bytes: 2000, gpu_temp_c: 61, power_w: 250 },
      k8s: { pod: 'p' },
    });
    expect(out[0]?.metrics.compute_processes).toBeUndefined();
    expect(out[0]?.metrics.fb_total_bytes).toBeUndefined();
    expect(out[0]?.processes).toBeUndefined();
    expect(out[1]?.metrics).toEqual({ gpu_util: 0 });
    expect(out[1]?.k8s).toBeUndefined();
    expect(out[2]).toEqual(gpuWindow('flush', at(0), at(10), 1));
  });

  it("gives a slice's horizon the time-weighted mean of its windows inside it, and stops after the flush closes", () => {
    // Prepare: slice 1 busy in the first 10 s window, idle in the second
    const tracker = new MigSliceTracker();
    const slice = (gpu_util: number) => [{ gpu_instance_id: 1, gpu_instance_profile: '1g.10gb', gpu_util }];
    tracker.add(0, slice(1));
    tracker.split([gpuWindow('flush', at(0), at(10))], at(0), at(10));
    tracker.add(0, slice(0));
    // Act
    const out = tracker.split(
      [gpuWindow('flush', at(10), at(20)), gpuWindow('horizon', at(0), at(20))],
      at(10),
      at(20),
    );
    const after = tracker.split([gpuWindow('flush', at(20), at(30))], at(20), at(30));
    // Assess
    expect(out.map((w) => [w.kind, w.metrics.gpu_util])).toEqual([
      ['flush', 0],
      ['horizon', 0.5],
    ]);
    expect(after[0]?.gpu_instance_id).toBeUndefined();
  });

  it("averages a slice's GPM ratios like its activity, and leaves absent the ones its source did not read", () => {
    // Prepare: NVML GPM per GPU instance on slice 1 over two windows; slice 2 with activity only
    const tracker = new MigSliceTracker();
    const gpm = (sm_active: number) => ({
      gpu_instance_id: 1,
      gpu_instance_profile: '3g.40gb',
      gpu_util: 0.8,
      sm_active,
      sm_occupancy: sm_active / 2,
      tensor_active: 0.4,
      dram_active: 0.5,
    });
    tracker.add(0, [gpm(0.6), { gpu_instance_id: 2, gpu_instance_profile: '4g.40gb', gpu_util: 0.1 }]);
    tracker.add(0, [gpm(0.2)]);
    const first = tracker.split([gpuWindow('flush', at(0), at(10))], at(0), at(10));
    tracker.add(0, [gpm(1)]);
    // Act
    const out = tracker.split(
      [gpuWindow('flush', at(10), at(30)), gpuWindow('horizon', at(0), at(30))],
      at(10),
      at(30),
    );
    // Assess
    expect(first[0]?.metrics).toMatchObject({
      sm_active: 0.4,
      sm_occupancy: 0.2,
      tensor_active: 0.4,
      dram_active: 0.5,
    });
    expect(first[1]?.metrics).toEqual({ gpu_util: 0.1 });
    expect(out.map((w) => [w.kind, w.metrics.sm_active])).toEqual([
      ['flush', 1],
      ['horizon', (0.4 * 10 + 1 * 20) / 30],
    ]);
  });
});
