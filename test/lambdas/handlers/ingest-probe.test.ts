import type { APIGatewayProxyEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { PROBE_HEADER } from '../../../lambdas/contract';
import { DEFAULT_RULE_CONTEXT } from '../../../lambdas/domain';
import type { InstanceDirectory, MetricsSink } from '../../../lambdas/domain/ports';
import type { InstanceInfo } from '../../../lambdas/domain/types';
import { createIngestHandler, type IngestHandlerDeps } from '../../../lambdas/handlers/ingest-handler';
import { instanceRoleIdentity } from '../../../lambdas/local/api-gateway-event';
import { type LocalApi, startLocalApi } from '../../../lambdas/local/local-api-server';
import { NOW, validBatch } from '../contract/batches';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator, recordingLog } from './fakes';
import { ACCOUNT, AGENT_ROLE, batchEvent, INSTANCE_CALLER, INSTANCE_ID } from './proxy-event';

/** A port that fails the test on any use: a probe must not touch it. */
function untouchable<T extends object>(name: string, touched: string[]): T {
  return new Proxy({} as T, {
    get: (_target, prop) => {
      if (prop === 'then') return undefined;
      return (..._args: unknown[]) => {
        touched.push(`${name}.${String(prop)}`);
        throw new Error(`${name}.${String(prop)} called by a probe`);
      };
    },
  });
}

/** What EC2 says about the test instance: a running p5 whose instance profile carries the agent role. */
const RUNNING: InstanceInfo = {
  instance_id: INSTANCE_ID,
  region: 'us-east-1',
  state: 'running',
  instance_type: 'p5.48xlarge',
  tags: {},
  instance_profile_arn: `arn:aws:iam::${ACCOUNT}:instance-profile/${AGENT_ROLE}`,
  instance_profile_role_names: [AGENT_ROLE],
};

function probeEvent(
  body: unknown,
  caller: string | null = INSTANCE_CALLER,
  value = '1',
): APIGatewayProxyEvent {
  return batchEvent(body, {
    caller,
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip', [PROBE_HEADER]: value },
  });
}

describe('signed probe on the ingest handler', () => {
  const touched: string[] = [];
  const emitted: unknown[] = [];
  const metrics: MetricsSink = { emit: (groups) => void emitted.push(groups) };

  function deps(overrides: Partial<IngestHandlerDeps> = {}): IngestHandlerDeps {
    return {
      store: untouchable('store', touched),
      state: untouchable('state', touched),
      alerts: untouchable('alerts', touched),
      decisions: untouchable('decisions', touched),
      remediator: untouchable('remediator', touched),
      log: recordingLog(),
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      clock: () => NOW,
      metrics,
      ...overrides,
    };
  }

  afterEach(() => {
    touched.length = 0;
    emitted.length = 0;
  });

  it('answers 200 with every check it ran and touches no store, sink, remediator or metric', async () => {
    // Prepare: a batch with a fatal Xid, which as a batch would alert and replace the instance
    const instances: InstanceDirectory = { describe: async () => RUNNING };
    const handler = createIngestHandler(
      deps({ instances, accountId: ACCOUNT, agentRoleNames: [AGENT_ROLE] }),
    );
    // Act
    const res = await handler(probeEvent(validBatch()));
    // Assess
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toEqual({
      probe: true,
      caller_arn: INSTANCE_CALLER,
      instance_id: INSTANCE_ID,
      verified: ['iam_authorization', 'instance_session', 'ec2_instance', 'contract'],
      not_checked: [],
      stored: 0,
    });
    expect(touched).toEqual([]);
    expect(emitted).toEqual([]);
  });

  it('names the EC2 check it skips for a caller of another account', async () => {
    // Prepare
    const asked: string[] = [];
    const instances: InstanceDirectory = {
      describe: async (id) => {
        asked.push(id);
        return RUNNING;
      },
    };
    const handler = createIngestHandler(deps({ instances, accountId: '999999999999' }));
    // Act
    const res = await handler(probeEvent(validBatch({ events: [] })));
    // Assess
    expect(res.statusCode).toBe(200);
    const body = JSON.parse(res.body);
    expect(body.verified).toEqual(['iam_authorization', 'instance_session', 'contract']);
    expect(body.not_checked).toEqual([
      { check: 'ec2_instance', reason: expect.stringContaining(`account ${ACCOUNT} is not the API's`) },
    ]);
    expect(asked).toEqual([]);
  });

  it.each([
    ['another instance', 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0bbbbbbbbbbbbbbb2', {}, 403],
    ['an IAM user', 'arn:aws:iam::123456789012:user/alice', {}, 403],
    [
      'a role that is not an agent role',
      `arn:aws:sts::${ACCOUNT}:assumed-role/Other/${INSTANCE_ID}`,
      {},
      403,
    ],
    ['an instance EC2 says is stopped', INSTANCE_CALLER, { state: 'stopped' }, 403],
    ['an instance EC2 does not know yet', INSTANCE_CALLER, undefined, 503],
  ])(
    'gives the answer a real batch from %s gets, and touches nothing',
    async (_name, caller, ec2, status) => {
      // Prepare
      const instances: InstanceDirectory = {
        describe: async () => (ec2 === undefined ? undefined : { ...RUNNING, ...ec2 }),
      };
      const settings = { instances, accountId: ACCOUNT, agentRoleNames: [AGENT_ROLE] };
      const asBatch = await createIngestHandler(deps(settings))(batchEvent(validBatch(), { caller }));
      touched.length = 0;
      // Act
      const res = await createIngestHandler(deps(settings))(probeEvent(validBatch(), caller));
      // Assess
      expect(res.statusCode).toBe(status);
      expect(res).toEqual(asBatch);
      expect(touched).toEqual([]);
    },
  );

  it('refuses an invalid probe body with the 400 a batch gets, naming the field', async () => {
    // Prepare
    const bad = validBatch();
    (bad.windows[2]!.metrics as Record<string, unknown>).power_w = -5;
    // Act
    const res = await createIngestHandler(deps())(probeEvent(bad));
    // Assess
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ path: 'windows[2].metrics.power_w' });
    expect(touched).toEqual([]);
  });

  it('accepts the smallest probe body: a batch with no windows, EFA ports or events', async () => {
    // Act
    const res = await createIngestHandler(deps())(
      probeEvent(validBatch({ windows: [], efa: [], events: [] })),
    );
    // Assess
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body).verified).toEqual(['iam_authorization', 'instance_session', 'contract']);
  });

  it.each(['0', 'no', ''])('treats header value %j as a batch, not a probe', async (value) => {
    // Prepare: a store that is touched proves the batch went through
    const handler = createIngestHandler(deps());
    // Act
    const res = await handler(probeEvent(validBatch({ events: [] }), INSTANCE_CALLER, value));
    // Assess
    expect(res.statusCode).toBe(500);
    expect(touched.length).toBeGreaterThan(0);
  });
});

