import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EmfMetricsSink } from '../../../lambdas/adapters/emf-metrics-sink';
import { DEFAULT_RULE_CONTEXT, type MetricsSink } from '../../../lambdas/domain';
import { StoreUnavailableError } from '../../../lambdas/domain/port-errors';
import type { TelemetryStore } from '../../../lambdas/domain/ports';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { emfLines } from '../adapters/emf-lines';
import { NOW, validBatch } from '../contract/batches';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';
import { batchEvent } from './proxy-event';

/** Cost of one 10 s window of one GPU of a p5.48xlarge at the built-in price, USD. */
const WINDOW_COST_USD = (55.04 / 8) * (10 / 3600);

describe('ingest handler metrics (EMF)', () => {
  let store: DuckDbStore;
  let log: ReturnType<typeof recordingLog>;
  let deps: IngestHandlerDeps;

  beforeEach(async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    store = await DuckDbStore.open(':memory:');
    log = recordingLog();
    deps = {
      store,
      state: store,
      alerts: new RecordingAlertSink(),
      decisions: new RecordingDecisionSink(),
      remediator: new RecordingRemediator(),
      log,
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      clock: () => NOW,
      callerCheck: 'none',
      metrics: new EmfMetricsSink({ log, namespace: 'GpuSentinel' }),
      metricTeams: new Set(['training']),
    };
  });

  afterEach(async () => {
    vi.useRealTimers();
    await store.close();
  });

  it('writes the accepted batch as EMF lines: fleet series, team series, alerts by severity', async () => {
    // Prepare: 8 idle H100s (GPU util 0, no profiling source) of team `training` and one Xid 48 (double-bit ECC).
    const handler = createIngestHandler(deps);
    // Act
    let status = 0;
    const lines = await emfLines(async () => {
      status = (await handler(batchEvent(validBatch()))).statusCode;
    });
    // Assess
    expect(status).toBe(202);
    const wastedUsd = 8 * WINDOW_COST_USD;
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        _aws: {
          Timestamp: NOW.getTime(),
          CloudWatchMetrics: [
            {
              Namespace: 'GpuSentinel',
              Dimensions: [[]],
              Metrics: [
                { Name: 'Batches', Unit: 'Count' },
                { Name: 'FlushWindows', Unit: 'Count' },
                { Name: 'XidEvents', Unit: 'Count' },
                { Name: 'WastedUsd', Unit: 'None' },
                { Name: 'AgentLag', Unit: 'Seconds' },
                { Name: 'Efficiency', Unit: 'Percent' },
              ],
            },
          ],
        },
        Batches: 1,
        FlushWindows: 8,
        XidEvents: 1,
        WastedUsd: expect.closeTo(wastedUsd, 12),
        AgentLag: 0,
        Efficiency: [0, 0, 0, 0, 0, 0, 0, 0],
      },
      {
        _aws: {
          Timestamp: NOW.getTime(),
          CloudWatchMetrics: [
            {
              Namespace: 'GpuSentinel',
              Dimensions: [['Team']],
              Metrics: [{ Name: 'WastedUsd', Unit: 'None' }],
            },
          ],
        },
        Team: 'training',
        WastedUsd: expect.closeTo(wastedUsd, 12),
      },
      {
        _aws: {
          Timestamp: NOW.getTime(),
          CloudWatchMetrics: [
            {
              Namespace: 'GpuSentinel',
              Dimensions: [['Severity']],
              Metrics: [{ Name: 'Alerts', Unit: 'Count' }],
            },
          ],
        },
        // Xid 48 resets first (NVIDIA's catalog): a warning, not a critical replacement
        Severity: 'warning',
        Alerts: 1,
      },
    ]);
  });

  it('writes a refused batch as one RejectedBatches line under StatusClass 4xx', async () => {
    // Prepare: a batch with an unknown field, refused whole.
    const handler = createIngestHandler(deps);
    // Act
    let status = 0;
    const lines = await emfLines(async () => {
      status = (await handler(batchEvent({ ...validBatch(), extra: 1 }))).statusCode;
    });
    // Assess
    expect(status).toBe(400);
    expect(lines).toEqual([
      `{"_aws":{"Timestamp":${NOW.getTime()},"CloudWatchMetrics":[{"Namespace":"GpuSentinel","Dimensions":[["StatusClass"]],"Metrics":[{"Name":"RejectedBatches","Unit":"Count"}]}]},"StatusClass":"4xx","RejectedBatches":1}`,
    ]);
  });

  it('writes a batch the store could not take as RejectedBatches under StatusClass 5xx', async () => {
    // Prepare
    const down: TelemetryStore = Object.assign(Object.create(store) as TelemetryStore, {
      write: () => Promise.reject(new StoreUnavailableError('PutRecordBatch gpu_windows', 'throttled')),
    });
    const handler = createIngestHandler({ ...deps, store: down });
    // Act
    let status = 0;
    const lines = await emfLines(async () => {
      status = (await handler(batchEvent(validBatch()))).statusCode;
    });
    // Assess
    expect(status).toBe(503);
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([{ StatusClass: '5xx', RejectedBatches: 1 }]);
  });

  it('answers 202 when the metrics sink throws, and logs it', async () => {
    // Prepare
    const broken: MetricsSink = {
      emit: () => {
        throw new Error('stdout closed');
      },
    };
    const handler = createIngestHandler({ ...deps, metrics: broken });
    // Act
    const res = await handler(batchEvent(validBatch()));
    // Assess
    expect(res.statusCode).toBe(202);
    expect(log.lines).toContainEqual({
      level: 'error',
      message: 'metrics not emitted; the batch is unaffected',
      data: { error: 'stdout closed' },
    });
  });

  it('writes no EMF without a metrics sink (local mode keeps the console quiet)', async () => {
    // Prepare
    const handler = createIngestHandler({ ...deps, metrics: undefined });
    // Act
    const lines = await emfLines(async () => {
      await handler(batchEvent(validBatch()));
      await handler(batchEvent({ ...validBatch(), extra: 1 }));
    });
    // Assess
    expect(lines).toEqual([]);
  });
});
