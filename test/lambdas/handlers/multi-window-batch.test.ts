import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Batch, type GpuMetrics, parseBatch } from '../../../lambdas/contract';
import { DEFAULT_RULE_CONTEXT } from '../../../lambdas/domain';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { HOST } from '../domain/batch-builder';
import { COMPUTE_BOUND } from '../domain/rules/horizons';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';

/**
 * The agent sends one request a minute carrying six 10 s flush windows per GPU (several spooled
 * batches merged): the pipeline must store one row and one ledger per flush window, judge the rules
 * on the newest horizon, and still act on a fault among them.
 */

const T0 = Date.parse('2026-03-10T10:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();
const TENSOR_IDLE: GpuMetrics = { ...COMPUTE_BOUND, sm_active: 0.5, tensor_active: 0 };
const FLUSHES = 6;
const GPUS = 2;

const gpu = (index: number) => ({
  index,
  name: 'NVIDIA H100 80GB HBM3',
  pci_bus_id: `0000:${(0x18 + index * 0x10).toString(16)}:00.0`,
});

/**
 * One minute of an agent in one batch: per GPU six flush windows 10 s apart ending at T0 + 60 s, and
 * horizons ending at the given flushes (1..6) with the given metrics.
 */
function minuteBatch(
  horizons: ReadonlyArray<{ atFlush: number; metrics: GpuMetrics }>,
  events: unknown[] = [],
): Batch {
  const end = T0 + FLUSHES * 10_000;
  const windows = [];
  for (let f = 1; f <= FLUSHES; f++)
    for (let index = 0; index < GPUS; index++)
      windows.push({
        kind: 'flush',
        start: iso(T0 + (f - 1) * 10_000),
        end: iso(T0 + f * 10_000),
        gpu: gpu(index),
        metrics: COMPUTE_BOUND,
      });
  for (const h of horizons)
    for (let index = 0; index < GPUS; index++)
      windows.push({
        kind: 'horizon',
        start: iso(T0 + h.atFlush * 10_000 - 900_000),
        end: iso(T0 + h.atFlush * 10_000),
        gpu: gpu(index),
        metrics: h.metrics,
      });
  return parseBatch(
    {
      schema: 'gpu-sentinel/v1',
      batch_id: '6f1c2a3b-4d5e-4f60-8a7b-000000000006',
      seq: 6,
      sent_at: iso(end),
      host: HOST,
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      windows,
      ...(events.length > 0 ? { events } : {}),
    },
    new Date(end),
  );
}

function proxyEvent(batch: Batch): APIGatewayProxyEvent {
  return {
    body: gzipSync(Buffer.from(JSON.stringify(batch))).toString('base64'),
    isBase64Encoded: true,
    headers: { 'Content-Encoding': 'gzip', 'Content-Type': 'application/json' },
    requestContext: { identity: {} },
  } as unknown as APIGatewayProxyEvent;
}

describe('a batch carrying several flush windows per GPU (handler on DuckDB)', () => {
  let store: DuckDbStore;
  let alerts: RecordingAlertSink;
  let decisions: RecordingDecisionSink;
  let deps: IngestHandlerDeps;

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
    alerts = new RecordingAlertSink();
    decisions = new RecordingDecisionSink();
    deps = {
      store,
      state: store,
      alerts,
      decisions,
      remediator: new RecordingRemediator(),
      log: recordingLog(),
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      alertCooldownS: 3600,
      callerCheck: 'none',
      clock: () => new Date(T0 + FLUSHES * 10_000),
    };
  });

  afterEach(async () => {
    await store.close();
  });

  it('stores one row per flush window, each with its own 10 s ledger', async () => {
    // Act
    const res = await createIngestHandler(deps)(
      proxyEvent(minuteBatch([{ atFlush: 6, metrics: COMPUTE_BOUND }])),
    );

    // Assess
    expect(res.statusCode).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ accepted: FLUSHES * GPUS });
    const rows = await store.readAll('gpu_windows');
    expect(rows).toHaveLength(FLUSHES * GPUS);
    const byWindow = new Set(rows.map((r) => `${r.gpu_index}@${new Date(r.time as string).toISOString()}`));
    expect(byWindow.size).toBe(FLUSHES * GPUS);
    expect(rows.every((r) => r.window_s === 10 && r.diagnosis === 'compute_bound')).toBe(true);
    const gpuHours = rows.reduce((sum, r) => sum + Number(r.gpu_hours), 0);
    expect(gpuHours).toBeCloseTo((FLUSHES * GPUS * 10) / 3600, 9);
  });

  it.each([
    { order: 'idle then busy', horizons: [TENSOR_IDLE, COMPUTE_BOUND], tensorIdle: false },
    { order: 'busy then idle', horizons: [COMPUTE_BOUND, TENSOR_IDLE], tensorIdle: true },
  ])('judges the window rules on the newest horizon only ($order)', async ({ horizons, tensorIdle }) => {
    // Prepare: the older horizon ends at flush 3, the newer at flush 6
    const batch = minuteBatch([
      { atFlush: 3, metrics: horizons[0] as GpuMetrics },
      { atFlush: 6, metrics: horizons[1] as GpuMetrics },
    ]);

    // Act
    await createIngestHandler(deps)(proxyEvent(batch));

    // Assess
    expect(alerts.alerts.some((a) => a.finding.rule === 'tensor_idle')).toBe(tensorIdle);
    const diagnoses = (await store.readAll('gpu_windows')).map((r) => r.diagnosis);
    expect(new Set(diagnoses)).toEqual(new Set([tensorIdle ? 'tensor_idle' : 'compute_bound']));
  });

  it('alerts and decides a replacement for an XID among six windows', async () => {
    // Prepare: XID 79 (fallen off the bus) at the fourth window
    const batch = minuteBatch(
      [{ atFlush: 6, metrics: COMPUTE_BOUND }],
      [{ at: iso(T0 + 35_000), kind: 'xid', xid: 79, source: 'nvml', pci_bus_id: '0000:28:00.0' }],
    );

    // Act
    const res = await createIngestHandler(deps)(proxyEvent(batch));

    // Assess
    expect(res.statusCode).toBe(202);
    expect(alerts.alerts.map((a) => a.finding.rule)).toContain('xid_fatal');
    expect(decisions.decisions).toHaveLength(1);
    expect((await store.readAll('gpu_windows')).length).toBe(FLUSHES * GPUS);
  });
});
