import { describe, expect, it } from 'vitest';
import { DynamoDbStateStore } from '../../lambdas/adapters/dynamodb-state-store';
import { processBatch } from '../../lambdas/app/process-batch';
import type { Batch, GpuEvent } from '../../lambdas/contract';
import { DEFAULT_ALERT_BOUNDS, DEFAULT_RULE_CONTEXT } from '../../lambdas/domain';
import type { StateStore } from '../../lambdas/domain/ports';
import { fakeDynamoDb } from '../lambdas/adapters/dynamodb-fake';
import { NOW, P5_BUS_IDS, validBatch } from '../lambdas/contract/batches';
import {
  directoryWithGroup,
  RecordingAlertSink,
  RecordingDecisionSink,
  RecordingRemediator,
} from '../lambdas/handlers/fakes';
import { RecordingStore, Tally } from './chaos-fixtures';

/** A state store that counts every call of the port, by method. */
function counting(state: StateStore): { state: StateStore; calls: Tally } {
  const calls = new Tally();
  const proxy = new Proxy(state, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.add(String(key));
        return value.apply(target, args);
      };
    },
  });
  return { state: proxy, calls };
}

/** One batch with 256 events (the contract's most), each a different Xid code, spread over the 8 GPUs. */
function xidFlood(now: Date): Batch {
  const events: GpuEvent[] = Array.from({ length: 256 }, (_, i) => ({
    at: new Date(now.getTime() - 5000 + i).toISOString(),
    kind: 'xid',
    xid: i + 1,
    source: 'kmsg',
    pci_bus_id: P5_BUS_IDS[i % P5_BUS_IDS.length]!,
  }));
  return { ...validBatch({}, 8, now), events };
}

describe('chaos: one batch with 256 different Xid codes', () => {
  it('sends a bounded number of alerts, the rest in one summary with the counts, with bounded state calls', async () => {
    // Prepare
    const { state, calls } = counting(
      new DynamoDbStateStore({ client: fakeDynamoDb().client, tableName: 'gpu-sentinel-state' }),
    );
    const alerts = new RecordingAlertSink();
    const decisions = new RecordingDecisionSink();
    const deps = {
      store: new RecordingStore(),
      state,
      alerts,
      decisions,
      remediator: new RecordingRemediator(),
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
      remediationMode: 'replace' as const,
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      instances: directoryWithGroup({ name: 'train-p5', desired_capacity: 40, tags: {} }),
    };

    // Act
    const out = await processBatch(xidFlood(NOW), deps, NOW);

    // Assess
    let total = 0;
    for (const [, n] of calls.counts) total += n;
    const summary = alerts.alerts.find((a) => a.id.startsWith('summary:'));
    console.log(
      `chaos fan-out: 256 Xid codes → findings ${out.findings.length}, alerts ${alerts.alerts.length} ` +
        `(summary folds ${summary?.finding.evidence.folded ?? 0}), decisions ${decisions.decisions.length}, ` +
        `state calls ${total} (${calls})`,
    );
    expect(out.findings.length).toBeGreaterThan(DEFAULT_ALERT_BOUNDS.perBatch);
    expect(alerts.alerts.length).toBeLessThanOrEqual(DEFAULT_ALERT_BOUNDS.perBatch + 1);
    expect(summary).toBeDefined();
    expect(Number(summary!.finding.evidence.folded)).toBe(
      out.findings.length - DEFAULT_ALERT_BOUNDS.perBatch,
    );
    expect(summary!.body).toMatch(/Counts \(\d+ kind\(s\)\):\n {2}xid_(fatal|app|notice)#xid\d+: 1/);
    expect(decisions.decisions).toHaveLength(1);
    expect(total).toBeLessThanOrEqual(60);
  });

  it('bounds one instance across batches: past 20 distinct alerts in the hour, the rest go into its summary', async () => {
    // Prepare: the instance sends 40 different codes, 8 per batch, one batch a minute
    const { state } = counting(
      new DynamoDbStateStore({ client: fakeDynamoDb().client, tableName: 'gpu-sentinel-state' }),
    );
    const alerts = new RecordingAlertSink();
    const deps = {
      store: new RecordingStore(),
      state,
      alerts,
      decisions: new RecordingDecisionSink(),
      remediator: new RecordingRemediator(),
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
      remediationMode: 'notify' as const,
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
    };

    // Act
    for (let n = 0; n < 5; n += 1) {
      const now = new Date(NOW.getTime() + n * 60_000);
      const flood = xidFlood(now);
      const events = (flood.events ?? []).slice(n * 8, n * 8 + 8);
      await processBatch({ ...flood, seq: 100 + n, events }, deps, now);
    }

    // Assess
    const individual = alerts.alerts.filter((a) => !a.id.startsWith('summary:'));
    expect(individual.length).toBeLessThanOrEqual(DEFAULT_ALERT_BOUNDS.perInstance);
    expect(alerts.alerts.some((a) => a.id.startsWith('summary:'))).toBe(true);
  });
});
