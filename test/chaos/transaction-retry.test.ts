import { describe, expect, it } from 'vitest';
import { DynamoDbStateStore } from '../../lambdas/adapters/dynamodb-state-store';
import { processBatch } from '../../lambdas/app/process-batch';
import type { Batch } from '../../lambdas/contract';
import { DEFAULT_RULE_CONTEXT } from '../../lambdas/domain';
import { fakeDynamoDb } from '../lambdas/adapters/dynamodb-fake';
import { NOW, validBatch } from '../lambdas/contract/batches';
import {
  directoryWithGroup,
  RecordingAlertSink,
  RecordingDecisionSink,
  RecordingRemediator,
} from '../lambdas/handlers/fakes';
import { RecordingStore } from './chaos-fixtures';

/** A real-sized group: 40 instances, so the per-hour limit (2) is the budget. */
const GROUP = { name: 'train-p5', desired_capacity: 40, tags: {} };

/** One instance's batch with a fatal Xid 79 (GPU fallen off the bus), `n` × 20 s after the storm began. */
function fatalBatch(n: number): Batch {
  const now = new Date(NOW.getTime() + n * 20_000);
  const base = validBatch({}, 8, now);
  return {
    ...base,
    seq: 100 + n,
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

describe.each([
  { name: 'DynamoDB honours ClientRequestToken', honourTokens: true },
  {
    name: 'the token is not honoured (emulator, or a retry after its 10 minutes): our own lease is recognised',
    honourTokens: false,
  },
])('chaos: an SDK retry after a committed reservation ($name)', ({ honourTokens }) => {
  it('replaces the instance once, confirms the record and strands no budget slot', async () => {
    // Prepare: the first TransactWriteItems commits, its answer is lost, the SDK sends it again
    const dynamo = fakeDynamoDb({ loseTransactAnswers: 1, honourTokens });
    const state = new DynamoDbStateStore({ client: dynamo.client, tableName: 'gpu-sentinel-state' });
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
      instances: directoryWithGroup(GROUP),
    };

    // Act: the fatal batch, then the agent's next batch 20 s later
    await processBatch(fatalBatch(0), deps, NOW);
    await processBatch(fatalBatch(1), deps, new Date(NOW.getTime() + 20_000));

    // Assess
    const instanceId = validBatch().host.instance_id;
    expect(remediator.replaced).toEqual([instanceId]);
    expect(decisions.decisions.map((d) => d.action)).toEqual(['replace', 'skip']);
    expect(decisions.decisions[1]!.reason).toMatch(/already replaced/);
    expect(await state.getRemediation(instanceId)).toMatchObject({ action: 'replace', asg_name: GROUP.name });
    const slots = [...dynamo.items.values()].filter((i) => i.pk?.S?.startsWith('budget#'));
    expect(slots.map((i) => [i.pk?.S, i.instance_id?.S])).toEqual([
      ['budget#asg#train-p5', instanceId],
      ['budget#fleet', instanceId],
    ]);
  });
});
