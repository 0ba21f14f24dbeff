import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../../bin/commands/report';
import { type Batch, parseBatch } from '../../../lambdas/contract';
import { DEFAULT_RULE_CONTEXT, type WasteReport } from '../../../lambdas/domain';
import { createIngestHandler } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { HOST } from '../domain/batch-builder';
import { COMPUTE_BOUND, IDLE_HORIZON } from '../domain/rules/horizons';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';
import { batchEvent } from './proxy-event';

const END = '2026-03-10T10:00:10.000Z';
const UID = '03f3f104-3215-44f2-9686-d4dd1f05a7ed';

/**
 * An untagged host without dcgm-exporter: GPU 0 runs a Slurm job's process, GPU 1 an EKS pod's
 * (known only by the UID in its cgroup), GPU 2 a systemd service's, GPU 3 a process of no known
 * owner; the owners as the agent reads them from `/proc/<pid>/cgroup` (agent/sources/process-owner.ts).
 */
function untaggedBatch(instanceId: string, batchId: string): Batch {
  const gpus = [
    { metrics: COMPUTE_BOUND, processes: [{ pid: 4100, slurm_job_id: 4749 }] },
    { metrics: COMPUTE_BOUND, processes: [{ pid: 4200, fb_used_bytes: 2 ** 34, k8s_pod_uid: UID }] },
    { metrics: IDLE_HORIZON, processes: [{ pid: 4300, systemd_unit: 'train.service' }] },
    { metrics: COMPUTE_BOUND, processes: [{ pid: 4400 }] },
  ];
  const at = (s: number) => new Date(Date.parse(END) - s * 1000).toISOString();
  return parseBatch(
    {
      schema: 'gpu-sentinel/v1',
      batch_id: batchId,
      seq: 1,
      sent_at: END,
      host: { ...HOST, instance_id: instanceId, tags: {} },
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      windows: gpus.flatMap(({ metrics, processes }, index) => [
        { kind: 'flush', start: at(10), end: END, gpu: { index }, metrics, processes },
        { kind: 'horizon', start: at(900), end: END, gpu: { index }, metrics },
      ]),
    },
    new Date(END),
  );
}

describe('process owners into reports (ingest handler → DuckDB → report)', () => {
  let dir: string;
  let db: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-owners-'));
    db = join(dir, 'store.duckdb');
    const store = await DuckDbStore.open(db);
    const handler = createIngestHandler({
      store,
      state: store,
      alerts: new RecordingAlertSink(),
      decisions: new RecordingDecisionSink(),
      remediator: new RecordingRemediator(),
      log: recordingLog(),
      remediationMode: 'off',
      dryRun: true,
      rules: DEFAULT_RULE_CONTEXT,
      alertCooldownS: 3600,
      callerCheck: 'none',
      clock: () => new Date(END),
    });
    const res = await handler(
      batchEvent(untaggedBatch(HOST.instance_id, '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b')),
    );
    expect(res.statusCode).toBe(202);
    const tagged = untaggedBatch('i-0bbbbbbbbbbbbbbbb', '7a1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4c');
    const withTag = { ...tagged, host: { ...tagged.host, tags: { job: 'pretrain-7b' } } };
    expect((await handler(batchEvent(withTag))).statusCode).toBe(202);
    await store.close();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function report(by: 'job' | 'pod'): Promise<WasteReport> {
    let out = '';
    const code = await runReportCommand(
      { db, by, format: 'json', from: '2026-03-10T00:00:00Z', to: '2026-03-11T00:00:00Z' },
      (s) => {
        out += s;
      },
      new Date('2026-03-11T00:00:00Z'),
    );
    expect(code).toBe(0);
    return JSON.parse(out) as WasteReport;
  }

  it('groups an untagged host by its processes’ Slurm job, pod UID and systemd unit; a job tag wins', async () => {
    // Act
    const byJob = await report('job');

    // Assess
    const gpuHours = 10 / 3600;
    expect(Object.fromEntries(byJob.groups.map((g) => [g.key, g.gpu_hours]))).toEqual({
      '(none)': expect.closeTo(gpuHours, 12),
      'pretrain-7b': expect.closeTo(4 * gpuHours, 12),
      'slurm:4749': expect.closeTo(gpuHours, 12),
      'train.service': expect.closeTo(gpuHours, 12),
      [`uid:${UID}`]: expect.closeTo(gpuHours, 12),
    });
    const service = byJob.groups.find((g) => g.key === 'train.service');
    expect(service?.wasted_usd).toBeGreaterThan(0);
  });

  it('groups by pod UID where no exporter names the pod, on tagged hosts too', async () => {
    // Act
    const byPod = await report('pod');

    // Assess
    const pod = byPod.groups.find((g) => g.key === `uid:${UID}`);
    expect(pod?.gpu_hours).toBeCloseTo((2 * 10) / 3600, 12);
    expect(byPod.groups.map((g) => g.key).sort()).toEqual(['(none)', `uid:${UID}`]);
  });
});
