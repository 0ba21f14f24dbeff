import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type AgentConfig, AgentConfigSchema } from '../../../agent/config';
import {
  type DoctorCheckId,
  type DoctorCheckResult,
  type DoctorOptions,
  doctorExitCode,
  parseDoctorChecks,
  renderDoctorReport,
  runDoctor,
} from '../../../agent/doctor';
import { DEFAULT_RULE_CONTEXT } from '../../../lambdas/domain';
import { createIngestHandler } from '../../../lambdas/handlers/ingest-handler';
import { instanceRoleIdentity } from '../../../lambdas/local/api-gateway-event';
import { type LocalApi, startLocalApi } from '../../../lambdas/local/local-api-server';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const NOW = new Date('2026-11-21T10:00:00.000Z');
const ACCOUNT = '123456789012';
const ROLE = 'GpuNodeRole';
const INSTANCE = 'i-0a5e00000000000a1';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/${ROLE}`;
const SESSION_ARN = `arn:aws:sts::${ACCOUNT}:assumed-role/${ROLE}/${INSTANCE}`;
const CREDENTIALS = {
  provider: { accessKeyId: 'ASIAEXAMPLEEXAMPLE00', secretAccessKey: 'secret', sessionToken: 'token' },
  source: 'instance-metadata' as const,
};
/** The metadata a p5 instance's IMDSv2 answers (the paths `ImdsClient.host()` reads). */
const METADATA: Record<string, string> = {
  'instance-id': INSTANCE,
  'instance-type': 'p5.48xlarge',
  'placement/region': 'us-east-1',
  'placement/availability-zone': 'us-east-1a',
  'ami-id': 'ami-0123456789abcdef0',
  'instance-life-cycle': 'on-demand',
};
/**
 * API Gateway's own refusal by a resource policy's Deny statement. The body's wording: API Gateway
 * developer guide, https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-resource-policies-create-attach.html
 * (troubleshooting: `{"Message":"User: anonymous is not authorized to perform: execute-api:Invoke
 * on resource: …"}`) and AWS knowledge center,
 * https://aws.amazon.com/premiumsupport/knowledge-center/api-gateway-403-error-lambda-authorizer/
 * (the same message ending `with an explicit deny` for an explicit Deny); the header is the
 * `x-amzn-ErrorType` of API Gateway's ACCESS_DENIED gateway response. Caller and resource here are
 * this test's.
 */
const RESOURCE_POLICY_DENY = JSON.stringify({
  Message: `User: ${SESSION_ARN} is not authorized to perform: execute-api:Invoke on resource: arn:aws:execute-api:us-east-1:********9012:abc123defg/prod/POST/v1/batches with an explicit deny`,
});

let dir: string;
let imds: Server;
let imdsUrl: string;
const servers: Server[] = [];
let api: LocalApi | undefined;

async function listen(handler: RequestListener): Promise<{ server: Server; url: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-doctor-'));
  writeFileSync(
    join(dir, 'kmsg'),
    '6,1234,5678,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08\n',
  );
  writeFileSync(join(dir, 'dmesg_restrict'), '1\n');
  for (const device of ['rdmap16s27', 'rdmap32s27']) {
    mkdirSync(join(dir, 'efa', device, 'ports', '1', 'hw_counters'), { recursive: true });
    writeFileSync(join(dir, 'efa', device, 'ports', '1', 'hw_counters', 'rx_drops'), '0\n');
  }
  mkdirSync(join(dir, 'empty-efa'));
  ({ server: imds, url: imdsUrl } = await listen((req, res) => {
    if (req.method === 'PUT' && req.url === '/latest/api/token') return void res.end('token-1');
    const path = req.url?.replace('/latest/meta-data/', '') ?? '';
    const value = req.headers['x-aws-ec2-metadata-token'] === 'token-1' ? METADATA[path] : undefined;
    res.writeHead(value === undefined ? 404 : 200).end(value ?? 'Not Found');
  }));
});

afterEach(async () => {
  await api?.close();
  api = undefined;
  for (const s of servers.splice(0)) await new Promise((resolve) => s.close(resolve));
});

