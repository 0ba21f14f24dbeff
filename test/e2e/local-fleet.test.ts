import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { playBatches } from '../../agent/playback/playback';
import type { Behaviour } from '../../agent/playback/simulate-behaviours';
import { simulatedInstanceId, simulatedPlaybackHost } from '../../agent/playback/simulate-fleet';
import { HttpSender } from '../../agent/send/sender';
import { AGENT_VERSION } from '../../agent/version';
import { sendAll } from '../../bin/scenarios/run-scenarios';
import type { FleetEvaluation } from '../../lambdas/app/evaluate-fleet';
import type { Batch } from '../../lambdas/contract';
import type { Alert } from '../../lambdas/domain';
import { SILENT_LOG } from '../../lambdas/handlers/log';
import { type LocalPipeline, startLocalPipeline } from '../../lambdas/local/local-pipeline';

/** The end of the simulated half hour: a minute ago, so every batch lies in the past. */
const T = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
const MIN = 60_000;
const FROM = new Date(T.getTime() - 30 * MIN);

/** Four nodes of job `train-7` (team vision), node 3 slow on every GPU; a silent node; an idle team's host. */
const HOSTS: readonly { n: number; gpus: Behaviour; team: string; job: string }[] = [
  { n: 0x100, gpus: 'compute_bound', team: 'vision', job: 'train-7' },
  { n: 0x101, gpus: 'compute_bound', team: 'vision', job: 'train-7' },
  { n: 0x102, gpus: 'compute_bound', team: 'vision', job: 'train-7' },
  { n: 0x103, gpus: 'straggler', team: 'vision', job: 'train-7' },
  { n: 0x104, gpus: 'compute_bound', team: 'vision', job: 'eval-3' },
  { n: 0x105, gpus: 'idle', team: 'research', job: 'notebook' },
];
const SILENT = simulatedInstanceId(0x104);
const SLOW = simulatedInstanceId(0x103);

async function batchesOf(h: (typeof HOSTS)[number]): Promise<Batch[]> {
  const played = simulatedPlaybackHost(
    {
      name: `fleet-${h.n}`,
      label: 'fleet e2e',
      instance_id: simulatedInstanceId(h.n),
      instance_type: 'p5.48xlarge',
      model: 'h100',
      gpus: Array.from({ length: 8 }, () => h.gpus),
    },
    { seed: h.n, startMs: FROM.getTime(), hostNumber: h.n, agentVersion: AGENT_VERSION },
  );
  const host = { ...played.host, tags: { ...played.host.tags, team: h.team, job: h.job } };
  return playBatches({ ...played, host }, { from: FROM, to: T, flushIntervalS: 300 });
}

const fired = (e: FleetEvaluation) => e.sent.filter((a) => a.status === 'firing').map((a) => a.id);
const resolved = (e: FleetEvaluation) => e.sent.filter((a) => a.status === 'resolved').map((a) => a.id);

describe('gpu-sentinel local: the fleet evaluator end to end (HTTP, ingest, DuckDB, console sink)', () => {
  let dir: string;
  let pipeline: LocalPipeline;
  let sender: HttpSender;
  let first: FleetEvaluation;
  let later: Batch[];

  beforeAll(async () => {
    // Prepare: every host sends the half hour, except the silent node, which stops 15 minutes before T
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-fleet-'));
    pipeline = await startLocalPipeline({ outDir: join(dir, 'out'), log: SILENT_LOG, write: () => {} });
    sender = new HttpSender({ endpoint: pipeline.url, auth: 'none' });
    later = [];
    for (const h of HOSTS) {
      const batches = await batchesOf(h);
      const cut = T.getTime() - 15 * MIN;
      const now = h.n === 0x104 ? batches.filter((b) => Date.parse(b.sent_at) <= cut) : batches;
      if (h.n === 0x104) later = batches.filter((b) => Date.parse(b.sent_at) > cut);
      expect(await sendAll(sender, now, SILENT_LOG)).toBe(0);
    }
    // Act
    first = await pipeline.evaluateFleet(T);
  }, 120_000);

  afterAll(async () => {
    await pipeline.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fires agent_silent for the node that stopped sending, and only for it', () => {
    // Assess
    expect(fired(first).filter((id) => id.startsWith('agent_silent:'))).toEqual([`agent_silent:${SILENT}`]);
  });

  it('fires straggler for the slow node of the 4-node job, naming the job', () => {
    // Assess
    expect(fired(first).filter((id) => id.startsWith('straggler:'))).toEqual([
      `straggler:${SLOW}#job:train-7`,
    ]);
  });

  it('fires waste_rate for the team whose GPUs idle, not for the busy team', () => {
    // Assess
    expect(fired(first).filter((id) => id.startsWith('waste_rate:'))).toEqual(['waste_rate:team:research']);
  });

  it('prints the fleet alerts on the console sink and appends them to alerts.jsonl', async () => {
    // Prepare
    const lines = (await readFile(join(dir, 'out', 'alerts.jsonl'), 'utf8')).split('\n').filter(Boolean);
    // Act
    const ids = lines.map((l) => (JSON.parse(l) as { id: string }).id);
    // Assess
    expect(ids).toEqual(expect.arrayContaining(fired(first)));
  });

  it('resolves agent_silent once the node sends again, and keeps the others firing without re-sending', async () => {
    // Prepare
    expect(await sendAll(sender, later, SILENT_LOG)).toBe(0);
    // Act
    const next = await pipeline.evaluateFleet(new Date(T.getTime() + MIN));
    // Assess
    expect(resolved(next)).toEqual([`agent_silent:${SILENT}`]);
    expect(fired(next)).toEqual([]);
  });
});

describe('gpu-sentinel local: the fleet evaluator timer', () => {
  it('runs the evaluator on its interval and stops with the pipeline', async () => {
    // Prepare: a host that reported 20 minutes before the evaluator's clock
    const dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-fleet-timer-'));
    const seen: Alert[] = [];
    const pipeline = await startLocalPipeline({
      outDir: dir,
      log: SILENT_LOG,
      write: () => {},
      fleetIntervalMs: 20,
      clock: () => new Date(T.getTime() + 20 * MIN),
    });
    try {
      const batches = await batchesOf({ n: 0x200, gpus: 'compute_bound', team: 'vision', job: 'solo' });
      await sendAll(new HttpSender({ endpoint: pipeline.url, auth: 'none' }), batches, SILENT_LOG);
      // Act
      await vi.waitFor(() => {
        seen.splice(
          0,
          seen.length,
          ...pipeline.alerts.published.filter((a) => a.finding.rule === 'agent_silent'),
        );
        expect(seen.length).toBeGreaterThan(0);
      });
    } finally {
      await pipeline.close();
      await rm(dir, { recursive: true, force: true });
    }
    // Assess
    expect(seen.map((a) => a.id)).toEqual([`agent_silent:${simulatedInstanceId(0x200)}`]);
  });
});
