import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Batch, GpuEvent } from '../../../lambdas/contract';
import { DEFAULT_RULE_CONTEXT, StoreUnavailableError } from '../../../lambdas/domain';
import type { StateStore } from '../../../lambdas/domain/ports';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { ago, NOW, validBatch } from '../contract/batches';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';
import { batchEvent } from './proxy-event';

function event(body: unknown, opts: { caller?: string | null; gzip?: boolean } = {}): APIGatewayProxyEvent {
  return batchEvent(body, opts);
}

function xid(code: number, at: string, pci = '0000:53:00.0'): GpuEvent {
  return { at, kind: 'xid', xid: code, source: 'kmsg', pci_bus_id: pci, detail: `Xid ${code}` };
}

describe('ingest handler', () => {
  let store: DuckDbStore;
  let alerts: RecordingAlertSink;
  let decisions: RecordingDecisionSink;
  let remediator: RecordingRemediator;
  let log: ReturnType<typeof recordingLog>;
  let deps: IngestHandlerDeps;

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
    alerts = new RecordingAlertSink();
    decisions = new RecordingDecisionSink();
    remediator = new RecordingRemediator();
    log = recordingLog();
    deps = {
      store,
      state: store,
      alerts,
      decisions,
      remediator,
      log,
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      clock: () => NOW,
    };
  });

  afterEach(async () => {
    await store.close();
  });

  async function storedWaste(): Promise<number> {
    const rows = await store.queryWaste({
      from: new Date(NOW.getTime() - 3600_000),
      to: new Date(NOW.getTime() + 1000),
    });
    return rows.length;
  }

  it('accepts a valid gzip batch with 202, stores every flush window with its ledger', async () => {
    // Prepare
    const handler = createIngestHandler(deps);
    // Act
    const res = await handler(event(validBatch({ events: [] })));
    // Assess
    expect(res.statusCode).toBe(202);
    expect(JSON.parse(res.body)).toMatchObject({ accepted: 8, rejected: 0 });
    const rows = await store.queryWaste({
      from: new Date(NOW.getTime() - 60_000),
      to: new Date(NOW.getTime() + 1000),
    });
    expect(rows).toHaveLength(8);
    for (const r of rows) {
      expect(r.cost_usd).toBeCloseTo((55.04 / 8) * (10 / 3600), 12);
      expect(r.wasted_usd).toBeCloseTo(r.cost_usd, 12);
      expect(r.efficiency_source).toBe('gpu_util');
    }
  });

  it.each([
    ['unpriced without a spot price or discount', undefined, 0, 'unpriced'],
    ['the on-demand price less the discount', { spot_discount: 0.6 }, 55.04 * 0.4, 'spot_discount:0.6'],
  ])('prices a spot host %s, never at on-demand', async (_name, priceRates, usdPerHour, source) => {
    // Prepare
    const handler = createIngestHandler({ ...deps, ...(priceRates ? { priceRates } : {}) });
    const batch = validBatch({ events: [] });
    const spot = { ...batch, host: { ...batch.host, lifecycle: 'spot' as const } };
    // Act
    const res = await handler(event(spot));
    // Assess
    expect(res.statusCode).toBe(202);
    const rows = await store.queryWaste({
      from: new Date(NOW.getTime() - 60_000),
      to: new Date(NOW.getTime() + 1000),
    });
    expect(rows).toHaveLength(8);
    for (const r of rows) {
      expect(r.price_source).toBe(source);
      expect(r.price_usd_per_hour).toBeCloseTo(usdPerHour, 9);
    }
  });

  it('refuses an invalid batch with 400 naming the field, and stores nothing of it', async () => {
    // Prepare
    const bad = validBatch();
    (bad.windows[3]!.metrics as Record<string, unknown>).gpu_util = 1.7;
    // Act
    const res = await createIngestHandler(deps)(event(bad));
    // Assess
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ path: 'windows[3].metrics.gpu_util' });
    expect(await storedWaste()).toBe(0);
    expect(alerts.alerts).toEqual([]);
  });

  it('refuses with 403 a batch sent by another instance, and stores nothing', async () => {
    const res = await createIngestHandler(deps)(
      event(validBatch(), {
        caller: 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0bbbbbbbbbbbbbbb2',
      }),
    );
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ path: 'host.instance_id' });
    expect(await storedWaste()).toBe(0);
  });

  it("accepts the agent's gzip batch as API Gateway delivers it: decompressed text, Content-Encoding kept", async () => {
    // Prepare: the event API Gateway builds for a gzip request (body already gunzipped, header passed on)
    const delivered = event(validBatch({ events: [] }));
    expect(delivered.isBase64Encoded).toBe(false);
    expect(delivered.headers['Content-Encoding']).toBe('gzip');
    // Act
    const res = await createIngestHandler(deps)(delivered);
    // Assess
    expect(res.statusCode).toBe(202);
  });

  it.each([
    ['a spoofed, invalid batch', (b: Record<string, unknown>) => Object.assign(b, { seq: -1 })],
    ['a spoofed batch with an unknown field', (b: Record<string, unknown>) => Object.assign(b, { extra: 1 })],
  ])('refuses %s with 403 before validation', async (_name, spoil) => {
    // Prepare
    const bad = spoil(validBatch() as unknown as Record<string, unknown>);
    // Act
    const res = await createIngestHandler(deps)(
      event(bad, { caller: 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0bbbbbbbbbbbbbbb2' }),
    );
    // Assess
    expect(res.statusCode).toBe(403);
    expect(JSON.parse(res.body)).toMatchObject({ path: 'host.instance_id' });
  });

  it('refuses a batch that names no instance with 403 when the caller is no instance session', async () => {
    // Prepare
    const bad = validBatch() as unknown as { host: Record<string, unknown> };
    delete bad.host.instance_id;
    // Act
    const res = await createIngestHandler(deps)(
      event(bad, { caller: 'arn:aws:iam::123456789012:user/alice' }),
    );
    // Assess
    expect(res.statusCode).toBe(403);
  });

  it('answers 400 naming host.instance_id to an instance session whose batch names no instance', async () => {
    // Prepare
    const bad = validBatch() as unknown as { host: Record<string, unknown> };
    delete bad.host.instance_id;
    // Act
    const res = await createIngestHandler(deps)(event(bad));
    // Assess
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ path: 'host.instance_id' });
  });

  it.each([
    ['text/plain', { 'Content-Type': 'text/plain' }],
    ['no Content-Type', {} as Record<string, string>],
  ])('refuses %s with 415 and stores nothing', async (_name, headers) => {
    // Act
    const res = await createIngestHandler(deps)(batchEvent(validBatch(), { gzip: false, headers }));
    // Assess
    expect(res.statusCode).toBe(415);
    expect(await storedWaste()).toBe(0);
  });

  it.each([
    ["of the Lambda's own account is looked up in EC2 (unknown there yet: 503)", '123456789012', 503, 1],
    ['of another account (organization-wide API) is not looked up, nor enriched', '444455556666', 202, 0],
  ])('a caller %s', async (_name, account, status, lookups) => {
    // Prepare: an EC2 that knows no instance
    const asked: string[] = [];
    const instances = { describe: async (id: string) => void asked.push(id) };
    // Act
    const res = await createIngestHandler({ ...deps, instances, accountId: '123456789012' })(
      event(validBatch({ events: [] }), {
        caller: `arn:aws:sts::${account}:assumed-role/GpuNodeRole/i-0a5e00000000000a1`,
      }),
    );
    // Assess
    expect(res.statusCode).toBe(status);
    expect(asked).toHaveLength(lookups);
  });

  it('answers 503 when the store is unavailable, before any alert or remediation', async () => {
    // Prepare
    const failing = Object.assign(Object.create(store) as DuckDbStore, {
      write: async () => {
        throw new StoreUnavailableError('write', 'throttled; retry later');
      },
    });
    // Act
    const res = await createIngestHandler({ ...deps, store: failing })(
      event(validBatch({ events: [xid(48, ago(5))] })),
    );
    // Assess
    expect(res.statusCode).toBe(503);
    expect(alerts.alerts).toEqual([]);
    expect(remediator.replaced).toEqual([]);
  });

  it('answers 500 with a generic body when something unexpected breaks, and logs the cause', async () => {
    // Prepare: a state store whose broken-GPU lookup fails with a detail the caller must not see
    const state: StateStore = {
      getInstanceState: async (i) => ({
        broken: await state.getBrokenSince(i),
        idle: await store.getIdleSince(i),
        firing: await store.listFiringAlerts(i),
      }),
      getRemediation: (id) => store.getRemediation(id),
      getLastReboot: (id) => store.getLastReboot(id),
      getPendingRemediation: (id) => store.getPendingRemediation(id),
      putPendingRemediation: (p) => store.putPendingRemediation(p),
      takePendingRemediation: (id, d) => store.takePendingRemediation(id, d),
      recordFault: (s, i, a, w) => store.recordFault(s, i, a, w),
      putRemediationIfAbsent: (r) => store.putRemediationIfAbsent(r),
      reserveRemediation: (r) => store.reserveRemediation(r),
      confirmRemediation: (r, l) => store.confirmRemediation(r, l),
      releaseRemediation: (r, l) => store.releaseRemediation(r, l),
      listRemediations: (g, s) => store.listRemediations(g, s),
      markBroken: (i, k, a) => store.markBroken(i, k, a),
      claimAlert: (id, a, c) => store.claimAlert(id, a, c),
      releaseAlert: (id, a) => store.releaseAlert(id, a),
      leaseAlert: (id, a, c, l) => store.leaseAlert(id, a, c, l),
      confirmAlert: (id, a, c) => store.confirmAlert(id, a, c),
      releaseAlertLease: (id, a) => store.releaseAlertLease(id, a),
      listFiringAlerts: (i) => store.listFiringAlerts(i),
      putFiringAlert: (f) => store.putFiringAlert(f),
      takeFiringAlert: (i, id) => store.takeFiringAlert(i, id),
      getIdleSince: (i) => store.getIdleSince(i),
      markIdle: (i, k, a) => store.markIdle(i, k, a),
      clearIdle: (i, k) => store.clearIdle(i, k),
      getBrokenSince: async () => Promise.reject(new Error('secret detail')),
    };
    // Act
    const res = await createIngestHandler({ ...deps, state })(event(validBatch()));
    // Assess
    expect(res.statusCode).toBe(500);
    expect(res.body).not.toMatch(/secret/);
    expect(log.lines.some((l) => l.level === 'error' && l.data?.error === 'secret detail')).toBe(true);
  });

  it('reboots on a lone Xid 48 (the catalog resets first) and marks nothing broken', async () => {
    // Prepare: the Xid comes from the kernel log with the PCI bus id of GPU 0's window
    const batch: Batch = validBatch({ events: [xid(48, ago(5))] });
    // Act
    const res = await createIngestHandler(deps)(event(batch));
    // Assess
    expect(res.statusCode).toBe(202);
    expect(alerts.alerts.map((a) => a.finding)).toContainEqual(
      expect.objectContaining({ rule: 'xid_fatal', action: 'reset', severity: 'warning', gpu_index: 0 }),
    );
    expect(remediator.rebooted).toEqual(['i-0a5e00000000000a1']);
    expect(remediator.replaced).toEqual([]);
    expect(decisions.decisions.map((d) => d.action)).toEqual(['reboot']);
    const rows = await store.queryWaste({
      from: new Date(NOW.getTime() - 60_000),
      to: new Date(NOW.getTime() + 1000),
    });
    expect(rows.every((r) => r.broken_usd === 0)).toBe(true);
  });

  it('alerts, replaces and marks the GPU broken on Xid 64 (row remap failure); a retry of the same batch changes nothing', async () => {
    // Prepare: the Xid comes from the kernel log with the PCI bus id of GPU 0's window
    const batch: Batch = validBatch({ events: [xid(64, ago(5))] });
    const handler = createIngestHandler(deps);
    // Act
    const first = await handler(event(batch));
    const retry = await handler(event(batch));
    // Assess
    expect(first.statusCode).toBe(202);
    expect(retry.statusCode).toBe(202);
    const critical = alerts.alerts.filter((a) => a.finding.severity === 'critical');
    expect(critical).toHaveLength(1);
    expect(critical[0]!.finding).toMatchObject({ rule: 'xid_fatal', action: 'replace', gpu_index: 0 });
    expect(remediator.replaced).toEqual(['i-0a5e00000000000a1']);
    expect(decisions.decisions.map((d) => d.action)).toEqual(['replace', 'skip']);
    const rows = await store.queryWaste({
      from: new Date(NOW.getTime() - 60_000),
      to: new Date(NOW.getTime() + 1000),
    });
    expect(rows).toHaveLength(8);
    const gpu0 = rows.find((r) => r.gpu_index === 0)!;
    expect(gpu0.broken_usd).toBeCloseTo(gpu0.cost_usd, 12);
    expect(rows.find((r) => r.gpu_index === 1)!.broken_usd).toBe(0);
  });

  it('escalates to a human when the replacement cannot be done', async () => {
    // Prepare
    remediator.failWith = Object.assign(new Error('not in an Auto Scaling group'), {
      name: 'RemediationNotPossibleError',
    });
    // Act
    const res = await createIngestHandler(deps)(event(validBatch({ events: [xid(79, ago(5))] })));
    // Assess
    expect(res.statusCode).toBe(202);
    expect(decisions.decisions).toHaveLength(1);
    expect(decisions.decisions[0]).toMatchObject({ action: 'escalate' });
    expect(decisions.decisions[0]!.reason).toMatch(/not in an Auto Scaling group/);
    expect(log.lines.some((l) => l.level === 'error' && l.message.includes('remediation failed'))).toBe(true);
  });

  it('only notifies for application faults: Xid 13 and 43 never replace hardware', async () => {
    // Prepare
    const events = [...Array.from({ length: 20 }, (_, i) => xid(13, ago(9 - i * 0.1))), xid(43, ago(2))];
    // Act
    const res = await createIngestHandler(deps)(event(validBatch({ events })));
    // Assess
    expect(res.statusCode).toBe(202);
    expect(remediator.replaced).toEqual([]);
    expect(decisions.decisions.filter((d) => d.action !== 'notify' && d.action !== 'skip')).toEqual([]);
    expect(alerts.alerts.every((a) => a.finding.severity !== 'critical')).toBe(true);
  });

  it('does not touch instances in dry-run: the decision is recorded, nothing executed', async () => {
    const res = await createIngestHandler({ ...deps, dryRun: true })(
      event(validBatch({ events: [xid(64, ago(5))] })),
    );
    expect(res.statusCode).toBe(202);
    expect(remediator.replaced).toEqual([]);
    expect(decisions.decisions[0]).toMatchObject({ action: 'replace', dry_run: true });
  });
});
