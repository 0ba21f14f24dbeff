import { afterEach, describe, expect, it } from 'vitest';
import { AgentLoop } from '../../../agent/agent-loop';
import { BatchBuilder } from '../../../agent/send/batcher';
import { MemorySink } from '../../../agent/send/memory-sink';
import { NvmlGpuSource } from '../../../agent/sources/nvml';
import type { SourceRegistry } from '../../../agent/sources/source-registry';
import { type Batch, parseBatch } from '../../../lambdas/contract';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';
import { openSources } from '../fixtures/agent-sources';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const GIB = 1024 ** 3;

let registry: SourceRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
  setFakeNvmlEnv({});
});

describe('the agent on NVML with an H100 in MIG mode', () => {
  it('sends one window per GPU instance, shaped as the dcgm-exporter path shapes them, and the other GPUs whole', async () => {
    // Prepare: GPU 3 in MIG mode (3g.40gb id 1, 2g.20gb id 5, idle 2g.20gb id 6), a hand-moved clock
    setFakeNvmlEnv({ MIG_GPU: 3, UTIL_GPU: 50, SM_ACTIVE: 40 });
    let t = T0;
    const clock = () => new Date(t);
    registry = await openSources([new NvmlGpuSource({ libraryPath: fakeNvmlPath() })], clock);
    const sent: Batch[] = [];
    const loop = new AgentLoop({
      sources: registry,
      host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      builder: new BatchBuilder({ clock }),
      delivery: new MemorySink(async (b) => void sent.push(b)),
      flushIntervalS: 5,
      sendIntervalS: 0,
      clock,
    });
    // Act: five polls a second apart, then the flush
    for (let i = 0; i < 5; i++) {
      t += 1000;
      loop.poll();
    }
    const batches = await loop.flush();
    // Assess
    expect(batches).toHaveLength(1);
    const batch = parseBatch(JSON.parse(JSON.stringify(batches[0])), clock());
    const flush = batch.windows.filter((w) => w.kind === 'flush');
    expect(flush.map((w) => [w.gpu.index, w.gpu_instance_id, w.gpu_instance_profile])).toEqual([
      [0, undefined, undefined],
      [1, undefined, undefined],
      [2, undefined, undefined],
      [3, 1, '3g.40gb'],
      [3, 5, '2g.20gb'],
      [3, 6, '2g.20gb'],
      [4, undefined, undefined],
      [5, undefined, undefined],
      [6, undefined, undefined],
      [7, undefined, undefined],
    ]);
    const slice = (id: number) => flush.find((w) => w.gpu_instance_id === id)?.metrics;
    // The first poll has no GPM interval yet: the ratios are the means of the four that have one
    expect(slice(1)).toMatchObject({
      gpu_util: 0.8,
      sm_active: 0.6,
      sm_occupancy: 0.3,
      tensor_active: 0.4,
      dram_active: 0.5,
      fb_used_bytes: 12 * GIB,
    });
    expect(slice(5)).toMatchObject({
      gpu_util: 0.4,
      sm_active: 0.3,
      tensor_active: 0,
      fb_used_bytes: 4 * GIB,
    });
    expect(slice(6)).toMatchObject({ gpu_util: 0, sm_active: 0, dram_active: 0, fb_used_bytes: 0 });
    // GPU-wide readings once, on the first slice; none of the whole GPU's processes on a slice
    expect(slice(1)).toHaveProperty('power_w');
    expect(slice(5)).not.toHaveProperty('power_w');
    expect(flush.find((w) => w.gpu_instance_id === 1)).not.toHaveProperty('processes');
    // The other GPUs keep their whole-GPU reading
    expect(flush.find((w) => w.gpu.index === 2)?.metrics).toMatchObject({ gpu_util: 0.5, sm_active: 0.4 });
  });
});