afterAll(async () => {
  await new Promise((resolve) => imds.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A host's agent config pointing at the fakes: the fake NVML, the temp kernel log and EFA tree. */
function config(overrides: Partial<AgentConfig> = {}): AgentConfig {
  return AgentConfigSchema.parse({
    nvmlLibraryPath: fakeNvmlPath(),
    kmsgPath: join(dir, 'kmsg'),
    efaRoot: join(dir, 'efa'),
    dcgmExporterUrl: 'off',
    agentRoleArn: ROLE_ARN,
    ...overrides,
  });
}

function options(cfg: AgentConfig, overrides: Partial<DoctorOptions> = {}): DoctorOptions {
  return {
    config: cfg,
    version: 'test',
    clock: () => NOW,
    uid: 1000,
    imdsBaseUrl: imdsUrl,
    dmesgRestrictPath: join(dir, 'dmesg_restrict'),
    credentials: CREDENTIALS,
    whoAmI: async () => SESSION_ARN,
    timeoutMs: 2000,
    ...overrides,
  };
}

function byId(results: readonly DoctorCheckResult[]): Record<DoctorCheckId, DoctorCheckResult> {
  return Object.fromEntries(results.map((r) => [r.id, r])) as Record<DoctorCheckId, DoctorCheckResult>;
}

/** The local API with the deployed identity checks, its caller the session IAM would report. */
async function localApi(session: string): Promise<string> {
  const refuse = (): never => {
    throw new Error('a probe touched a port');
  };
  const port = { publish: refuse, record: refuse, replace: refuse, quarantine: refuse } as never;
  const handler = createIngestHandler({
    store: port,
    state: port,
    alerts: port,
    decisions: port,
    remediator: port,
    log: { info() {}, warn() {}, error() {} },
    remediationMode: 'replace',
    dryRun: false,
    rules: DEFAULT_RULE_CONTEXT,
    clock: () => NOW,
    callerCheck: 'instance-session',
    agentRoleNames: [ROLE],
  });
  api = await startLocalApi({ handler, identity: instanceRoleIdentity(ACCOUNT, ROLE, session) });
  return api.url;
}

describe('gpu-sentinel doctor', () => {
  it('passes every check on a healthy p5 host whose probe the API admits, and exits 0', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const endpoint = await localApi(INSTANCE);
    // Act
    const results = await runDoctor(options(config({ endpoint })));
    // Assess
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['nvml', 'pass'],
      ['profiling', 'pass'],
      ['kmsg', 'pass'],
      ['efa', 'pass'],
      ['imds', 'pass'],
      ['credentials', 'pass'],
      ['endpoint', 'pass'],
      ['probe', 'pass'],
    ]);
    const r = byId(results);
    expect(r.nvml.detail).toContain('driver 535.161.08');
    expect(r.nvml.detail).toContain('8 GPUs');
    expect(r.profiling.detail).toContain('GPM');
    expect(r.efa.detail).toContain('2 devices');
    expect(r.imds.detail).toContain(INSTANCE);
    expect(r.credentials.detail).toContain(SESSION_ARN);
    expect(r.probe.detail).toContain('verified iam_authorization, instance_session, contract');
    expect(doctorExitCode(results)).toBe(0);
    const text = renderDoctorReport(results);
    expect(text).toMatch(/^✓ NVML loads: driver 535\.161\.08/);
    expect(text).toContain('8 checks, none failed');
  });

  it('fails NVML with the fix when the driver is not loaded, and exits 1', async () => {
    // Prepare
    setFakeNvmlEnv({ INIT_FAIL: true });
    // Act
    const results = await runDoctor(
      options(
        config({ imds: 'off', instanceId: INSTANCE, instanceType: 'p5.48xlarge', region: 'us-east-1' }),
      ),
    );
    // Assess
    const r = byId(results);
    expect(r.nvml.status).toBe('fail');
    expect(r.nvml.fix).toContain('kernel driver is not loaded');
    expect(r.profiling.status).toBe('fail');
    expect(doctorExitCode(results)).toBe(1);
    expect(renderDoctorReport(results)).toMatch(/^✗ NVML loads: .*\n {4}fix: /);
  });

  it.each([
    [
      'an exporter with profiling ratios',
      'DCGM_FI_PROF_SM_ACTIVE{gpu="0",modelName="NVIDIA A100-SXM4-40GB"} 0.25\n',
      'pass',
      'ratios for 1 GPUs',
    ],
    [
      'an exporter without profiling fields',
      'DCGM_FI_DEV_GPU_UTIL{gpu="0",modelName="NVIDIA A100-SXM4-40GB"} 25\n',
      'fail',
      'no DCGM_FI_PROF_* field',
    ],
  ])('on an A100 host (no GPM) reads profiling from %s', async (_name, scrape, status, detail) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p4d' });
    const exporter = await listen((_req, res) => res.end(scrape));
    servers.push(exporter.server);
    // Act
    const results = await runDoctor(options(config({ dcgmExporterUrl: `${exporter.url}/metrics` })));
    // Assess
    expect(byId(results).profiling).toMatchObject({ status, detail: expect.stringContaining(detail) });
  });

  it('fails profiling on an A100 host whose dcgm-exporter does not answer, naming the install script', async () => {
    // Prepare: a port nothing listens on
    setFakeNvmlEnv({ PRESET: 'p4d' });
    const gone = await listen(() => undefined);
    await new Promise((resolve) => gone.server.close(resolve));
    // Act
    const results = await runDoctor(options(config({ dcgmExporterUrl: `${gone.url}/metrics` })));
    // Assess
    expect(byId(results).profiling).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('no NVML GPM'),
      fix: expect.stringContaining('install-dcgm-exporter.sh'),
    });
  });

  it.each([
    ['a missing kernel log', { kmsgPath: '/nonexistent/kmsg' }, 'kmsg', 'fail'],
    ['a p5 without EFA devices', { efaRoot: '/nonexistent/efa' }, 'efa', 'fail'],
  ])('fails on %s, with the fix', async (_name, overrides, id, status) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    // Act
    const results = await runDoctor(options(config(overrides as Partial<AgentConfig>)));
    // Assess
    expect(byId(results)[id as DoctorCheckId].status).toBe(status);
    expect(byId(results)[id as DoctorCheckId].fix).toBeDefined();
  });

  it('skips EFA on an instance type without it', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    // Act
    const results = await runDoctor(
      options(
        config({
          imds: 'off',
          instanceId: INSTANCE,
          instanceType: 'g6.xlarge',
          region: 'us-east-1',
          efaRoot: join(dir, 'empty-efa'),
        }),
      ),
    );
    // Assess
    expect(byId(results).efa).toMatchObject({
      status: 'skip',
      detail: expect.stringContaining('g6.xlarge has no EFA'),
    });
  });

  it('fails IMDS when it does not answer, and skips the probe for want of an identity', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const endpoint = await localApi(INSTANCE);
    const gone = await listen(() => undefined);
    await new Promise((resolve) => gone.server.close(resolve));
    // Act
    const results = await runDoctor(
      options(config({ endpoint, region: 'us-east-1' }), { imdsBaseUrl: gone.url }),
    );
    // Assess
    const r = byId(results);
    expect(r.imds).toMatchObject({ status: 'fail', fix: expect.stringContaining('IMDSv2') });
    expect(r.probe).toMatchObject({ status: 'skip', detail: 'no instance identity to send' });
  });

  it.each([
    [
      'another role',
      `arn:aws:sts::${ACCOUNT}:assumed-role/Admin/${INSTANCE}`,
      "role Admin is not the stack's agent role GpuNodeRole",
    ],
    [
      'a session not named after the instance',
      `arn:aws:sts::${ACCOUNT}:assumed-role/${ROLE}/alice`,
      'session alice is not this instance',
    ],
    ['an IAM user', `arn:aws:iam::${ACCOUNT}:user/alice`, 'not an assumed-role session'],
  ])('fails credentials that are %s', async (_name, arn, detail) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    // Act
    const results = await runDoctor(options(config(), { whoAmI: async () => arn }));
    // Assess
    expect(byId(results).credentials).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining(detail),
      fix: expect.stringContaining('AgentInstanceProfileArn'),
    });
  });

  it('fails the endpoint when nothing answers, and skips the probe', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const gone = await listen(() => undefined);
    await new Promise((resolve) => gone.server.close(resolve));
    // Act
    const results = await runDoctor(options(config({ endpoint: `${gone.url}/prod` })));
    // Assess
    const r = byId(results);
    expect(r.endpoint).toMatchObject({ status: 'fail', detail: expect.stringContaining('no answer') });
    expect(r.probe).toMatchObject({ status: 'skip', detail: 'the endpoint does not answer' });
    expect(doctorExitCode(results)).toBe(1);
  });

  it("tells API Gateway's resource-policy 403 apart, naming the ec2:SourceInstanceARN caveat and the switch", async () => {
    // Prepare: an endpoint answering as API Gateway does when a Deny statement matches
    setFakeNvmlEnv({ PRESET: 'p5' });
    const gateway = await listen((req, res) => {
      req.resume();
      res
        .writeHead(403, {
          'content-type': 'application/json',
          'x-amzn-ErrorType': 'AccessDeniedException',
          'x-amzn-RequestId': '6c4b9f0e-0000-4000-8000-000000000000',
        })
        .end(RESOURCE_POLICY_DENY);
    });
    servers.push(gateway.server);
    // Act
    const results = await runDoctor(options(config({ endpoint: `${gateway.url}/prod` })));
    // Assess
    const probe = byId(results).probe;
    expect(probe.status).toBe('fail');
    expect(probe.detail).toContain("refused by API Gateway's resource policy (explicit deny)");
    expect(probe.fix).toContain('ec2:SourceInstanceARN');
    expect(probe.fix).toContain('-c requireInstanceCredentials=false');
  });

  it('tells a refusal by the handler apart, with its reason', async () => {
    // Prepare: the API sees another instance's session (credentials of the wrong host)
    setFakeNvmlEnv({ PRESET: 'p5' });
    const endpoint = await localApi('i-0bbbbbbbbbbbbbbb2');
    // Act
    const results = await runDoctor(options(config({ endpoint })));
    // Assess
    const probe = byId(results).probe;
    expect(probe.status).toBe('fail');
    expect(probe.detail).toContain('HTTP 403 refused by the ingest handler');
    expect(probe.detail).toContain('may not send for i-0a5e00000000000a1');
    expect(probe.fix).toContain('(host.instance_id)');
    expect(probe.fix).not.toContain('requireInstanceCredentials');
  });

  it('says when the API predates the probe (a 202 with no probe answer)', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const old = await listen((req, res) => {
      req.resume();
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":0,"rejected":0}');
    });
    servers.push(old.server);
    // Act
    const results = await runDoctor(options(config({ endpoint: `${old.url}/prod` })));
    // Assess
    expect(byId(results).probe).toMatchObject({
      status: 'fail',
      detail: expect.stringContaining('predates the probe'),
    });
  });

  it('reports only the checks asked for, as an AMI build without an endpoint asks, and exits 0', async () => {
    // Prepare: no endpoint, no IMDS: the endpoint check would fail if it were reported
    setFakeNvmlEnv({ PRESET: 'p5' });
    const only = parseDoctorChecks('nvml, profiling,kmsg,efa');
    // Act
    const results = await runDoctor(
      options(
        config({ imds: 'off', instanceId: INSTANCE, instanceType: 'p5.48xlarge', region: 'us-east-1' }),
        {
          only,
        },
      ),
    );
    // Assess
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['nvml', 'pass'],
      ['profiling', 'pass'],
      ['kmsg', 'pass'],
      ['efa', 'pass'],
    ]);
    expect(doctorExitCode(results)).toBe(0);
  });

  it.each(['', 'nvml,gpu', ' , '])('refuses --checks %j, naming the flag and the ids it takes', (value) => {
    // Act / Assess
    expect(() => parseDoctorChecks(value)).toThrow(
      /Expected `--checks` to be a comma-separated list of nvml, profiling/,
    );
  });
});
