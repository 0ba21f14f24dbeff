import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplayManifestError } from '../../../agent/errors';
import { buildReplayBatches, loadReplayManifest, type ReplayManifest } from '../../../agent/playback/replay';
import { type Batch, parseBatch } from '../../../lambdas/contract';

const DEMO = fileURLToPath(new URL('../../fixtures/replay/real-captures.json', import.meta.url));
const REAL = fileURLToPath(new URL('../../fixtures/real/', import.meta.url));
const H200 = fileURLToPath(
  new URL('../../fixtures/captured/h200-driver-580.159.04/batches.jsonl', import.meta.url),
);
const NOW = new Date('2026-03-10T12:00:00Z');

const of = (batches: Batch[], id: string) => batches.filter((b) => b.host.instance_id === id);

describe('buildReplayBatches on the bundled real-captures manifest', () => {
  let manifest: ReplayManifest;
  let batches: Batch[];

  beforeAll(async () => {
    manifest = await loadReplayManifest(DEMO);
    batches = await buildReplayBatches(manifest, { now: NOW, agentVersion: '0.1.0-test' });
  });

  it("keeps the scrape's pod labels: GPU 0 of each EKS host carries its vLLM pod, the others none", () => {
    // Prepare / Act (beforeAll)
    const pods = (id: string) =>
      of(batches, id)[0]
        ?.windows.filter((w) => w.kind === 'flush')
        .map((w) => w.k8s?.pod ?? null);

    // Assess
    expect(pods('i-0a5e00000000000a1')).toEqual([
      'vllm-agg-0-vllmdecodeworker-s65j5',
      ...Array.from({ length: 7 }, () => null),
    ]);
    expect(of(batches, 'i-0a5e00000000000a1')[0]?.windows[0]?.k8s).toEqual({
      namespace: 'dynamo-workload',
      pod: 'vllm-agg-0-vllmdecodeworker-s65j5',
      container: 'main',
    });
    expect(pods('i-0a5e00000000000a2')?.filter((p) => p !== null)).toHaveLength(1);
  });

  it('builds batches that all pass the contract', () => {
    // Prepare / Act (beforeAll) / Assess
    expect(batches.length).toBeGreaterThan(0);
    for (const batch of batches)
      expect(() => parseBatch(JSON.parse(JSON.stringify(batch)), NOW)).not.toThrow();
  });

  it('sends one batch per window end for each scraped host: 8 flush and 8 horizon windows, 60 times over the hour', () => {
    // Prepare / Act (beforeAll)
    const a1 = of(batches, 'i-0a5e00000000000a1');
    const kinds = (b: Batch | undefined) => b?.windows.map((w) => w.kind);

    // Assess
    expect(a1).toHaveLength(60);
    expect(a1.every((b) => b.windows.length === 16)).toBe(true);
    expect(kinds(a1[0])).toEqual(Array.from({ length: 8 }, () => ['flush', 'horizon']).flat());
    expect(a1[0]?.windows[0]).toMatchObject({
      kind: 'flush',
      start: '2026-03-10T11:00:00.000Z',
      end: '2026-03-10T11:01:00.000Z',
    });
    expect(a1.at(-1)?.windows[0]?.end).toBe(NOW.toISOString());
    expect(a1.map((b) => b.seq)).toEqual(a1.map((_, i) => i));
    expect(a1.map((b) => b.sent_at)).toEqual(a1.map((b) => b.windows[0]?.end));
    expect(a1[0]?.agent).toMatchObject({
      version: '0.1.0-test',
      profiling_source: 'none',
      driver_version: '580.105.08',
      stats: { samples: 60, spooled: 0, dropped: 0, nvml_errors: 0 },
    });
    expect(a1[0]?.host).toEqual({
      instance_id: 'i-0a5e00000000000a1',
      instance_type: 'p5.48xlarge',
      region: 'us-east-1',
      az: 'us-east-1a',
      lifecycle: 'on-demand',
      tags: { team: 'inference', job: 'vllm-decode' },
    });
    expect(a1[30]?.windows[0]?.metrics.power_w).toBeCloseTo(113.611, 9);
    expect(of(batches, 'i-0a5e00000000000a2')[0]?.windows[4]?.metrics.power_w).toBeCloseTo(110.786, 9);
  });

  it('adds the trailing 15-minute horizon of each GPU, as the agent does, growing from the first sample', () => {
    // Prepare / Act (beforeAll)
    const a1 = of(batches, 'i-0a5e00000000000a1');
    const horizon = (b: Batch | undefined) =>
      b?.windows.find((w) => w.kind === 'horizon' && w.gpu.index === 0);

    // Assess
    expect(horizon(a1[0])).toMatchObject({
      start: '2026-03-10T11:00:01.000Z',
      end: '2026-03-10T11:01:00.000Z',
    });
    expect(horizon(a1.at(-1))).toMatchObject({ start: '2026-03-10T11:45:00.000Z', end: NOW.toISOString() });
    expect(horizon(a1.at(-1))?.metrics.power_w).toBeCloseTo(
      a1.at(-1)?.windows[0]?.metrics.power_w ?? Number.NaN,
      9,
    );
    expect(horizon(a1.at(-1))?.metrics.power_cv).toBe(0);
  });

  it('puts the 48/63/94 XIDs on the ASG host, re-based so the last log line is now, each flushed at the next poll', () => {
    // Prepare / Act (beforeAll)
    const b1 = of(batches, 'i-0a5e00000000000b1');
    const events = b1.flatMap((b) => b.events ?? []);

    // Assess
    expect(b1.every((b) => b.windows.length === 0 && b.host.asg_name === 'gpu-train-p5')).toBe(true);
    expect(events.map((e) => e.xid)).toEqual([48, 63, 94, 94, 94, 94, 94, 94, 94, 94, 94]);
    expect(events.every((e) => e.pci_bus_id === '0000:19:00.0' && e.source === 'kmsg')).toBe(true);
    // 12:02:03.470068 → 12:02:15.950445 in the log: the Xid 48 lands 12.480377 s before now
    expect(events[0]?.at).toBe('2026-03-10T11:59:47.519623Z');
    for (const batch of b1)
      for (const e of batch.events ?? []) {
        expect(Date.parse(batch.sent_at) - Date.parse(e.at)).toBeGreaterThanOrEqual(0);
        expect(Date.parse(batch.sent_at) - Date.parse(e.at)).toBeLessThan(1000);
      }
    expect(of(batches, 'i-0a5e00000000000a1').some((b) => (b.events ?? []).length > 0)).toBe(false);
  });

  it('replays the real H200 the agent read through NVML: its GPM ratios, throttle ratios and versions, one captured window per replay window', () => {
    // Prepare / Act (beforeAll): the captured flush windows, in order
    const captured = readFileSync(H200, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .flatMap((l) => (JSON.parse(l) as { batch: Batch }).batch.windows.filter((w) => w.kind === 'flush'));
    const h200 = of(batches, 'i-0c4e2000000000001');

    // Assess: 60 one-minute windows cycle through the 20 captured ones
    expect(captured).toHaveLength(20);
    expect(h200).toHaveLength(60);
    expect(h200[0]?.agent).toEqual({
      version: '0.1.0-test',
      profiling_source: 'gpm',
      driver_version: '580.159.04',
      nvml_version: '13.580.159.04',
      cuda_version: '13.0',
      stats: { samples: 60, spooled: 0, dropped: 0, nvml_errors: 0 },
    });
    h200.forEach((b, k) => {
      const [flush, horizon] = b.windows;
      const source = captured[k % captured.length]?.metrics;
      expect(flush?.gpu).toEqual(captured[0]?.gpu);
      expect(horizon?.kind).toBe('horizon');
      for (const metric of [
        'sm_active',
        'tensor_active',
        'dram_active',
        'gpu_util',
        'power_w',
        'fb_used_bytes',
      ] as const)
        expect(flush?.metrics[metric], `${metric} of window ${k}`).toBeCloseTo(
          source?.[metric] ?? Number.NaN,
          6,
        );
      // The ratio itself, not the OR of the clocks-event reasons (the idle→tensor window: 0.19, not 1).
      expect(flush?.metrics.power_throttle_ratio, `power_throttle_ratio of window ${k}`).toBeCloseTo(
        source?.power_throttle_ratio ?? Number.NaN,
        5,
      );
      expect(flush?.metrics.compute_processes).toBe(source?.compute_processes);
    });
  });

  it('sends all 636 XIDs of the 13/43 host once, those before the span at the first poll', () => {
    // Prepare / Act (beforeAll)
    const b2 = of(batches, 'i-0a5e00000000000b2');
    const events = b2.flatMap((b) => b.events ?? []);

    // Assess
    expect(events).toHaveLength(636);
    expect(events.filter((e) => e.xid === 13)).toHaveLength(629);
    expect(events.filter((e) => e.xid === 43)).toHaveLength(7);
    expect(events.at(-1)?.at).toBe('2026-03-10T12:00:00.000000Z');
    const first = b2[0] as Batch;
    expect(first.sent_at).toBe('2026-03-10T11:00:01.000Z');
    for (const batch of b2) {
      const end = Date.parse(batch.sent_at);
      for (const e of batch.events ?? []) {
        expect(Date.parse(e.at)).toBeLessThanOrEqual(end);
        if (batch !== first) expect(Date.parse(e.at)).toBeGreaterThan(end - 1000);
      }
    }
  });
});

describe('loadReplayManifest', () => {
  const dir = mkdtempSync(join(tmpdir(), 'replay-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, content: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  const host = { instance_id: 'i-0a5e00000000000c1', instance_type: 'p4d.24xlarge', region: 'us-east-1' };

  it('applies the defaults and resolves files relative to the manifest', async () => {
    // Prepare
    const path = write('ok.json', {
      hosts: [
        { ...host, dcgm_exporter: [join(REAL, 'dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom')] },
      ],
    });

    // Act
    const manifest = await loadReplayManifest(path);

    // Assess
    expect(manifest.window_s).toBe(60);
    expect(manifest.duration_s).toBe(3600);
    expect(manifest.hosts[0]?.host).toEqual(host);
    expect(manifest.hosts[0]?.scrapes[0]?.parse.gpus).toHaveLength(8);
  });

  it('cycles through several scrapes in order', async () => {
    // Prepare
    const a = write('a.prom', 'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 100');
    const b = write('b.prom', 'DCGM_FI_DEV_POWER_USAGE{gpu="0"} 200');
    const path = write('cycle.json', {
      window_s: 10,
      duration_s: 40,
      hosts: [{ ...host, dcgm_exporter: [a, b] }],
    });

    // Act
    const batches = await buildReplayBatches(await loadReplayManifest(path), { now: NOW, agentVersion: '1' });

    // Assess
    expect(batches.map((x) => x.windows[0]?.metrics.power_w)).toEqual([100, 200, 100, 200]);
    expect(batches.map((x) => x.windows[1]?.metrics.power_w)).toEqual([100, 150, 400 / 3, 150]);
  });

  it('marks profiling_source dcgm when a scrape has DCGM profiling ratios', async () => {
    // Prepare
    const a = write('prof.prom', 'DCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.4');
    const path = write('prof.json', {
      window_s: 60,
      duration_s: 60,
      hosts: [{ ...host, dcgm_exporter: [a] }],
    });

    // Act
    const [batch] = await buildReplayBatches(await loadReplayManifest(path), { now: NOW, agentVersion: '1' });

    // Assess
    expect(batch?.agent.profiling_source).toBe('dcgm');
    expect(batch?.windows[0]?.metrics).toEqual({
      sm_active: expect.closeTo(0.4, 12),
      min_sm_active: 0.4,
      max_sm_active: 0.4,
      sm_active_cv: expect.closeTo(0, 12),
    });
  });

  it.each([
    ['a missing manifest', null, '(root)'],
    ['a manifest that is not JSON', '{ nope', '(root)'],
    ['a bad instance id', { hosts: [{ ...host, instance_id: 'i-xyz' }] }, 'hosts[0].instance_id'],
    ['an unknown field', { hosts: [{ ...host, gpus: 8 }] }, 'hosts[0].gpus'],
    ['no hosts', { hosts: [] }, 'hosts'],
    ['a window longer than the span', { window_s: 600, duration_s: 60, hosts: [host] }, 'duration_s'],
    [
      'a missing scrape file',
      { hosts: [{ ...host, dcgm_exporter: ['nope.prom'] }] },
      'hosts[0].dcgm_exporter[0]',
    ],
    [
      'a scrape with no GPU',
      { hosts: [{ ...host, dcgm_exporter: ['empty.prom'] }] },
      'hosts[0].dcgm_exporter[0]',
    ],
    ['a missing kernel log', { hosts: [{ ...host, kernel_logs: ['nope.log'] }] }, 'hosts[0].kernel_logs[0]'],
    [
      'captured agent batches the contract refuses',
      { hosts: [{ ...host, agent_batches: ['bad.jsonl'] }] },
      'hosts[0].agent_batches[0]',
    ],
    [
      'a host with both dcgm-exporter scrapes and agent batches',
      { hosts: [{ ...host, dcgm_exporter: ['empty.prom'], agent_batches: [H200] }] },
      'hosts[0].agent_batches',
    ],
  ])('throws ReplayManifestError naming the field for %s', async (_case, content, field) => {
    // Prepare
    write('empty.prom', '# nothing\n');
    write('bad.jsonl', '{"received_ms": 1795834154420, "batch": {"schema": "gpu-sentinel/v1"}}\n');
    const path = content === null ? join(dir, 'absent.json') : write('bad.json', content);

    // Act
    const error = await loadReplayManifest(path).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(ReplayManifestError);
    expect((error as ReplayManifestError).field).toBe(field);
    expect((error as ReplayManifestError).message).toContain(field);
  });
});
