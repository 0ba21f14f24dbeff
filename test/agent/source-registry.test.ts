import { describe, expect, it } from 'vitest';
import type { AgentSource, SampleSink, SourceContext } from '../../agent/sources/source';
import { SourceRegistry } from '../../agent/sources/source-registry';
import { COLUMN_INDEX, GpuRow, sampleFromRow } from '../../agent/window/gpu-row';
import type { MigSliceReading } from '../../agent/window/mig-slices';
import type { GpuEvent, GpuIdentity } from '../../lambdas/contract';

const T0 = new Date('2026-11-21T10:00:00.000Z');
const IDS: GpuIdentity[] = [
  { index: 0, uuid: 'GPU-aaaa' },
  { index: 1, uuid: 'GPU-bbbb' },
];

/** A GPU inventory source: two GPUs, `extra` fields on every reading. */
function gpus(extra: Record<string, unknown> = {}): AgentSource {
  return {
    name: 'gpus',
    open: () => ({ supported: true }),
    sample: (into: SampleSink, now: Date) => {
      for (const id of IDS) into.gpu({ gpu_index: id.index, at_ms: now.getTime(), gpu_util: 1, ...extra });
    },
    identity: () => IDS,
    close: () => {},
  };
}

/** A source that records its calls into `log`. */
function recorder(name: string, log: string[], support = true): AgentSource {
  return {
    name,
    open: () => {
      log.push(`open ${name}`);
      return support ? { supported: true } : { supported: false, reason: `${name} absent` };
    },
    sample: () => void log.push(`sample ${name}`),
    close: () => void log.push(`close ${name}`),
  };
}

const context = (events: GpuEvent[] = []): Omit<SourceContext, 'timers'> => ({
  clock: () => T0,
  emit: (e) => events.push(e),
  warn: () => {},
});

