import { describe, expect, it } from 'vitest';
import { DynamoDbStateStore } from '../../lambdas/adapters/dynamodb-state-store';
import { processBatch } from '../../lambdas/app/process-batch';
import type { Batch } from '../../lambdas/contract';
import {
  DEFAULT_REMEDIATION_LIMITS,
  DEFAULT_RULE_CONTEXT,
  groupReplacementLimit,
} from '../../lambdas/domain';
import type { StateStore } from '../../lambdas/domain/ports';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { fakeDynamoDb } from '../lambdas/adapters/dynamodb-fake';
import { NOW, validBatch } from '../lambdas/contract/batches';
import {
  directoryWithGroup,
  RecordingAlertSink,
  RecordingDecisionSink,
  RecordingRemediator,
} from '../lambdas/handlers/fakes';
import { RecordingStore, Tally } from './chaos-fixtures';

/** Instances of one real Auto Scaling group that report a fatal Xid at the same moment. */
const STORM_INSTANCES = 20;
/** Batches each of them sends afterwards, one per 20 s: 5 minutes of a rate-limited storm. */
const FOLLOW_UP_BATCHES = 15;
/** The real group, as Auto Scaling describes it (40 instances: the 10 % limit is 4, the per-hour limit 2 wins). */
const GROUP = { name: 'train-p5', desired_capacity: 40, tags: {} };

/** A deterministic 5–30 ms round trip per DynamoDB request (a small LCG: the run is repeatable). */
function latency(): () => number {
  let x = 20_261_123;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return 5 + (x % 26);
  };
}

/** Instance `i`'s batch `n` (n = 0 is the storm), with a self-reported group name that lies. */
function batchOf(i: number, n: number): Batch {
  const now = new Date(NOW.getTime() + n * 20_000);
  const base = validBatch({}, 8, now);
  return {
    ...base,
    batch_id: `8a7f3c52-6a0e-4b8e-${String(1000 + i).padStart(4, '0')}-${String(n).padStart(12, '0')}`,
    seq: 100 + n,
    host: {
      ...base.host,
      instance_id: `i-0a5e0000000000${String(i).padStart(3, '0')}`,
      asg_name: `fake-${i}`,
    },
    events: [
      {
        at: new Date(now.getTime() - 5000).toISOString(),
        kind: 'xid',
        xid: 79,
        source: 'kmsg',
        pci_bus_id: '0000:19:00.0',
      },
    ],
  };
}

const directory = directoryWithGroup(GROUP);

describe.each<{ name: string; open: () => Promise<{ state: StateStore; close: () => Promise<void> }> }>([
  {
    name: 'DuckDB (local mode)',
    open: async () => {
      const store = await DuckDbStore.open(':memory:');
      return { state: store, close: () => store.close() };
    },
  },
  {
    name: 'DynamoDB (conditional writes, 5–30 ms per request)',
    open: async () => ({
      state: new DynamoDbStateStore({
        client: fakeDynamoDb({ latencyMs: latency() }).client,
        tableName: 'gpu-sentinel-state',
      }),
      close: async () => undefined,
    }),
  },
])('chaos: a remediation storm on $name', ({ name, open }) => {
  it(`replaces at most the group budget of ${STORM_INSTANCES} concurrent fatal reports and pages each other instance once`, async () => {
    // Prepare
    const { state, close } = await open();
    const remediator = new RecordingRemediator();
    const decisions = new RecordingDecisionSink();
    const deps = {
      store: new RecordingStore(),
      state,
      alerts: new RecordingAlertSink(),
      decisions,
      remediator,
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
      remediationMode: 'replace' as const,
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      instances: directory,
    };
    const budget = groupReplacementLimit(DEFAULT_REMEDIATION_LIMITS, GROUP.desired_capacity).limit;

    // Act: the storm, all at once; then every instance keeps reporting for 5 minutes
    try {
      await Promise.all(
        Array.from({ length: STORM_INSTANCES }, async (_, i) => {
          for (let n = 0; n <= FOLLOW_UP_BATCHES; n += 1) {
            await processBatch(batchOf(i, n), deps, new Date(NOW.getTime() + n * 20_000));
          }
        }),
      );
    } finally {
      await close();
    }

    // Assess
    const actions = new Tally();
    for (const d of decisions.decisions) actions.add(d.action);
    const escalatedInstances = new Set(
      decisions.decisions.filter((d) => d.action === 'escalate').map((d) => d.instance_id),
    );
    console.log(
      `chaos storm (${name}): ${STORM_INSTANCES} instances × ${FOLLOW_UP_BATCHES + 1} batches; decisions: ${actions}; ` +
        `Auto Scaling calls: ${remediator.replaced.length} (budget ${budget}); critical pages: ${actions.get('replace') + actions.get('escalate')}`,
    );
    expect(remediator.replaced.length).toBeLessThanOrEqual(budget);
    expect(remediator.replaced.length).toBe(budget);
    expect(actions.get('escalate')).toBe(STORM_INSTANCES - budget);
    expect(escalatedInstances.size).toBe(STORM_INSTANCES - budget);
    expect(new Set(decisions.decisions.map((d) => d.asg_name))).toEqual(new Set([GROUP.name]));
  });
});
