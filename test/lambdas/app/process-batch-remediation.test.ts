import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PipelineDeps } from '../../../lambdas/app/pipeline';
import { processBatch } from '../../../lambdas/app/process-batch';
import type { Batch, GpuEvent } from '../../../lambdas/contract';
import { DEFAULT_REMEDIATION_LIMITS, DEFAULT_STORM_LIMITS } from '../../../lambdas/domain';
import type { TelemetryStore } from '../../../lambdas/domain/ports';
import type { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { ago, NOW, validBatch } from '../contract/batches';
import { directoryWithGroup, type RecordingDecisionSink, type RecordingRemediator } from '../handlers/fakes';
import { embeddedPipeline } from './embedded-pipeline';

const xid79 = (): GpuEvent => ({
  at: ago(5),
  kind: 'xid',
  xid: 79,
  source: 'kmsg',
  pci_bus_id: '0000:53:00.0',
});

/** The same instance's next batch, `n` flushes later (new id and seq, same fatal event). */
function nextBatch(n: number): Batch {
  const now = new Date(NOW.getTime() + n * 10_000);
  return {
    ...validBatch({ events: [xid79()] }, 8, now),
    batch_id: `8a7f3c52-6a0e-4b8e-9f3d-${String(n).padStart(12, '0')}`,
    seq: 42 + n,
  };
}

describe('processBatch remediation and ordering', () => {
  let store: DuckDbStore;
  let decisions: RecordingDecisionSink;
  let remediator: RecordingRemediator;
  let deps: PipelineDeps;

  beforeEach(async () => {
    ({ store, decisions, remediator, deps } = await embeddedPipeline());
  });

  afterEach(async () => {
    await store.close();
  });

  it('persists no broken mark when the store write fails, and marks it once a retry is stored', async () => {
    // Prepare
    const down: TelemetryStore = {
      write: async () => Promise.reject(new Error('store down')),
      queryWaste: (q) => store.queryWaste(q),
      queryWasteBy: (q) => store.queryWasteBy(q),
      recentWindows: (q) => store.recentWindows(q),
      nodeJobMeans: (q) => store.nodeJobMeans(q),
      lastSeen: (q) => store.lastSeen(q),
    };
    const batch = nextBatch(0);

    // Act
    const failed = processBatch(batch, { ...deps, store: down }, NOW);
    await expect(failed).rejects.toThrow('store down');
    const marksAfterFailure = await store.getBrokenSince(batch.host.instance_id);
    await processBatch(batch, deps, NOW);

    // Assess
    expect(marksAfterFailure.size).toBe(0);
    expect([...(await store.getBrokenSince(batch.host.instance_id)).keys()]).toEqual(['0']);
    expect(remediator.replaced).toEqual([batch.host.instance_id]);
  });

  it('releases the reservation when the replacement call fails, so the next batch replaces', async () => {
    // Prepare
    remediator.failWith = new Error('ResourceContention');

    // Act
    const first = await processBatch(nextBatch(0), deps, NOW);
    remediator.failWith = undefined;
    const second = await processBatch(nextBatch(1), deps, new Date(NOW.getTime() + 10_000));

    // Assess
    expect(first.decisions.map((d) => d.action)).toEqual(['escalate']);
    expect(second.decisions.map((d) => d.action)).toEqual(['replace']);
    expect(remediator.replaced).toEqual([nextBatch(0).host.instance_id]);
  });

  it('pages one escalation per instance and cooldown, not one per batch', async () => {
    // Prepare: a group budget of 0 refuses every replacement
    const limits = { ...DEFAULT_REMEDIATION_LIMITS, maxPerGroupPerWindow: 0 };

    // Act
    const actions: string[] = [];
    for (let n = 0; n < 30; n += 1) {
      const now = new Date(NOW.getTime() + n * 10_000);
      const out = await processBatch(nextBatch(n), { ...deps, remediationLimits: limits }, now);
      actions.push(...out.decisions.map((d) => d.action));
    }

    // Assess
    expect(actions.filter((a) => a === 'escalate')).toHaveLength(1);
    expect(actions.filter((a) => a === 'skip')).toHaveLength(29);
    expect(decisions.decisions[1]!.reason).toMatch(/^already escalated to a human within the last 3600 s/);
    expect(remediator.replaced).toEqual([]);
  });

  it('pages the escalation on the retry when its first publish failed, instead of swallowing it for the cooldown', async () => {
    // Prepare: every replacement refused by the budget; the decision topic fails once
    const limits = { ...DEFAULT_REMEDIATION_LIMITS, maxPerGroupPerWindow: 0 };
    let failures = 1;
    const flaky = {
      record: async (d: Parameters<RecordingDecisionSink['record']>[0]) => {
        if (failures-- > 0) throw new Error('SNS unavailable');
        await decisions.record(d);
      },
    };
    const batch = nextBatch(0);

    // Act
    const first = processBatch(batch, { ...deps, decisions: flaky, remediationLimits: limits }, NOW);
    await expect(first).rejects.toThrow('SNS unavailable');
    const retry = await processBatch(batch, { ...deps, decisions: flaky, remediationLimits: limits }, NOW);

    // Assess
    expect(retry.decisions.map((d) => d.action)).toEqual(['escalate']);
    expect(decisions.decisions.map((d) => d.action)).toEqual(['escalate']);
  });

  it('takes the group from enrichment, not from the batch: ten self-reported names spend one budget', async () => {
    // Prepare: ten instances of one real group, each claiming its own group name
    const directory = directoryWithGroup({ name: 'real-group', desired_capacity: 40, tags: {} });
    const batches = Array.from({ length: 10 }, (_, i) => {
      const b = nextBatch(i);
      const instance_id = `i-0a5e0000000000${String(i).padStart(3, '0')}`;
      return { ...b, host: { ...b.host, instance_id, asg_name: `fake-${i}` } };
    });

    // No storm at 10 instances here: the budget is what is tested (storms: test/chaos/remediation-storm.test.ts)
    const stormLimits = {
      ...DEFAULT_STORM_LIMITS,
      groupInstances: 1000,
      groupFraction: 1,
      fleetInstances: 1000,
    };

    // Act
    const outs = await Promise.all(
      batches.map((b) => processBatch(b, { ...deps, instances: directory, stormLimits }, NOW)),
    );

    // Assess
    const actions = outs.flatMap((o) => o.decisions.map((d) => d.action));
    expect(actions.filter((a) => a === 'replace')).toHaveLength(
      DEFAULT_REMEDIATION_LIMITS.maxPerGroupPerWindow,
    );
    expect(actions.filter((a) => a === 'escalate')).toHaveLength(
      10 - DEFAULT_REMEDIATION_LIMITS.maxPerGroupPerWindow,
    );
    expect(new Set(outs.flatMap((o) => o.decisions.map((d) => d.asg_name)))).toEqual(new Set(['real-group']));
  });
});
