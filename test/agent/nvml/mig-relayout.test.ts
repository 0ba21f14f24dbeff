import { afterEach, describe, expect, it } from 'vitest';
import { MIG_FORCED_RESCAN_GAP_MS, MIG_RESCAN_INTERVAL_MS, NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv, setFakeNvmlMigLayout } from '../../setup/fake-nvml';
import { recordingLogger } from './recording-logger';

const T0 = Date.parse('2026-11-21T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);
const GIB = 1024 ** 3;
/** The calls a look at the MIG layout makes (nvml-mig-layout.ts). */
const LAYOUT_CALLS = [
  'nvmlDeviceGetMigMode',
  'nvmlDeviceGetMaxMigDeviceCount',
  'nvmlDeviceGetMigDeviceHandleByIndex',
  'nvmlDeviceGetGpuInstanceId',
  'nvmlDeviceGetAttributes_v2',
] as const;

function layoutCalls(): number[] {
  return LAYOUT_CALLS.map((call) => fakeNvmlCallCount(call));
}

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
  setFakeNvmlEnv({});
});

describe('NvmlSource follows a MIG re-partition without a restart', () => {
  it('reads the new instances after 3g.40gb + 2 × 2g.20gb become 7 × 1g.10gb, with one log line and no gpu_lost', () => {
    // Prepare: GPU 3 in MIG mode, read twice so GPM has an interval
    setFakeNvmlEnv({ MIG_GPU: 3 });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    source.sample(at(0));
    source.sample(at(1));
    const freedBefore = fakeNvmlCallCount('nvmlGpmSampleFree');
    const allocatedBefore = fakeNvmlCallCount('nvmlGpmSampleAlloc');
    const linesBefore = lines.length;
    // Act: nvidia-mig-manager re-partitions; the old MIG device handles answer NOT_FOUND
    setFakeNvmlMigLayout(3, '7x1g');
    const change = source.sample(at(2));
    const atChange = source.migSlices(3);
    const next = source.sample(at(3));
    const first = source.migSlices(3);
    source.sample(at(4));
    const second = source.migSlices(3);
    // Assess: the poll that met the stale handles drops their readings, says so once, loses nothing
    expect(change.events).toEqual([]);
    expect(change.errors).toEqual([]);
    expect(atChange).toBeUndefined();
    const said = lines.slice(linesBefore);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({
      level: 'info',
      data: {
        gpu_index: 3,
        was: '1 3g.40gb, 5 2g.20gb, 6 2g.20gb',
        gpu_instances: [
          '7:1g.10gb',
          '8:1g.10gb',
          '9:1g.10gb',
          '10:1g.10gb',
          '11:1g.10gb',
          '12:1g.10gb',
          '13:1g.10gb',
        ],
      },
    });
    expect(said[0]?.message).toMatch(
      /^GPU 3 was re-partitioned: GPU instances 1 3g\.40gb, 5 2g\.20gb, 6 2g\.20gb → 7 1g\.10gb, .*13 1g\.10gb; read per GPU instance, one window per instance$/,
    );
    // The old instances' GPM samples are freed, two new ones per new instance allocated
    expect(fakeNvmlCallCount('nvmlGpmSampleFree') - freedBefore).toBe(3 * 2);
    expect(fakeNvmlCallCount('nvmlGpmSampleAlloc') - allocatedBefore).toBe(7 * 2);
    // The next poll reads the seven instances: memory at once, GPM from the poll after
    expect(next.events).toEqual([]);
    expect(next.errors).toEqual([]);
    expect(first?.map((s) => [s.gpu_instance_id, s.gpu_instance_profile, s.fb_used_bytes])).toEqual(
      [7, 8, 9, 10, 11, 12, 13].map((id, k) => [id, '1g.10gb', (k + 1) * GIB]),
    );
    expect(second?.map((s) => s.gpu_util)).toEqual([0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
    expect(second?.[6]).toMatchObject({
      sm_active: 0.6,
      sm_occupancy: 0.3,
      tensor_active: 0,
      dram_active: 0.3,
    });
  });

  it.each([
    [2, 'INVALID_ARGUMENT'],
    [15, 'GPU_IS_LOST'],
    [1, 'UNINITIALIZED'],
    [999, 'UNKNOWN'],
  ])('never judges a stale MIG device handle answering %i (%s) a lost GPU', (code) => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    source.sample(at(0));
    // Act
    setFakeNvmlMigLayout(3, '7x1g', code);
    const change = source.sample(at(1));
    const next = source.sample(at(2));
    // Assess
    expect([...change.events, ...next.events]).toEqual([]);
    expect([...change.errors, ...next.errors]).toEqual([]);
    expect(next.gpus[3]).toBeDefined();
    expect(source.migSlices(3)?.map((s) => s.gpu_instance_id)).toEqual([7, 8, 9, 10, 11, 12, 13]);
  });

  it('tells apart an instance id kept with another profile (3g.40gb → 4g.40gb)', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    source.sample(at(0));
    // Act
    setFakeNvmlMigLayout(3, '4g+3g');
    source.sample(at(1));
    source.sample(at(2));
    // Assess
    expect(
      source.migSlices(3)?.map((s) => [s.gpu_instance_id, s.gpu_instance_profile, s.fb_used_bytes]),
    ).toEqual([
      [1, '4g.40gb', 20 * GIB],
      [2, '3g.40gb', 8 * GIB],
    ]);
  });

  it('reads the GPU whole again, utilization included, when MIG mode is switched off', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3, UTIL_GPU: 50 });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    const before = source.sample(at(0));
    const linesBefore = lines.length;
    // Act
    setFakeNvmlMigLayout(3, 'none');
    const change = source.sample(at(1));
    const after = source.sample(at(2));
    // Assess
    expect(before.gpus[3]).not.toHaveProperty('gpu_util');
    expect([...change.events, ...after.events]).toEqual([]);
    expect(source.migSlices(3)).toBeUndefined();
    expect(after.gpus[3]?.gpu_util).toBe(0.5);
    const said = lines.slice(linesBefore).filter((l) => l.data.gpu_index === 3 && 'mig' in l.data);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({
      level: 'info',
      data: { mig: false, was: '1 3g.40gb, 5 2g.20gb, 6 2g.20gb' },
    });
    expect(said[0]?.message).toMatch(/^GPU 3 left MIG mode .*: read whole again, one window for the GPU$/);
  });

  it('finds MIG mode switched on at the next look, 30 s of polls on, and reads the instances at once', () => {
    // Prepare: no GPU in MIG mode
    setFakeNvmlEnv({ UTIL_GPU: 50 });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    source.sample(at(0));
    // Act
    setFakeNvmlMigLayout(2, '3g+2x2g');
    const s = MIG_RESCAN_INTERVAL_MS / 1000;
    const before = source.sample(at(s - 1));
    const seen = source.sample(at(s));
    // Assess: unseen until the look (the parent's utilization answers NOT_SUPPORTED at once, as in
    // MIG mode), then read per instance at the poll of the look
    expect(before.gpus[2]).not.toHaveProperty('gpu_util');
    expect(before.gpus[1]?.gpu_util).toBe(0.5);
    expect(source.migSlices(2)?.map((x) => [x.gpu_instance_id, x.gpu_instance_profile])).toEqual([
      [1, '3g.40gb'],
      [5, '2g.20gb'],
      [6, '2g.20gb'],
    ]);
    expect(seen.gpus[2]).not.toHaveProperty('gpu_util');
    const said = lines.filter((l) => l.data.mig === true);
    expect(said).toHaveLength(1);
    expect(said[0]?.message).toMatch(
      /^GPU 2 was re-partitioned: GPU instances none \(MIG mode was off\) → 1 3g\.40gb/,
    );
  });

  it('makes no layout call between looks, and a look at an unchanged layout costs its calls and says nothing', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3 });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    const atOpen = layoutCalls();
    const s = MIG_RESCAN_INTERVAL_MS / 1000;
    // Act: a poll a second for just under the interval, then the poll that looks
    for (let i = 0; i < s; i++) source.sample(at(i));
    const between = layoutCalls();
    const linesBefore = lines.length;
    const look = source.sample(at(s));
    const afterLook = layoutCalls();
    // Assess
    expect(between).toEqual(atOpen);
    // MIG mode of the 8 GPUs; count, 7 indexes, an id per MIG device (4), attributes per instance (3)
    expect(afterLook.map((n, i) => n - (between[i] ?? 0))).toEqual([8, 1, 7, 4, 3]);
    expect(look.errors).toEqual([]);
    expect(lines.slice(linesBefore).map((l) => l.message)).toEqual([]);
    expect(source.migSlices(3)?.map((x) => x.gpu_instance_id)).toEqual([1, 5, 6]);
  });

  it('records a call that keeps failing on an unchanged layout as an error, looking again at most every 10 s', () => {
    // Prepare: memory per instance fails, the layout does not change
    setFakeNvmlEnv({ MIG_GPU: 3, FAIL_CALL: ['nvmlGpmMigSampleGet'] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const counts = fakeNvmlCallCount('nvmlDeviceGetMaxMigDeviceCount');
    const gap = MIG_FORCED_RESCAN_GAP_MS / 1000;
    // Act
    const results = Array.from({ length: gap + 1 }, (_, i) => source?.sample(at(i)));
    // Assess: every poll says what failed; two looks (at 0 s and 10 s), never a lost GPU
    for (const r of results) {
      expect(r?.events).toEqual([]);
      expect(r?.errors.map((e) => [e.call, e.gpuIndex, e.code])).toEqual([['nvmlGpmMigSampleGet', 3, 999]]);
    }
    expect(fakeNvmlCallCount('nvmlDeviceGetMaxMigDeviceCount') - counts).toBe(2);
    expect(source.migSlices(3)?.map((x) => x.fb_used_bytes)).toEqual([12 * GIB, 4 * GIB, 0]);
  });
});
