import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SendRejectedError } from '../../agent/errors';
import { BatchBuilder } from '../../agent/send/batcher';
import { HttpSender } from '../../agent/send/sender';
import { DEFAULT_RULE_CONTEXT } from '../../lambdas/domain';
import type { InstanceDirectory } from '../../lambdas/domain/ports';
import type { InstanceInfo } from '../../lambdas/domain/types';
import { createIngestHandler } from '../../lambdas/handlers/ingest-handler';
import { instanceRoleIdentity } from '../../lambdas/local/api-gateway-event';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { type LocalApi, startLocalApi } from '../../lambdas/local/local-api-server';
import { NOW, validBatch } from '../lambdas/contract/batches';
import {
  RecordingAlertSink,
  RecordingDecisionSink,
  RecordingRemediator,
  recordingLog,
} from '../lambdas/handlers/fakes';

const INSTANCE = 'i-0a5e00000000000a1';
const CREDENTIALS = { accessKeyId: 'ASIAEXAMPLEEXAMPLE00', secretAccessKey: 'secret', sessionToken: 'token' };

/** EC2's answer for the sender: a running p5 with an instance profile, tagged with its team. */
class FixedDirectory implements InstanceDirectory {
  async describe(instanceId: string, region: string): Promise<InstanceInfo | undefined> {
    if (instanceId !== INSTANCE) return undefined;
    return {
      instance_id: instanceId,
      region,
      state: 'running',
      instance_type: 'p5.48xlarge',
      tags: { team: 'research' },
      instance_profile_arn: 'arn:aws:iam::123456789012:instance-profile/GpuNode',
    };
  }
}

describe("the agent's signed gzip batches through the API Gateway model into the ingest handler", () => {
  let store: DuckDbStore;
  const apis: LocalApi[] = [];

  async function apiAs(sessionInstanceId: string): Promise<HttpSender> {
    const handler = createIngestHandler({
      store,
      state: store,
      alerts: new RecordingAlertSink(),
      decisions: new RecordingDecisionSink(),
      remediator: new RecordingRemediator(),
      log: recordingLog(),
      remediationMode: 'replace',
      dryRun: true,
      rules: DEFAULT_RULE_CONTEXT,
      instances: new FixedDirectory(),
      clock: () => NOW,
      callerCheck: 'instance-session',
    });
    const api = await startLocalApi({
      handler,
      identity: instanceRoleIdentity('123456789012', 'GpuNodeRole', sessionInstanceId),
    });
    apis.push(api);
    return new HttpSender({
      endpoint: api.url,
      region: 'us-east-1',
      credentials: CREDENTIALS,
      retries: 0,
      clock: () => NOW,
    });
  }

  beforeAll(async () => {
    store = await DuckDbStore.open(':memory:');
  });

  afterAll(async () => {
    await Promise.all(apis.map((a) => a.close()));
    await store.close();
  });

  it('stores every window of an instance sending for itself, with the team EC2 knows', async () => {
    // Prepare: the agent's own batcher packs the windows; no IMDS tags on the host
    const base = validBatch({ events: [] });
    const [batch] = new BatchBuilder({ clock: () => NOW }).build({
      host: { ...base.host, tags: undefined },
      agent: base.agent,
      windows: base.windows,
    });
    const sender = await apiAs(INSTANCE);
    // Act
    const result = await sender.send(batch!);
    // Assess
    expect(result).toMatchObject({ status: 202, accepted: 8 });
    const rows = await store.queryWaste({
      from: new Date(NOW.getTime() - 60_000),
      to: new Date(NOW.getTime() + 1000),
    });
    expect(rows).toHaveLength(8);
    expect(rows.every((r) => r.team === 'research')).toBe(true);
  });

  it("refuses with 403 a batch sent with another instance's credentials; the agent sees the rejection", async () => {
    // Prepare
    const sender = await apiAs('i-0bbbbbbbbbbbbbbb2');
    // Act
    const sent = sender.send({
      ...validBatch({ events: [] }),
      batch_id: '8a7f3c52-6a0e-4b8e-9f3d-2f6c1e0b9a12',
    });
    // Assess
    await expect(sent).rejects.toBeInstanceOf(SendRejectedError);
    await expect(sent).rejects.toMatchObject({ status: 403 });
  });
});
