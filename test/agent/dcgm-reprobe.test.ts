import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DCGM_LOSS_AFTER_MISSES,
  DCGM_REPROBE_INITIAL_MS,
  DCGM_REPROBE_MAX_MS,
} from '../../agent/sources/constants';
import { DcgmProfilingSource } from '../../agent/sources/dcgm-profiling';
import type { SampleSink, SourceContext } from '../../agent/sources/source';
import { EventSchema, type GpuEvent } from '../../lambdas/contract';

/** The real p5 scrape from an EKS node (GPU 0 held by a vLLM pod); no profiling fields. */
const REAL = readFileSync(
  new URL('../fixtures/real/dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom', import.meta.url),
  'utf8',
);
/** The same scrape with `DCGM_FI_PROF_SM_ACTIVE` on every GPU, as an exporter with the profiling counters file gives it. */
const WITH_PROFILING = `${REAL.trimEnd()}\n${REAL.split('\n')
  .filter((l) => l.startsWith('DCGM_FI_DEV_GPU_TEMP{'))
  .map((l) => `DCGM_FI_PROF_SM_ACTIVE${l.slice('DCGM_FI_DEV_GPU_TEMP'.length, l.lastIndexOf('}') + 1)} 0.25`)
  .join('\n')}\n`;

const T0 = Date.parse('2026-11-21T10:00:00.000Z');