describe('SourceRegistry', () => {
  it('opens in order, polls only the supported sources, and closes every started one in reverse', async () => {
    // Prepare
    const log: string[] = [];
    const registry = new SourceRegistry([recorder('a', log), recorder('b', log, false), recorder('c', log)]);

    // Act
    const opened = await registry.open(context());
    registry.sample(T0);
    await registry.close();

    // Assess
    expect(opened).toEqual([
      { name: 'a', support: { supported: true } },
      { name: 'b', support: { supported: false, reason: 'b absent' } },
      { name: 'c', support: { supported: true } },
    ]);
    expect(log).toEqual([
      'open a',
      'open b',
      'open c',
      'sample a',
      'sample c',
      'close c',
      'close b',
      'close a',
    ]);
  });

  it('closes the sources already started when a later one throws, and passes the error on', async () => {
    // Prepare
    const log: string[] = [];
    const failing: AgentSource = {
      name: 'nvml',
      open: () => {
        throw new Error('no libnvidia-ml');
      },
      close: () => {},
    };
    const registry = new SourceRegistry([recorder('a', log), failing, recorder('c', log)]);

    // Act
    const act = registry.open(context());

    // Assess
    await expect(act).rejects.toThrow('no libnvidia-ml');
    expect(log).toEqual(['open a', 'close a']);
  });

  it.each([
    [
      'a reading without profiling counters takes the overlay',
      {},
      { gpu_util: 1, sm_active: 0.02, tensor_active: 0 },
    ],
    ['a reading with GPM counters keeps its own', { sm_active: 0.9 }, { gpu_util: 1, sm_active: 0.9 }],
  ])('merges overlays: %s', async (_name, extra, expected) => {
    // Prepare
    const overlay: AgentSource = {
      name: 'dcgm',
      open: () => ({ supported: true }),
      sample: (into) => into.overlay(0, { sm_active: 0.02, tensor_active: 0, gpu_util: 0.1 }),
      close: () => {},
    };
    const registry = new SourceRegistry([gpus(extra), overlay]);
    await registry.open(context());

    // Act
    const reading = registry.sample(T0);

    // Assess
    expect(reading.gpus[0]).toEqual({ gpu_index: 0, at_ms: T0.getTime(), ...expected });
    expect(reading.gpus[1]).toEqual({ gpu_index: 1, at_ms: T0.getTime(), gpu_util: 1, ...extra });
  });

  it('fills a row without profiling counters from the overlay, only where the row has nothing', async () => {
    // Prepare
    const rows = [new GpuRow(0), new GpuRow(1)];
    const nvmlLike: AgentSource = {
      name: 'nvml',
      open: () => ({ supported: true }),
      sample: (into, now) => {
        for (const row of rows) {
          row.reset(now.getTime());
          row.values[COLUMN_INDEX.gpu_util] = 1;
          into.row(row);
        }
        (rows[1] as GpuRow).values[COLUMN_INDEX.sm_active] = 0.9;
      },
      identity: () => IDS,
      close: () => {},
    };
    const overlay: AgentSource = {
      name: 'dcgm',
      open: () => ({ supported: true }),
      sample: (into) => {
        for (const index of [0, 1])
          into.overlay(index, {
            sm_active: 0.02,
            tensor_active: 0,
            gpu_util: 0.1,
            remapped_rows_pending: true,
          });
      },
      close: () => {},
    };
    const registry = new SourceRegistry([nvmlLike, overlay]);
    await registry.open(context());

    // Act
    const reading = registry.sample(T0);

    // Assess
    expect(reading.rows?.map(sampleFromRow)).toEqual([
      {
        gpu_index: 0,
        at_ms: T0.getTime(),
        gpu_util: 1,
        sm_active: 0.02,
        tensor_active: 0,
        remapped_rows_pending: true,
      },
      { gpu_index: 1, at_ms: T0.getTime(), gpu_util: 1, sm_active: 0.9 },
    ]);
  });

  it('gathers events and errors of a poll, the inventory, the pod of a GPU and the window values', async () => {
    // Prepare
    const lost: GpuEvent = { at: T0.toISOString(), kind: 'gpu_lost', source: 'nvml', gpu_index: 1 };
    const other: AgentSource = {
      name: 'other',
      open: () => ({ supported: true }),
      sample: (into) => {
        into.event(lost);
        into.error(new Error('nvmlDeviceGetPowerUsage failed'));
      },
      workload: (gpu) => (gpu.uuid === 'GPU-bbbb' ? { namespace: 'ml', pod: 'train-1' } : undefined),
      window: (into, start, end) =>
        into.efa({
          start: start.toISOString(),
          end: end.toISOString(),
          device: 'rdmap0',
          port: 1,
          deltas: { tx_bytes: 5 },
        }),
      close: () => {},
    };
    const registry = new SourceRegistry([gpus(), other]);
    await registry.open(context());

    // Act
    const reading = registry.sample(T0);
    const efa = registry.window(T0, new Date(T0.getTime() + 10_000));

    // Assess
    expect(reading.events).toEqual([lost]);
    expect(reading.errors).toHaveLength(1);
    expect(registry.identity()).toEqual(IDS);
    expect(registry.workload(IDS[1]!)).toEqual({ namespace: 'ml', pod: 'train-1' });
    expect(registry.workload(IDS[0]!)).toBeUndefined();
    expect(efa).toEqual([expect.objectContaining({ device: 'rdmap0', deltas: { tx_bytes: 5 } })]);
  });

  it("takes a MIG GPU's slices from the first source that reads them, completed by a later one's pod and activity", async () => {
    // Prepare: NVML reads slices 1 and 5 (memory; GPM only on 1), dcgm-exporter slices 5 and 9 with pods
    const slicing = (name: string, slices: MigSliceReading[]): AgentSource => ({
      name,
      open: () => ({ supported: true }),
      migSlices: (gpu) => (gpu.index === 0 ? slices : undefined),
      close: () => {},
    });
    const nvml = slicing('nvml', [
      { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', fb_used_bytes: 10, sm_active: 0.6 },
      { gpu_instance_id: 5, gpu_instance_profile: '2g.20gb', fb_used_bytes: 20 },
    ]);
    const dcgm = slicing('dcgm', [
      {
        gpu_instance_id: 5,
        gpu_instance_profile: '2g.20gb',
        gpu_util: 0.3,
        fb_used_bytes: 99,
        k8s: { namespace: 'ml', pod: 'serve-5' },
      },
      { gpu_instance_id: 9, gpu_instance_profile: '1g.10gb', gpu_util: 1 },
    ]);
    const registry = new SourceRegistry([gpus(), nvml, dcgm]);
    await registry.open(context());

    // Act
    const slices = registry.migSlices(IDS[0]!);

    // Assess
    expect(slices).toEqual([
      { gpu_instance_id: 1, gpu_instance_profile: '3g.40gb', fb_used_bytes: 10, sm_active: 0.6 },
      {
        gpu_instance_id: 5,
        gpu_instance_profile: '2g.20gb',
        fb_used_bytes: 20,
        gpu_util: 0.3,
        k8s: { namespace: 'ml', pod: 'serve-5' },
      },
    ]);
    expect(registry.migSlices(IDS[1]!)).toBeUndefined();
  });

  it('has no GPUs when no open source inventories any', async () => {
    // Prepare
    const registry = new SourceRegistry([recorder('a', [])]);
    await registry.open(context());

    // Act / Assess
    expect(registry.identity()).toEqual([]);
    expect(registry.sample(T0)).toEqual({ gpus: [], rows: [], events: [], errors: [] });
  });
});
