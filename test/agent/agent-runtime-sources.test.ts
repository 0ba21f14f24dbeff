import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentRuntime } from '../../agent/agent-runtime';
import { AgentConfigSchema } from '../../agent/config';
import { type Batch, parseBatch } from '../../lambdas/contract';
import { fakeNvmlPath, setFakeNvmlEnv } from '../setup/fake-nvml';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
/** A dcgm-exporter on a Kubernetes A100 node: profiling ratios for 8 GPUs, GPU 0 held by a pod. */
const SCRAPE = Array.from(
  { length: 8 },
  (_, gpu) =>
    `DCGM_FI_PROF_SM_ACTIVE{gpu="${gpu}",modelName="NVIDIA A100-SXM4-40GB"${gpu === 0 ? ',namespace="ml",pod="train-0",container="trainer"' : ''}} 0.25`,
).join('\n');

let dir: string;
let server: Server | undefined;
let port: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-runtime-sources-'));
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
});

afterAll(async () => {
  if (server) await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Waits (bounded) until `done()` holds: the scrape the poll started runs on the real event loop. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

describe('startAgentRuntime sources', () => {
  it('finds a dcgm-exporter that starts after the agent on an A100 host, and sends the change, the ratios and the pod', async () => {
    // Prepare: p4d (no GPM), the exporter not up yet
    setFakeNvmlEnv({ PRESET: 'p4d' });
    let t = T0;
    const sent: Batch[] = [];
    const runtime = await startAgentRuntime({
      config: AgentConfigSchema.parse({
        auth: 'none',
        imds: 'off',
        instanceId: 'i-0abc12345def67890',
        instanceType: 'p4d.24xlarge',
        region: 'us-east-1',
        nvmlLibraryPath: fakeNvmlPath(),
        dcgmExporterUrl: `http://127.0.0.1:${port}/metrics`,
        kmsgPath: 'off',
        efaRoot: 'off',
        spoolDir: join(dir, 'spool'),
        sendIntervalS: 0, // every flush goes out: the test reads what one flush sends
      }),
      version: 'test',
      log: { info() {}, warn() {}, error() {} },
      clock: () => new Date(t),
      send: async (batch) => void sent.push(batch),
    });
    const atStart = runtime.profilingSource;
    const opened = runtime.sources.opened.map((o) => o.name);

    // Act: the exporter comes up at 5 s; the agent's poll at 15 s re-probes it
    server = createServer((_req, res) => res.end(SCRAPE));
    await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
    t = T0 + 15_000;
    runtime.loop.poll();
    await until(() => runtime.profilingSource === 'dcgm');
    t = T0 + 16_000;
    runtime.loop.poll();
    t = T0 + 17_000;
    await runtime.loop.flush();
    await runtime.loop.settle();
    await runtime.close();

    // Assess
    expect(atStart).toBe('none');
    expect(opened).toEqual(['nvml', 'dcgm-exporter', 'nvml-events']);
    const batches = sent.map((b) => parseBatch(JSON.parse(JSON.stringify(b)), new Date(t)));
    const events = batches.flatMap((b) => b.events ?? []);
    expect(events).toContainEqual(
      expect.objectContaining({
        kind: 'profiling_source_changed',
        detail: expect.stringContaining('none → dcgm'),
      }),
    );
    const last = batches.at(-1)!;
    expect(last.agent.profiling_source).toBe('dcgm');
    const flush = last.windows.filter((w) => w.kind === 'flush');
    expect(flush).toHaveLength(8);
    expect(flush[0]!.k8s).toEqual({ namespace: 'ml', pod: 'train-0', container: 'trainer' });
    expect(flush[1]!.k8s).toBeUndefined();
    expect(flush.every((w) => w.metrics.sm_active !== undefined)).toBe(true);
  });
});