/** A fake dcgm-exporter on a fixed loopback port that can come up late and go away. */
class FakeExporter {
  body = WITH_PROFILING;
  private server: Server | undefined;
  constructor(readonly port: number) {}
  get url(): string {
    return `http://127.0.0.1:${this.port}/metrics`;
  }
  async up(): Promise<void> {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(this.body);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.server = server;
  }
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A free loopback port: listened on, then released. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** A hand-moved clock, the events emitted, and a sink that keeps the overlays of the last poll. */
function harness() {
  let t = T0;
  const events: GpuEvent[] = [];
  const context: SourceContext = {
    clock: () => new Date(t),
    emit: (e) => events.push(e),
    warn: () => {},
    timers: { setInterval: () => 0, clearInterval: () => {} },
  };
  const overlays = new Map<number, unknown>();
  const sink: SampleSink = {
    gpu: () => {},
    row: () => {},
    overlay: (i, f) => void overlays.set(i, f),
    event: () => {},
    error: () => {},
  };
  return {
    events,
    context,
    overlays,
    at: (ms: number) => {
      t = T0 + ms;
      return new Date(t);
    },
    /** One poll at `ms` after T0, waiting for the scrape it starts. */
    async poll(dcgm: DcgmProfilingSource, ms: number): Promise<void> {
      overlays.clear();
      dcgm.sample(sink, this.at(ms));
      await dcgm.idle();
    },
  };
}

const exporters: FakeExporter[] = [];
afterEach(async () => {
  for (const e of exporters.splice(0)) await e.down();
});

async function exporter(): Promise<FakeExporter> {
  const e = new FakeExporter(await freePort());
  exporters.push(e);
  return e;
}

describe('DcgmProfilingSource re-probe', () => {
  it('re-probes on a doubling back-off until an exporter that came up late answers, then says so once', async () => {
    // Prepare
    const fake = await exporter();
    const h = harness();
    const dcgm = new DcgmProfilingSource({ url: fake.url });
    const support = await dcgm.open(h.context);
    const scrapesAt: number[] = [];
    let scrapes = dcgm.stats.scrapes;

    // Act: poll every second for 2 minutes; the exporter comes up at 50 s
    for (let s = 1; s <= 120; s++) {
      if (s === 50) await fake.up();
      await h.poll(dcgm, s * 1000);
      if (dcgm.stats.scrapes !== scrapes) scrapesAt.push(s);
      scrapes = dcgm.stats.scrapes;
    }

    // Assess: probes at 15 s, 15 + 30 = 45 s, 45 + 60 = 105 s; then every poll while profiling
    expect(support).toEqual({ supported: true, detail: expect.stringContaining('does not answer') });
    expect(scrapesAt.slice(0, 4)).toEqual([15, 45, 105, 106]);
    expect(dcgm.profilingSource).toBe('dcgm');
    expect(h.events).toEqual([
      {
        at: new Date(T0 + 105_000).toISOString(),
        kind: 'profiling_source_changed',
        source: 'agent',
        detail: expect.stringMatching(
          /^profiling_source none → dcgm: .* exports DCGM_FI_PROF_\* ratios for 8 GPU/,
        ),
      },
    ]);
    expect(EventSchema.safeParse(h.events[0]).success).toBe(true);
    expect(h.overlays.get(3)).toEqual({ sm_active: 0.25 });
  });

  it('caps the back-off at its maximum', async () => {
    // Prepare
    const fake = await exporter();
    const h = harness();
    const dcgm = new DcgmProfilingSource({ url: fake.url, reprobeInitialMs: 1000, reprobeMaxMs: 4000 });
    await dcgm.open(h.context);
    const scrapesAt: number[] = [];

    // Act
    for (let s = 1; s <= 20; s++) {
      const before = dcgm.stats.scrapes;
      await h.poll(dcgm, s * 1000);
      if (dcgm.stats.scrapes !== before) scrapesAt.push(s);
    }

    // Assess: 1 s, 2 s, 4 s, then every 4 s
    expect(scrapesAt).toEqual([1, 3, 7, 11, 15, 19]);
    expect(h.events).toEqual([]);
  });

  it(`detects loss after ${DCGM_LOSS_AFTER_MISSES} failed scrapes, clears the ratios at once, and re-probes from the first wait`, async () => {
    // Prepare
    const fake = await exporter();
    await fake.up();
    const h = harness();
    const dcgm = new DcgmProfilingSource({ url: fake.url });
    await dcgm.open(h.context);
    await h.poll(dcgm, 1000);
    const before = new Map(h.overlays);

    // Act: the exporter goes away at 2 s and comes back at 20 s
    await fake.down();
    await h.poll(dcgm, 2000);
    await h.poll(dcgm, 3000);
    const afterFirstMiss = new Map(h.overlays);
    await h.poll(dcgm, 4000);
    const lost = dcgm.profilingSource;
    await fake.up();
    await h.poll(dcgm, 18_000);
    const early = dcgm.profilingSource;
    await h.poll(dcgm, 19_000);

    // Assess
    expect(before.size).toBe(8);
    expect(afterFirstMiss.size).toBe(0); // absent from the next poll on, never the stale ratios
    expect(lost).toBe('none');
    expect(early).toBe('none'); // 4 s + 15 s = 19 s: not yet at 18 s
    expect(dcgm.profilingSource).toBe('dcgm');
    expect(h.events.map((e) => e.detail)).toEqual([
      expect.stringMatching(
        /^profiling_source dcgm → none: .* does not answer \(3 scrapes in a row\); re-probing in 15 s$/,
      ),
      expect.stringMatching(/^profiling_source none → dcgm: /),
    ]);
    expect(h.events.map((e) => e.at)).toEqual([
      new Date(T0 + 4000).toISOString(),
      new Date(T0 + 19_000).toISOString(),
    ]);
  });

  it('reports loss when the exporter answers without profiling ratios (counters file gone)', async () => {
    // Prepare
    const fake = await exporter();
    await fake.up();
    const h = harness();
    const dcgm = new DcgmProfilingSource({ url: fake.url });
    await dcgm.open(h.context);

    // Act
    fake.body = REAL;
    for (let s = 1; s <= DCGM_LOSS_AFTER_MISSES; s++) await h.poll(dcgm, s * 1000);

    // Assess
    expect(dcgm.profilingSource).toBe('none');
    expect(h.events.map((e) => e.detail)).toEqual([
      expect.stringContaining('dcgm → none: http://127.0.0.1:'),
    ]);
    expect(h.events[0]!.detail).toContain('answers without DCGM_FI_PROF_* ratios');
  });

  it('sends no change event on a GPM host and reads the exporter only every 10 s for pod labels', async () => {
    // Prepare
    const fake = await exporter();
    await fake.up();
    const h = harness();
    const dcgm = new DcgmProfilingSource({ url: fake.url, gpmActive: () => true });
    await dcgm.open(h.context);
    const start = dcgm.stats.scrapes;

    // Act
    for (let s = 1; s <= 30; s++) await h.poll(dcgm, s * 1000);
    await fake.down();
    for (let s = 31; s <= 40; s++) await h.poll(dcgm, s * 1000);

    // Assess
    expect(dcgm.stats.scrapes - start).toBe(4); // 10 s, 20 s, 30 s, 40 s
    expect(h.events).toEqual([]);
    expect(dcgm.workload({ index: 0 })).toBeUndefined(); // the last scrape failed: no stale pod
  });

  it.each([
    ['reprobeInitialMs 0', { reprobeInitialMs: 0 }],
    ['reprobeMaxMs below reprobeInitialMs', { reprobeInitialMs: 2000, reprobeMaxMs: 1000 }],
  ])('throws a RangeError for %s', (_name, opts) => {
    // Prepare / Act
    const act = () => new DcgmProfilingSource(opts);

    // Assess
    expect(act).toThrow(RangeError);
  });

  it('documents a back-off from 15 s to 10 min', () => {
    // Assess
    expect([DCGM_REPROBE_INITIAL_MS, DCGM_REPROBE_MAX_MS]).toEqual([15_000, 600_000]);
  });
});
