import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PipelineDeps } from '../../../lambdas/app/pipeline';
import { processBatch } from '../../../lambdas/app/process-batch';
import { remediate, settlePending } from '../../../lambdas/app/remediate';
import type { Batch, GpuEvent } from '../../../lambdas/contract';
import type { Finding, InstanceInfo } from '../../../lambdas/domain';
import type { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { ago, NOW, validBatch } from '../contract/batches';
import { directoryWithGroup, type RecordingDecisionSink, type RecordingRemediator } from '../handlers/fakes';
import { embeddedPipeline } from './embedded-pipeline';

/** The grace period of these tests: 15 minutes. */
const DELAY_S = 900;
const at = (s: number) => new Date(NOW.getTime() + s * 1000);

/** The instance's batch `s` seconds after NOW: with an Xid 79 (GPU fallen off the bus: `replace`), or clean. */
function batchAt(s: number, fault: boolean): Batch {
  const now = at(s);
  const xid79: GpuEvent = {
    at: ago(5, now),
    kind: 'xid',
    xid: 79,
    source: 'kmsg',
    pci_bus_id: '0000:53:00.0',
  };
  return {
    ...validBatch({ events: fault ? [xid79] : [] }, 8, now),
    batch_id: `8a7f3c52-6a0e-4b8e-9f3d-${String(s).padStart(12, '0')}`,
    seq: 1000 + s,
  };
}

const batch = validBatch();
const instanceId = batch.host.instance_id;

/** A reset-class fault (a lone Xid 120: the Xid policy's `reset`) stamped `s` seconds after NOW. */
function resetFault(s: number): Finding {
  return {
    rule: 'xid_fatal',
    severity: 'warning',
    action: 'reset',
    instance_id: instanceId,
    instance_type: 'p5.48xlarge',
    gpu_index: 2,
    at: at(s).toISOString(),
    summary: 'Xid 120 (GSP error) on GPU 2',
    remedy: 'reset the GPU',
    evidence: { xid: 120 },
    variant: 'xid120',
  };
}

describe('remediation grace period (remediationDelayS)', () => {
  let store: DuckDbStore;
  let decisions: RecordingDecisionSink;
  let remediator: RecordingRemediator;
  let deps: PipelineDeps;

  beforeEach(async () => {
    ({ store, decisions, remediator, deps } = await embeddedPipeline({ remediationDelayS: DELAY_S }));
  });

  afterEach(async () => {
    await store.close();
  });

  it('acts at once with a delay of 0, as without a grace period, and keeps nothing pending', async () => {
    // Act
    const out = await processBatch(batchAt(0, true), { ...deps, remediationDelayS: 0 }, at(0));

    // Assess
    expect(out.decisions.map((d) => d.action)).toEqual(['replace']);
    expect(remediator.replaced).toEqual([instanceId]);
    expect(await store.getPendingRemediation(instanceId)).toBeUndefined();
  });

  it('announces the replacement, executes nothing before it is due, then replaces once at the due time', async () => {
    // Act: the fault; the fault again 5 min later; a clean batch at 10 min; clean batches at 15 and 16 min
    const notice = await processBatch(batchAt(0, true), deps, at(0));
    const pendingAfterNotice = await store.getPendingRemediation(instanceId);
    const groupHistory = await store.listRemediations('gpu-train-p5', at(-3600));
    const again = await processBatch(batchAt(300, true), deps, at(300));
    const early = await processBatch(batchAt(600, false), deps, at(600));
    const replacedBeforeDue = [...remediator.replaced];
    const due = await processBatch(batchAt(900, false), deps, at(900));
    const after = await processBatch(batchAt(960, false), deps, at(960));

    // Assess
    expect(notice.decisions).toMatchObject([
      {
        action: 'scheduled',
        pending: { action: 'replace', decided_at: at(0).toISOString(), due_at: at(900).toISOString() },
      },
    ]);
    expect(notice.decisions[0]?.reason).toMatch(
      new RegExp(`^replacing ${instanceId} in 15 minutes \\(at ${at(900).toISOString()}\\)`),
    );
    expect(pendingAfterNotice).toMatchObject({ action: 'replace', due_at: at(900).toISOString() });
    expect(groupHistory).toEqual([]);
    expect(again.decisions.map((d) => d.action)).toEqual(['skip']);
    expect(again.decisions[0]?.reason).toMatch(/announced .* and due at/);
    expect(early.decisions).toEqual([]);
    expect(replacedBeforeDue).toEqual([]);
    expect(due.decisions.map((d) => d.action)).toEqual(['replace']);
    expect(due.decisions[0]?.reason).toMatch(/^grace period of 900 s over/);
    expect(after.decisions).toEqual([]);
    expect(remediator.replaced).toEqual([instanceId]);
    expect(await store.getRemediation(instanceId)).toMatchObject({
      action: 'replace',
      at: at(900).toISOString(),
    });
    expect(await store.getPendingRemediation(instanceId)).toBeUndefined();
  });

  it('cancels an announced reboot when the instance recovered: no fault since and no GPU marked broken', async () => {
    // Act
    const notice = await remediate(resetFault(0), batch, undefined, deps, at(5));
    const early = await settlePending(batch, undefined, new Map(), deps, at(600));
    const due = await settlePending(batch, undefined, new Map(), deps, at(905));

    // Assess
    expect(notice).toMatchObject({ action: 'scheduled', pending: { action: 'reboot' } });
    expect(notice.reason).toMatch(/^rebooting .* in 15 minutes/);
    expect(early).toBeUndefined();
    expect(due).toMatchObject({ action: 'cancelled', pending: { action: 'reboot' } });
    expect(due?.reason).toMatch(/the instance recovered: no fault since the notice/);
    expect(remediator.rebooted).toEqual([]);
    expect(await store.getLastReboot(instanceId)).toBeUndefined();
    expect(await store.getPendingRemediation(instanceId)).toBeUndefined();
    expect(decisions.decisions.map((d) => d.action)).toEqual(['scheduled', 'cancelled']);
  });

  it('reboots at the due time when the fault came back before it, and announces the replacement when it recurs after the reboot', async () => {
    // Act: a reset fault, the same fault again before due; after the reboot, the fault again (the ladder: replace), twice
    await remediate(resetFault(0), batch, undefined, deps, at(5));
    const back = await remediate(resetFault(200), batch, undefined, deps, at(205));
    const due = await settlePending(batch, undefined, new Map(), deps, at(905));
    const recurred = await remediate(resetFault(1900), batch, undefined, deps, at(1905));
    await remediate(resetFault(2300), batch, undefined, deps, at(2305));
    const replaced = await settlePending(batch, undefined, new Map(), deps, at(2805));

    // Assess
    expect(back.action).toBe('skip');
    expect(due).toMatchObject({ action: 'reboot' });
    expect(remediator.rebooted).toEqual([instanceId]);
    expect(recurred).toMatchObject({
      action: 'scheduled',
      pending: { action: 'replace', due_at: at(2805).toISOString() },
    });
    expect(recurred.reason).toMatch(
      /^replacing .* in 15 minutes .*the fault came back 995 s after the reboot/,
    );
    expect(replaced).toMatchObject({ action: 'replace' });
    expect(remediator.replaced).toEqual([instanceId]);
  });

  it('counts a fault during a storm against recovery: the announced reboot runs when due', async () => {
    // Act
    await remediate(resetFault(0), batch, undefined, deps, at(5));
    const paused = await remediate(
      resetFault(200),
      batch,
      undefined,
      deps,
      at(205),
      'remediation paused: incident',
    );
    const due = await settlePending(batch, undefined, new Map(), deps, at(905));

    // Assess
    expect(paused).toMatchObject({ action: 'skip', reason: 'remediation paused: incident' });
    expect(due).toMatchObject({ action: 'reboot' });
    expect(remediator.rebooted).toEqual([instanceId]);
  });

  it('lets a replace-class fault supersede an announced reboot, announced anew with the same due time', async () => {
    // Prepare
    const broken = { ...resetFault(200), action: 'replace' as const, severity: 'critical' as const };

    // Act
    await remediate(resetFault(0), batch, undefined, deps, at(5));
    const upgraded = await remediate(broken, batch, undefined, deps, at(205));
    const reset = await remediate(resetFault(300), batch, undefined, deps, at(305));
    const due = await settlePending(batch, undefined, new Map([['2', at(200).toISOString()]]), deps, at(905));

    // Assess
    expect(upgraded).toMatchObject({
      action: 'scheduled',
      pending: { action: 'replace', decided_at: at(5).toISOString(), due_at: at(905).toISOString() },
    });
    expect(reset).toMatchObject({ action: 'skip', pending: { action: 'replace' } });
    expect(due).toMatchObject({ action: 'replace' });
    expect(remediator.rebooted).toEqual([]);
    expect(remediator.replaced).toEqual([instanceId]);
  });

  it('cancels the announced replacement at once when the group is tagged gpu-sentinel:remediation=off', async () => {
    // Prepare
    const group = { name: 'train-p5', desired_capacity: 40, tags: {} as Record<string, string> };
    const withDirectory = { ...deps, instances: directoryWithGroup(group) };

    // Act
    const notice = await processBatch(batchAt(0, true), withDirectory, at(0));
    group.tags = { 'gpu-sentinel:remediation': 'off' };
    const acked = await processBatch(batchAt(60, false), withDirectory, at(60));
    const later = await processBatch(batchAt(960, true), withDirectory, at(960));

    // Assess
    expect(notice.decisions.map((d) => d.action)).toEqual(['scheduled']);
    expect(acked.decisions).toMatchObject([{ action: 'cancelled', asg_name: 'train-p5' }]);
    expect(acked.decisions[0]?.reason).toMatch(
      /cancelled: opt-out tag gpu-sentinel:remediation=off on Auto Scaling group train-p5: a human acknowledged/,
    );
    expect(later.decisions.map((d) => d.action)).toEqual(['skip']);
    expect(remediator.replaced).toEqual([]);
    expect(await store.getPendingRemediation(instanceId)).toBeUndefined();
  });

  it('cancels on the opt-out tag of the instance even when the batch carries the fault again', async () => {
    // Prepare
    const tagged: InstanceInfo = {
      instance_id: instanceId,
      region: 'us-east-1',
      state: 'running',
      instance_type: 'p5.48xlarge',
      tags: { 'gpu-sentinel:remediation': 'off' },
      asg: { name: 'train-p5', desired_capacity: 40, tags: {} },
    };
    await remediate(resetFault(0), batch, undefined, deps, at(5));

    // Act
    const acked = await remediate(
      resetFault(100),
      { ...batch, host: { ...batch.host, tags: tagged.tags } },
      tagged,
      deps,
      at(105),
    );

    // Assess
    expect(acked).toMatchObject({ action: 'cancelled' });
    expect(acked.reason).toMatch(/opt-out tag gpu-sentinel:remediation=off on the instance/);
    expect(remediator.rebooted).toEqual([]);
  });

  it('records the notice and the reboot at the due time in dry-run (local mode), executing nothing', async () => {
    // Prepare
    const local = { ...deps, dryRun: true };

    // Act
    const notice = await remediate(resetFault(0), batch, undefined, local, at(5));
    const back = await remediate(resetFault(400), batch, undefined, local, at(405));
    const due = await remediate(resetFault(900), batch, undefined, local, at(905));

    // Assess
    expect([notice, back, due].map((d) => [d.action, d.dry_run])).toEqual([
      ['scheduled', true],
      ['skip', true],
      ['reboot', true],
    ]);
    expect(remediator.rebooted).toEqual([]);
    expect(await store.getLastReboot(instanceId)).toMatchObject({
      action: 'reboot',
      at: at(905).toISOString(),
    });
    expect(decisions.decisions.map((d) => d.action)).toEqual(['scheduled', 'skip', 'reboot']);
  });
});
