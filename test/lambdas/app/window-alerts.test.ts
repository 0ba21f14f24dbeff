import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { processBatch } from '../../../lambdas/app/process-batch';
import { type Batch, type GpuMetrics, parseBatch } from '../../../lambdas/contract';
import { DEFAULT_RULE_CONTEXT } from '../../../lambdas/domain';
import type { AlertSink } from '../../../lambdas/domain/ports';
import type { Alert } from '../../../lambdas/domain/types';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { HOST } from '../domain/batch-builder';
import { COMPUTE_BOUND, IDLE_HORIZON } from '../domain/rules/horizons';
import { RecordingDecisionSink, RecordingRemediator, recordingLog } from '../handlers/fakes';

/** Records alerts; fails the next `failNext` publishes like an SNS outage. */
class FlakyAlertSink implements AlertSink {
  readonly alerts: Alert[] = [];
  failNext = 0;
  async publish(alert: Alert): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('SNS: Service Unavailable');
    }
    this.alerts.push(alert);
  }
}

const T0 = Date.parse('2026-03-10T10:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();
const TENSOR_IDLE: GpuMetrics = { ...COMPUTE_BOUND, sm_active: 0.5, tensor_active: 0 };
const FAKE: GpuMetrics = { ...COMPUTE_BOUND, gpu_util: 1, sm_active: 0.02, max_sm_active: 0.05 };

/**
 * A validated batch sent at `minute` after T0: per GPU one 10 s flush window and one horizon of
 * `horizonS` ending at the send time, with `perGpu[i]` as GPU i's metrics; plus optional events.
 */
function batchAt(
  minute: number,
  perGpu: readonly GpuMetrics[],
  opts: { horizonS?: number; events?: Record<string, unknown>[]; seq?: number } = {},
): Batch {
  const end = T0 + minute * 60_000;
  const gpu = (index: number) => ({
    index,
    name: 'NVIDIA H100 80GB HBM3',
    pci_bus_id: `0000:${(0x18 + index * 0x10).toString(16)}:00.0`,
  });
  return parseBatch(
    {
      schema: 'gpu-sentinel/v1',
      batch_id: `6f1c2a3b-4d5e-4f60-8a7b-${String(100_000_000_000 + (opts.seq ?? minute)).padStart(12, '0')}`,
      seq: opts.seq ?? minute,
      sent_at: iso(end),
      host: HOST,
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      windows: perGpu.flatMap((metrics, index) => [
        { kind: 'flush', start: iso(end - 10_000), end: iso(end), gpu: gpu(index), metrics },
        {
          kind: 'horizon',
          start: iso(end - (opts.horizonS ?? 900) * 1000),
          end: iso(end),
          gpu: gpu(index),
          metrics,
        },
      ]),
      ...(opts.events === undefined ? {} : { events: opts.events }),
    },
    new Date(end),
  );
}

function event(batch: Batch): APIGatewayProxyEvent {
  return {
    body: gzipSync(Buffer.from(JSON.stringify(batch))).toString('base64'),
    isBase64Encoded: true,
    headers: { 'Content-Encoding': 'gzip', 'Content-Type': 'application/json' },
    requestContext: { identity: {} },
  } as unknown as APIGatewayProxyEvent;
}

const FLUSHES = 6;
const GPUS = 2;

const gpuOf = (index: number) => ({
  index,
  name: 'NVIDIA H100 80GB HBM3',
  pci_bus_id: `0000:${(0x18 + index * 0x10).toString(16)}:00.0`,
});

/**
 * One minute of an agent in one request (six spooled 10 s batches merged, as the agent sends them): per GPU six flush windows 10 s apart ending at T0 + 60 s, and
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
        gpu: gpuOf(index),
        metrics: COMPUTE_BOUND,
      });
  for (const h of horizons)
    for (let index = 0; index < GPUS; index++)
      windows.push({
        kind: 'horizon',
        start: iso(T0 + h.atFlush * 10_000 - 900_000),
        end: iso(T0 + h.atFlush * 10_000),
        gpu: gpuOf(index),
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

describe('window rules at ingest (handler on DuckDB)', () => {
  let store: DuckDbStore;
  let alerts: FlakyAlertSink;
  let decisions: RecordingDecisionSink;
  let remediator: RecordingRemediator;
  let clockMs: number;
  let deps: IngestHandlerDeps;

  /** Sends a batch through the handler at its own send time. */
  const send = async (batch: Batch) => {
    clockMs = Date.parse(batch.sent_at);
    return createIngestHandler(deps)(event(batch));
  };

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
    alerts = new FlakyAlertSink();
    decisions = new RecordingDecisionSink();
    remediator = new RecordingRemediator();
    clockMs = T0;
    deps = {
      store,
      state: store,
      alerts,
      decisions,
      remediator,
      log: recordingLog(),
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      alertCooldownS: 3600,
      callerCheck: 'none',
      clock: () => new Date(clockMs),
    };
  });

  afterEach(async () => {
    await store.close();
  });

  it("tells the job's owner once per instance and diagnosis, and stores each GPU's diagnosis with its flush window", async () => {
    // Prepare: GPUs 1 and 2 of 4 leave the tensor cores idle
    const batch = batchAt(0, [COMPUTE_BOUND, TENSOR_IDLE, TENSOR_IDLE, COMPUTE_BOUND]);

    // Act
    const res = await send(batch);

    // Assess
    expect(res.statusCode).toBe(202);
    expect(alerts.alerts.map((a) => a.id)).toEqual(['tensor_idle:i-0abc12345def67890']);
    expect(alerts.alerts[0]?.attributes).toEqual({
      severity: 'info',
      rule: 'tensor_idle',
      instance_type: 'p5.48xlarge',
      status: 'firing',
      team: 'llm',
      job: 'pretrain-7b',
    });
    expect(alerts.alerts[0]?.body).toMatch(/on GPUs 1,2: tensor cores idle/);
    expect(alerts.alerts[0]?.body).toMatch(/wasted_usd_per_hour: 6\.88/);
    const rows = await store.readAll('gpu_windows');
    expect(rows.map((r) => [r.gpu_index, r.diagnosis])).toEqual([
      [0, 'compute_bound'],
      [1, 'tensor_idle'],
      [2, 'tensor_idle'],
      [3, 'compute_bound'],
    ]);
    expect(decisions.decisions).toEqual([]);
  });

  it("returns the window findings after the point findings, and each GPU's diagnosis", async () => {
    // Prepare
    const batch = batchAt(0, [COMPUTE_BOUND, TENSOR_IDLE, COMPUTE_BOUND], {
      events: [{ at: iso(T0 - 5000), kind: 'xid', xid: 13, source: 'kmsg', pci_bus_id: '0000:18:00.0' }],
    });

    // Act
    const result = await processBatch(batch, deps, new Date(T0));

    // Assess
    expect(result.findings.map((f) => f.rule)).toEqual(['xid_app', 'tensor_idle', 'straggler']);
    expect([...result.diagnoses]).toEqual([
      ['0', 'compute_bound'],
      ['1', 'tensor_idle'],
      ['2', 'compute_bound'],
    ]);
  });

  it('never turns an efficiency finding into a remediation', async () => {
    // Prepare: every GPU fakes load and the instance wastes most of its price
    const batch = batchAt(
      0,
      Array.from({ length: 8 }, () => FAKE),
    );

    // Act
    await send(batch);

    // Assess
    expect(alerts.alerts.map((a) => a.finding.rule).sort()).toEqual(['fake_load', 'waste_rate']);
    expect(alerts.alerts.every((a) => a.finding.severity !== 'critical')).toBe(true);
    expect(decisions.decisions).toEqual([]);
    expect(remediator.replaced).toEqual([]);
  });

  it('sends firing, repeats after the cooldown, then resolves once with a message', async () => {
    // Act
    await send(batchAt(0, [TENSOR_IDLE, COMPUTE_BOUND, COMPUTE_BOUND]));
    await send(batchAt(30, [TENSOR_IDLE, COMPUTE_BOUND, COMPUTE_BOUND]));
    await send(batchAt(61, [TENSOR_IDLE, COMPUTE_BOUND, COMPUTE_BOUND]));
    await send(batchAt(62, [COMPUTE_BOUND, COMPUTE_BOUND, COMPUTE_BOUND]));
    await send(batchAt(63, [COMPUTE_BOUND, COMPUTE_BOUND, COMPUTE_BOUND]));

    // Assess
    const tensor = alerts.alerts.filter((a) => a.id === 'tensor_idle:i-0abc12345def67890');
    expect(tensor.map((a) => a.status)).toEqual(['firing', 'firing', 'resolved']);
    // GPU 0 at 50 % SM against two peers at 85 % is also a straggler, and resolves with it
    expect(alerts.alerts.map((a) => `${a.finding.rule} ${a.status}`).sort()).toEqual([
      'straggler firing',
      'straggler firing',
      'straggler resolved',
      'tensor_idle firing',
      'tensor_idle firing',
      'tensor_idle resolved',
    ]);
    expect(tensor[2]?.subject).toMatch(/^\[RESOLVED\] tensor_idle i-0abc12345def67890/);
    expect(tensor[2]?.attributes.status).toBe('resolved');
    expect(tensor[2]?.body).toMatch(
      /^Status: RESOLVED, the condition no longer holds\nWhat: job pretrain-7b/,
    );
    expect(tensor[2]?.body).toMatch(/firing_since: 2026-03-10T10:00:00.000Z/);
  });

  it('sends a return of the condition after a resolve as a new episode, once the re-arm time has passed', async () => {
    // Act: resolved at minute 20; back at 21 (hovering: held back), still there at 36 (sent)
    await send(batchAt(0, [TENSOR_IDLE, TENSOR_IDLE]));
    await send(batchAt(20, [COMPUTE_BOUND, COMPUTE_BOUND]));
    await send(batchAt(21, [TENSOR_IDLE, TENSOR_IDLE]));
    await send(batchAt(36, [TENSOR_IDLE, TENSOR_IDLE]));

    // Assess
    const tensor = alerts.alerts.filter((a) => a.finding.rule === 'tensor_idle');
    expect(tensor.map((a) => `${a.id} ${a.status}`)).toEqual([
      'tensor_idle:i-0abc12345def67890 firing',
      'tensor_idle:i-0abc12345def67890 resolved',
      'tensor_idle:i-0abc12345def67890 firing',
    ]);
    expect(tensor[2]?.finding.at).toBe('2026-03-10T10:36:00.000Z');
  });

  it('never resolves EFA drops from one quiet window, so a flapping counter cannot page fire/resolve pairs', async () => {
    // Prepare
    const port = (rx_drops: number) => ({
      start: iso(T0 - 10_000),
      end: iso(T0),
      device: 'rdmap16s27',
      port: 1,
      deltas: { rx_pkts: 1000, tx_pkts: 1000, rx_drops },
    });
    const withEfa = (minute: number, drops: number) => {
      const b = batchAt(minute, [COMPUTE_BOUND]);
      const shift = minute * 60_000;
      const p = port(drops);
      return { ...b, efa: [{ ...p, start: iso(T0 - 10_000 + shift), end: iso(T0 + shift) }] };
    };

    // Act
    await send(withEfa(0, 40));
    await send(withEfa(1, 0));
    await send(withEfa(2, 35));

    // Assess
    expect(alerts.alerts.map((a) => `${a.id} ${a.status}`)).toEqual(['efa_drops:i-0abc12345def67890 firing']);
    expect(await store.listFiringAlerts(HOST.instance_id)).toEqual([]);
  });

  it('neither fires nor resolves on a horizon shorter than the minimum span', async () => {
    // Prepare: firing
    await send(batchAt(0, [TENSOR_IDLE, COMPUTE_BOUND]));

    // Act: the agent restarted; its horizons cover 2 min
    await send(batchAt(5, [COMPUTE_BOUND, COMPUTE_BOUND], { horizonS: 120 }));
    await send(batchAt(6, [TENSOR_IDLE, TENSOR_IDLE], { horizonS: 120 }));

    // Assess
    expect(alerts.alerts.map((a) => a.status)).toEqual(['firing']);
    expect(await store.listFiringAlerts(HOST.instance_id)).toHaveLength(1);
  });

  it('bills idle only after 30 minutes, through idle marks across batches', async () => {
    // Act: idle horizons every 15 min
    await send(batchAt(0, [IDLE_HORIZON]));
    const at15 = alerts.alerts.filter((a) => a.finding.rule === 'idle_billed').length;
    await send(batchAt(15, [IDLE_HORIZON]));
    const at30 = alerts.alerts.filter((a) => a.finding.rule === 'idle_billed');

    // Assess: idle since the first horizon's start (T0 − 15 min), billed idle at T0 + 15 min
    expect(at15).toBe(0);
    expect(at30.map((a) => a.finding.evidence.idle_min)).toEqual([30]);
    expect([...(await store.getIdleSince(HOST.instance_id))]).toEqual([['0', '2026-03-10T09:45:00.000Z']]);
  });

  it('sends a critical alert on the retry after a failed publish instead of swallowing it for the cooldown', async () => {
    // Prepare: Xid 79 (fallen off the bus) and an SNS outage on the first try
    const batch = batchAt(0, [COMPUTE_BOUND, COMPUTE_BOUND], {
      events: [{ at: iso(T0 - 5000), kind: 'xid', xid: 79, source: 'kmsg', pci_bus_id: '0000:18:00.0' }],
    });
    alerts.failNext = 1;

    // Act
    const first = await send(batch);
    const retry = await send(batch);
    const again = await send(batch);

    // Assess
    expect(first.statusCode).toBe(500);
    expect(retry.statusCode).toBe(202);
    expect(again.statusCode).toBe(202);
    expect(alerts.alerts.map((a) => a.id)).toEqual(['xid_fatal:i-0abc12345def67890:0#xid79']);
    expect(alerts.alerts[0]?.finding.severity).toBe('critical');
  });

  it('alerts Xid 94 (reset) on a GPU whose Xid 48 alert is in its cooldown', async () => {
    // Prepare
    const xid = (code: number, ms: number) => ({
      at: iso(ms),
      kind: 'xid',
      xid: code,
      source: 'kmsg',
      pci_bus_id: '0000:18:00.0',
    });

    // Act
    await send(batchAt(0, [COMPUTE_BOUND], { events: [xid(48, T0 - 5000)] }));
    await send(batchAt(1, [COMPUTE_BOUND], { events: [xid(94, T0 + 55_000)] }));

    // Assess
    expect(alerts.alerts.map((a) => a.id)).toEqual([
      'xid_fatal:i-0abc12345def67890:0#xid48',
      'xid_fatal:i-0abc12345def67890:0#xid94',
    ]);
  });

  it('sends one alert when two invocations judge the same batch at once', async () => {
    // Prepare
    const batch = batchAt(0, [TENSOR_IDLE, COMPUTE_BOUND]);

    // Act
    const handler = createIngestHandler(deps);
    const results = await Promise.all([handler(event(batch)), handler(event(batch))]);

    // Assess
    expect(results.map((r) => r.statusCode)).toEqual([202, 202]);
    expect(alerts.alerts).toHaveLength(1);
  });

  describe('one request carrying six flush windows per GPU (the agent sends once a minute)', () => {
    it('stores one row per flush window, each with its own 10 s ledger', async () => {
      // Act
      const res = await send(minuteBatch([{ atFlush: 6, metrics: COMPUTE_BOUND }]));

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
      await send(batch);

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
      const res = await send(batch);

      // Assess
      expect(res.statusCode).toBe(202);
      expect(alerts.alerts.map((a) => a.finding.rule)).toContain('xid_fatal');
      expect(decisions.decisions).toHaveLength(1);
      expect((await store.readAll('gpu_windows')).length).toBe(FLUSHES * GPUS);
    });
  });
});
