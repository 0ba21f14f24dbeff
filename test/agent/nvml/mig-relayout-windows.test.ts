import { afterEach, describe, expect, it } from 'vitest';
import { AgentLoop } from '../../../agent/agent-loop';
import { BatchBuilder } from '../../../agent/send/batcher';
import { MemorySink } from '../../../agent/send/memory-sink';
import { NvmlGpuSource } from '../../../agent/sources/nvml';
import type { SourceRegistry } from '../../../agent/sources/source-registry';
import { type Batch, parseBatch } from '../../../lambdas/contract';
import {
  type FakeNvmlSettings,
  fakeNvmlPath,
  setFakeNvmlEnv,
  setFakeNvmlMigLayout,
} from '../../setup/fake-nvml';
import { openSources } from '../fixtures/agent-sources';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');

let registry: SourceRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
  setFakeNvmlEnv({});
});

/** An agent on the fake NVML (GPU 3 in MIG mode unless told), a hand-moved clock, 5 s flush windows. */
async function agentOnMigGpu(settings: FakeNvmlSettings = { MIG_GPU: 3 }) {
  setFakeNvmlEnv({ ...settings, UTIL_GPU: 50 });
  let t = T0;
  const clock = () => new Date(t);
  registry = await openSources([new NvmlGpuSource({ libraryPath: fakeNvmlPath() })], clock);
  const loop = new AgentLoop({
    sources: registry,
    host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
    agent: { version: '0.1.0', profiling_source: 'gpm' },
    builder: new BatchBuilder({ clock }),
    delivery: new MemorySink(async () => {}),
    flushIntervalS: 5,
    sendIntervalS: 0,
    clock,
  });
  /** Polls once a second, `n` times. */
  const poll = (n: number) => {
    for (let i = 0; i < n; i++) {
      t += 1000;
      loop.poll();
    }
  };
  /** Flushes, checks the batch against the contract as the pipeline does, returns GPU 3's flush windows. */
  const flush = async () => {
    const batches = await loop.flush();
    const batch: Batch = parseBatch(JSON.parse(JSON.stringify(batches[0])), clock());
    return batch.windows.filter((w) => w.kind === 'flush' && w.gpu.index === 3);
  };
  return { poll, flush };
}

describe('the agent on NVML across a MIG re-partition inside a flush window', () => {
  it('sends the new instances only, in a batch the contract takes, when 3g.40gb + 2 × 2g.20gb become 7 × 1g.10gb', async () => {
    // Prepare: one window of the preset
    const { poll, flush } = await agentOnMigGpu();
    poll(5);
    const before = await flush();
    // Act: two polls of the old layout, the re-partition, three polls (the first meets the stale handles)
    poll(2);
    setFakeNvmlMigLayout(3, '7x1g');
    poll(3);
    const spanning = await flush();
    poll(5);
    const after = await flush();
    // Assess
    expect(before.map((w) => w.gpu_instance_id)).toEqual([1, 5, 6]);
    expect(spanning.map((w) => [w.gpu_instance_id, w.gpu_instance_profile])).toEqual(
      [7, 8, 9, 10, 11, 12, 13].map((id) => [id, '1g.10gb']),
    );
    expect(after.map((w) => w.gpu_instance_id)).toEqual([7, 8, 9, 10, 11, 12, 13]);
    expect(after.find((w) => w.gpu_instance_id === 13)?.metrics).toMatchObject({
      gpu_util: 0.6,
      fb_used_bytes: 7 * 1024 ** 3,
    });
  });

  it('sends the window that spans MIG mode switched off whole, as its last polls read the GPU', async () => {
    // Prepare
    const { poll, flush } = await agentOnMigGpu();
    poll(5);
    await flush();
    // Act: two polls in MIG mode, then MIG off: the first poll after it meets the stale handles
    poll(2);
    setFakeNvmlMigLayout(3, 'none');
    poll(3);
    const spanning = await flush();
    poll(5);
    const after = await flush();
    // Assess: the whole GPU's utilization of the window's tail, no slice beside it
    expect(spanning.map((w) => w.gpu_instance_id)).toEqual([undefined]);
    expect(spanning[0]?.metrics.gpu_util).toBe(0.5);
    expect(after.map((w) => w.gpu_instance_id)).toEqual([undefined]);
    expect(after[0]?.metrics.gpu_util).toBe(0.5);
  });

  it('sends the window that spans MIG mode switched on per instance, from the look that found it', async () => {
    // Prepare: no GPU in MIG mode; the first look comes 30 s of polls after the first poll
    const { poll, flush } = await agentOnMigGpu({});
    poll(27);
    const whole = await flush();
    // Act: MIG on after poll 27; polls 28–30 read the GPU whole, the look at poll 31 finds the instances
    setFakeNvmlMigLayout(3, '3g+2x2g');
    poll(6);
    const spanning = await flush();
    // Assess
    expect(whole.map((w) => w.gpu_instance_id)).toEqual([undefined]);
    expect(spanning.map((w) => [w.gpu_instance_id, w.gpu_instance_profile])).toEqual([
      [1, '3g.40gb'],
      [5, '2g.20gb'],
      [6, '2g.20gb'],
    ]);
  });
});