describe('signed probe through the local API', () => {
  let api: LocalApi | undefined;

  afterEach(async () => {
    await api?.close();
    api = undefined;
  });

  const post = (url: string, body: unknown, probe: boolean): Promise<Response> =>
    fetch(`${url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(probe ? { [PROBE_HEADER]: '1' } : {}) },
      body: JSON.stringify(body),
    });

  it.each([
    ['the instance itself', INSTANCE_ID, 200],
    ['another instance', 'i-0bbbbbbbbbbbbbbb2', 403],
  ])('answers a probe from %s as the deployed API would', async (_name, session, status) => {
    // Prepare: the handler with the deployed identity checks, the caller IAM would report
    const touched: string[] = [];
    const handler = createIngestHandler({
      store: untouchable('store', touched),
      state: untouchable('state', touched),
      alerts: untouchable('alerts', touched),
      decisions: untouchable('decisions', touched),
      remediator: untouchable('remediator', touched),
      log: recordingLog(),
      remediationMode: 'replace',
      dryRun: false,
      rules: DEFAULT_RULE_CONTEXT,
      clock: () => NOW,
      callerCheck: 'instance-session',
    });
    api = await startLocalApi({ handler, identity: instanceRoleIdentity(ACCOUNT, AGENT_ROLE, session) });
    // Act
    const res = await post(api.url, validBatch(), true);
    // Assess
    expect(res.status).toBe(status);
    const body = (await res.json()) as Record<string, unknown>;
    if (status === 200) expect(body).toMatchObject({ probe: true, stored: 0 });
    else expect(body).toMatchObject({ path: 'host.instance_id' });
    expect(touched).toEqual([]);
  });

  it('stores nothing for a probe in local mode, and the same batch is then stored', async () => {
    // Prepare: local mode's handler (no caller checks) over real recording sinks
    const { DuckDbStore } = await import('../../../lambdas/local/duckdb-store');
    const store = await DuckDbStore.open(':memory:');
    try {
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
        clock: () => NOW,
        callerCheck: 'none',
      });
      api = await startLocalApi({ handler });
      const range = { from: new Date(NOW.getTime() - 60_000), to: new Date(NOW.getTime() + 1000) };
      // Act
      const probe = await post(api.url, validBatch({ events: [] }), true);
      const storedAfterProbe = (await store.queryWaste(range)).length;
      const batch = await post(api.url, validBatch({ events: [] }), false);
      // Assess
      expect(probe.status).toBe(200);
      expect(await probe.json()).toMatchObject({
        caller_arn: null,
        verified: ['contract'],
        not_checked: [
          { check: 'instance_session', reason: expect.stringContaining('local mode') },
          { check: 'ec2_instance', reason: expect.stringContaining('local mode') },
        ],
      });
      expect(storedAfterProbe).toBe(0);
      expect(batch.status).toBe(202);
      expect((await store.queryWaste(range)).length).toBe(8);
    } finally {
      await store.close();
    }
  });
});
