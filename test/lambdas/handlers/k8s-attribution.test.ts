import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { gatherReportInput } from '../../../lambdas/app/report-input';
import { type Batch, parseBatch } from '../../../lambdas/contract';
import { buildWasteReport, DEFAULT_RULE_CONTEXT } from '../../../lambdas/domain';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { HOST } from '../domain/batch-builder';
import { COMPUTE_BOUND, IDLE_HORIZON } from '../domain/rules/horizons';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';
import { batchEvent } from './proxy-event';

const END = '2026-03-10T10:00:10.000Z';
const POD = { namespace: 'ml-train', pod: 'llama-7b-0', container: 'trainer' } as const;

/**
 * A Kubernetes node's batch: GPU 0 allocated to a pod that runs nothing, GPU 1 idle outside any
 * pod, GPU 2 working in another namespace; each with a 10 s flush window and a 15 min horizon.
 */
function nodeBatch(): Batch {
  const gpus = [
    { metrics: IDLE_HORIZON, k8s: POD },
    { metrics: IDLE_HORIZON },
    { metrics: COMPUTE_BOUND, k8s: { namespace: 'vision', pod: 'resnet-2' } },
  ];
  const at = (s: number) => new Date(Date.parse(END) - s * 1000).toISOString();
  return parseBatch(
    {
      schema: 'gpu-sentinel/v1',
      batch_id: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
      seq: 1,
      sent_at: END,
      host: { ...HOST, tags: {} },
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      windows: gpus.flatMap(({ metrics, ...rest }, index) => [
        { kind: 'flush', start: at(10), end: END, gpu: { index }, metrics, ...rest },
        { kind: 'horizon', start: at(900), end: END, gpu: { index }, metrics, ...rest },
      ]),
    },
    new Date(END),
  );
}

describe('Kubernetes attribution at ingest (handler on DuckDB)', () => {
  let store: DuckDbStore;
  let deps: IngestHandlerDeps;

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
    deps = {
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
    };
  });

  afterEach(async () => {
    await store.close();
  });

  it('stores the pod holding each GPU window and counts an idle GPU a pod holds as held idle', async () => {
    // Act
    const res = await createIngestHandler(deps)(batchEvent(nodeBatch()));

    // Assess
    expect(res.statusCode).toBe(202);
    const rows = await store.readAll('gpu_windows');
    expect(
      rows.map((r) => [r.gpu_index, r.namespace, r.pod, r.container, r.waste_class, r.diagnosis]),
    ).toEqual([
      [0, 'ml-train', 'llama-7b-0', 'trainer', 'held_idle', 'held_idle'],
      [1, null, null, null, 'idle', 'idle'],
      [2, 'vision', 'resnet-2', null, 'underused', 'compute_bound'],
    ]);
  });

  it('reports by namespace: the pod’s idle GPU as held-idle waste of its namespace, the rest unattributed', async () => {
    // Prepare
    await createIngestHandler(deps)(batchEvent(nodeBatch()));
    const period = {
      kind: 'custom' as const,
      from: '2026-03-10T00:00:00.000Z',
      to: '2026-03-11T00:00:00.000Z',
    };

    // Act
    const input = await gatherReportInput(store, period, ['namespace']);
    const report = buildWasteReport({ ...input, period, by: 'namespace', generatedAt: new Date(END) });

    // Assess
    const cost = 55.04 / 8 / 360;
    expect(report.groups.map((g) => g.key)).toEqual(['(none)', 'ml-train', 'vision']);
    const [none, ml] = report.groups;
    expect(ml?.by_class.held_idle).toBeCloseTo(cost, 12);
    expect(ml?.by_class.idle).toBe(0);
    expect(none?.by_class.idle).toBeCloseTo(cost, 12);
    expect(none?.by_class.held_idle).toBe(0);
  });
});
