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

/** The real group, as Auto Scaling describes it (40 instances: the 10 % limit is 4, the per-hour limit 2 wins). */
const GROUP = { name: 'train-p5', desired_capacity: 40, tags: {} };
/** The 100-instance storm's group (the storm threshold is min(3, 20 % of 100) = 3). */
const BIG_GROUP = { name: 'train-p5-big', desired_capacity: 120, tags: {} };
/** Decisions that page (the SNS decision sink's critical topic). */
const CRITICAL_ACTIONS = new Set(['reboot', 'replace', 'quarantine', 'escalate']);

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

type OpenState = () => Promise<{ state: StateStore; close: () => Promise<void> }>;

const duckDb: OpenState = async () => {
  const store = await DuckDbStore.open(':memory:');
  return { state: store, close: () => store.close() };
};

/** Runs a storm: every instance's fatal batch at once, then `followUps` more each, one per 20 s. */
async function runStorm(open: OpenState, group: typeof GROUP, instances: number, followUps: number) {
  const { state, close } = await open();
  const remediator = new RecordingRemediator();
  const decisions = new RecordingDecisionSink();
  const alerts = new RecordingAlertSink();
  const deps = {
    store: new RecordingStore(),
    state,
    alerts,
    decisions,
    remediator,
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    remediationMode: 'replace' as const,
    dryRun: false,
    rules: DEFAULT_RULE_CONTEXT,
    instances: directoryWithGroup(group),
  };
  try {
    await Promise.all(
      Array.from({ length: instances }, async (_, i) => {
        for (let n = 0; n <= followUps; n += 1) {
          await processBatch(batchOf(i, n), deps, new Date(NOW.getTime() + n * 20_000));
        }
      }),
    );
    const incident = await state.recordFault(
      `asg#${group.name}`,
      'i-0000000000000000f',
      new Date(NOW.getTime() + followUps * 20_000).toISOString(),
      600,
    );
    const actions = new Tally();
    for (const d of decisions.decisions) actions.add(d.action);
    const critical =
      alerts.alerts.filter((a) => a.finding.severity === 'critical').length +
      decisions.decisions.filter((d) => CRITICAL_ACTIONS.has(d.action)).length;
    return { remediator, decisions, alerts, actions, critical, incident };
  } finally {
    await close();
  }
}

describe('chaos: a 100-instance storm on the embedded store (DuckDB)', () => {
  it('sends at most 10 critical messages, one incident per group and fleet, and still decides and records every instance', async () => {
    // Act: 100 instances of one group report Xid 79 at once, then one more batch each
    const { remediator, decisions, alerts, actions, critical, incident } = await runStorm(
      duckDb,
      BIG_GROUP,
      100,
      1,
    );

    // Assess
    const decided = new Set(decisions.decisions.map((d) => d.instance_id));
    const incidents = alerts.alerts.filter((a) => a.id.startsWith('incident:'));
    const opened = incidents.filter((a) => /^incident:(asg#[^#]+|fleet)$/.test(a.id));
    console.log(
      `chaos storm (DuckDB): 100 instances × 2 batches; decisions: ${actions}; Auto Scaling calls: ${remediator.replaced.length}; ` +
        `critical messages: ${critical}; incident messages: ${incidents.map((a) => a.id).join(', ')}; alerts: ${alerts.alerts.length}`,
    );
    expect(critical).toBeLessThanOrEqual(10);
    expect(decided.size).toBe(100);
    expect(decisions.decisions).toHaveLength(200);
    expect(remediator.replaced.length).toBeLessThanOrEqual(2);
    expect(opened.map((a) => a.id).sort()).toEqual([`incident:asg#${BIG_GROUP.name}`, 'incident:fleet']);
    expect(opened.every((a) => a.finding.severity === 'critical')).toBe(true);
    expect(actions.get('skip')).toBeGreaterThanOrEqual(198);
    expect(
      decisions.decisions.filter((d) =>
        d.reason.startsWith(`remediation paused: incident asg#${BIG_GROUP.name}`),
      ).length,
    ).toBeGreaterThanOrEqual(97);
    const last = incidents.filter((a) => a.id.startsWith(`incident:asg#${BIG_GROUP.name}`)).at(-1)!;
    expect(last.body).toMatch(/Instances \(\d+\):/);
    expect(incident.length).toBe(101);
  });
});

describe.each<{ name: string; open: OpenState }>([
  { name: 'DuckDB (local mode)', open: duckDb },
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
])('chaos: a 20-instance remediation storm on $name', ({ name, open }) => {
  it('replaces at most the group budget, pauses the rest under one incident, and pages no instance one by one', async () => {
    // Act: 20 instances at once, then every instance keeps reporting for 5 minutes
    const { remediator, decisions, actions, critical } = await runStorm(open, GROUP, 20, 15);

    // Assess
    const budget = groupReplacementLimit(DEFAULT_REMEDIATION_LIMITS, GROUP.desired_capacity).limit;
    console.log(
      `chaos storm (${name}): 20 instances × 16 batches; decisions: ${actions}; ` +
        `Auto Scaling calls: ${remediator.replaced.length} (budget ${budget}); critical messages: ${critical}`,
    );
    expect(remediator.replaced.length).toBeLessThanOrEqual(budget);
    expect(actions.get('escalate')).toBe(0);
    expect(critical).toBeLessThanOrEqual(10);
    expect(new Set(decisions.decisions.map((d) => d.instance_id)).size).toBe(20);
    expect(new Set(decisions.decisions.map((d) => d.asg_name))).toEqual(new Set([GROUP.name]));
  });
});
