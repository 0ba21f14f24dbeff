import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REJECTED_DIR } from '../../../agent/spool/constants';
import { LEGACY_MAX_EFA_PORTS_PER_BATCH, MAX_EFA_PORTS_PER_WINDOW } from '../../../lambdas/contract';
import { SILENT_LOG } from '../../../lambdas/handlers/log';
import { startLocalPipeline } from '../../../lambdas/local/local-pipeline';
import { type BatchApi, type ReceivedRequest, startBatchApi } from '../fixtures/batch-api';
import { runP5Agent } from '../fixtures/p5-agent';

/**
 * What a p5.48xlarge agent sends, end to end on this machine: the fake NVML's p5 preset and a fake
 * sysfs tree of a real p5's 32 EFA devices, the agent's own loop, spool and HTTP sender, and a local
 * API that validates each request as the ingest handler does. Virtual time: 1 s polls, 10 s flush
 * windows, the default 60 s send interval.
 */

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const MINUTES = 3;
const FLUSHES_PER_MINUTE = 6;
const GPUS = 8;

const dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-p5-requests-'));
const apis: BatchApi[] = [];
afterAll(async () => {
  for (const api of apis) await api.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the p5 agent `MINUTES` against a local API (an older stack's when `legacyEfaLimit` is set). */
async function run(name: string, legacyEfaLimit?: number) {
  let now = new Date(T0);
  const api = await startBatchApi({ now: () => now, ...(legacyEfaLimit ? { legacyEfaLimit } : {}) });
  apis.push(api);
  const warnings: { message: string; data?: Record<string, unknown> }[] = [];
  const spoolDir = join(dir, name);
  const clock = await runP5Agent({
    endpoint: api.endpoint,
    spoolDir,
    fromMs: T0,
    minutes: MINUTES,
    warn: (message, data) => warnings.push({ message, ...(data ? { data } : {}) }),
  });
  now = clock.now();
  return { requests: api.requests, warnings, spoolDir };
}

/** Flush windows delivered (accepted), as `end/gpu` keys, and EFA entries as `end/device/port`. */
function delivered(requests: readonly ReceivedRequest[]): { windows: string[]; efa: string[] } {
  const ok = requests.filter((r) => r.status === 202).map((r) => r.batch);
  return {
    windows: ok.flatMap((b) =>
      b.windows.filter((w) => w.kind === 'flush').map((w) => `${w.end}/${w.gpu.index}`),
    ),
    efa: ok.flatMap((b) => (b.efa ?? []).map((e) => `${e.end}/${e.device}/${e.port}`)),
  };
}

/** Mean of `f` over `items`, rounded. */
const mean = <T>(items: readonly T[], f: (item: T) => number): number =>
  Math.round(items.reduce((n, i) => n + f(i), 0) / items.length);

describe('a p5.48xlarge agent', () => {
  it('sends one request per 60 s send, each a minute of windows and EFA entries', async () => {
    // Act
    const { requests, warnings } = await run('current');

    // Assess: one request a minute, each accepted, each six flushes of 8 GPUs and 32 × 2 EFA entries
    expect(requests.map((r) => r.status)).toEqual(Array(MINUTES).fill(202));
    for (const r of requests) {
      expect(r.batch.windows.filter((w) => w.kind === 'flush')).toHaveLength(FLUSHES_PER_MINUTE * GPUS);
      expect(r.batch.efa).toHaveLength(FLUSHES_PER_MINUTE * MAX_EFA_PORTS_PER_WINDOW);
    }
    const { windows, efa } = delivered(requests);
    expect(new Set(windows).size).toBe(MINUTES * FLUSHES_PER_MINUTE * GPUS);
    expect(new Set(efa).size).toBe(MINUTES * FLUSHES_PER_MINUTE * MAX_EFA_PORTS_PER_WINDOW);
    expect(warnings).toEqual([]);
    // The figures for docs/capacity.md and the cost model (also printed by the test run).
    const gzip = mean(requests, (r) => r.gzipBytes);
    const json = mean(requests, (r) => r.jsonBytes);
    console.info(`p5 agent: ${requests.length / MINUTES} request/min, ${gzip} B gzip, ${json} B JSON each`);
    expect(gzip).toBeLessThan(64 * 1024);
  });

  it('has its one request a minute accepted and stored whole by the ingest handler (the local pipeline, DuckDB)', async () => {
    // Prepare: the real handler judges times by the wall clock, so the run ends a minute ago
    const fromMs = Math.floor(Date.now() / 60_000) * 60_000 - 3 * 60_000;
    const pipeline = await startLocalPipeline({
      outDir: join(dir, 'pipeline'),
      log: SILENT_LOG,
      write: () => {},
    });
    try {
      // Act
      await runP5Agent({ endpoint: pipeline.url, spoolDir: join(dir, 'pipeline-spool'), fromMs, minutes: 2 });

      // Assess: every flush window is in the store, and every EFA entry of the two minutes in one
      // row per device/port and request (its six windows summed, docs/design.md §4)
      const gpuRows = await pipeline.store.readAll('gpu_windows');
      const efaRows = await pipeline.store.readAll('efa_windows');
      expect(gpuRows).toHaveLength(2 * FLUSHES_PER_MINUTE * GPUS);
      expect(efaRows).toHaveLength(2 * MAX_EFA_PORTS_PER_WINDOW);
      for (const r of efaRows) {
        expect(Date.parse(String(r.time)) - Date.parse(String(r.start))).toBe(FLUSHES_PER_MINUTE * 10_000);
      }
    } finally {
      await pipeline.close();
    }
  });

  it('against a stack that takes 64 EFA entries, resends a refused minute within 64, delivering every window once and quarantining nothing', async () => {
    // Act
    const { requests, warnings, spoolDir } = await run('legacy', LEGACY_MAX_EFA_PORTS_PER_BATCH);

    // Assess: the first merged request refused at `efa`, then one window per request, all accepted
    const refused = requests.filter((r) => r.status !== 202);
    expect(refused).toHaveLength(1);
    expect(refused[0]?.status).toBe(400);
    expect(refused[0]?.answer).toMatchObject({ path: 'efa', error: expect.stringMatching(/<=64/) });
    expect(requests[0]).toBe(refused[0]);
    const accepted = requests.filter((r) => r.status === 202);
    expect(accepted).toHaveLength(MINUTES * FLUSHES_PER_MINUTE);
    for (const r of accepted) expect(r.batch.efa?.length).toBeLessThanOrEqual(LEGACY_MAX_EFA_PORTS_PER_BATCH);
    const { windows, efa } = delivered(requests);
    expect(windows).toHaveLength(MINUTES * FLUSHES_PER_MINUTE * GPUS);
    expect(new Set(windows).size).toBe(windows.length);
    expect(new Set(efa).size).toBe(MINUTES * FLUSHES_PER_MINUTE * MAX_EFA_PORTS_PER_WINDOW);
    expect(warnings).toEqual([
      {
        message: expect.stringMatching(/refused 384 EFA entries .* Update the stack/),
        data: expect.objectContaining({ status: 400 }),
      },
    ]);
    const rejected = join(spoolDir, REJECTED_DIR);
    expect(existsSync(rejected) ? readdirSync(rejected) : []).toEqual([]);
    // The figure before the contract was sized per window: one window per request.
    console.info(
      `p5 agent at 64 EFA entries a request: ${accepted.length / MINUTES} requests/min, ${mean(accepted, (r) => r.gzipBytes)} B gzip, ${mean(accepted, (r) => r.jsonBytes)} B JSON each`,
    );
  });
});
