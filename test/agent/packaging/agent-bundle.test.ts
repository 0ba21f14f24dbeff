import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CONFIG_DEFAULTS, AGENT_CONFIG_OPTIONS } from '../../../agent/config';
import {
  AGENT_BUNDLE_FILE,
  type AgentBundle,
  buildAgentBundle,
} from '../../../agent/packaging/build-agent-bundle';
import { fakeNvmlPath } from '../../setup/fake-nvml';
import { expectedAuthorization } from '../../setup/sigv4-check';
import { moduleLoadListPreload, unwantedBuiltins } from './steady-builtins';

let dir: string;
let bundle: AgentBundle;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-bundle-'));
  bundle = await buildAgentBundle({ outDir: join(dir, 'agent') });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * Runs the bundle with a bare environment from a folder outside the repository, as on a host that
 * has only Node.js: nothing can resolve from the repository's node_modules.
 */
function runBundle(args: readonly string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [bundle.entry, ...args], {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin', ...env },
  });
}

describe('agent bundle', () => {
  it.each([
    'gpu-sentinel-agent.mjs',
    'gpu-sentinel-agent.mjs.map',
    'node_modules/koffi/package.json',
    'node_modules/koffi/index.js',
    `node_modules/@koromix/koffi-linux-${process.arch === 'arm64' ? 'arm64' : 'x64'}/package.json`,
    'install.sh',
    'install-common.sh',
    'gpu-sentinel-agent.service',
    'agent.sample.json',
    'install-dcgm-exporter.sh',
    'dcgm-exporter.service',
    'dcgm-counters.csv',
    'VERSION',
  ])('holds %s', (path) => {
    // Prepare / Act
    const present = existsSync(join(bundle.outDir, path));

    // Assess
    expect(present).toBe(true);
  });

  it("carries no zod in the entry nor any chunk: the agent checks with valibot and the contract's zod-free rules", () => {
    // Prepare
    const bundled = Object.values(bundle.metafile.outputs).flatMap((output) =>
      Object.entries(output.inputs).filter(([, input]) => input.bytesInOutput > 0),
    );

    // Act
    const paths = bundled.map(([path]) => path);

    // Assess
    expect(paths.length).toBeGreaterThan(50);
    expect(paths.filter((path) => path.includes('node_modules/zod/'))).toEqual([]);
    expect(paths.filter((path) => /lambdas\/contract\/(schema|parse-batch)\.ts$/.test(path))).toEqual([]);
    expect(paths).toContain('lambdas/contract/field-rules.ts');
  });

  it('carries no playback code (simulation, replay): those serve local mode and scenarios, not hosts', () => {
    // Prepare / Act
    const inputs = Object.keys(bundle.metafile.inputs);

    // Assess
    expect(inputs).toContain('agent/compose-agent.ts');
    expect(inputs.filter((path) => path.startsWith('agent/playback/'))).toEqual([]);
  });

  it('writes the entry and every chunk in ASCII, so V8 keeps each source as a one-byte string', () => {
    // Prepare: one non-ASCII character (a ≤ in a comment) makes V8 store a whole script two bytes
    // a character; the unminified entry of 1.27 MB cost 2.54 MB of heap that way
    const files = [AGENT_BUNDLE_FILE, ...bundle.chunks];

    // Act
    const nonAscii = files.filter((file) =>
      readFileSync(join(bundle.outDir, file)).some((byte) => byte > 0x7f),
    );

    // Assess
    expect(bundle.chunks.length).toBeGreaterThan(0);
    expect(nonAscii).toEqual([]);
  });

  it('bundles with koffi left external and no DuckDB nor CDK', () => {
    // Prepare / Act
    const code = [bundle.entry, ...bundle.chunks.map((c) => join(bundle.outDir, c))]
      .map((f) => readFileSync(f, 'utf8'))
      .join('\n');

    // Assess
    expect(code).toMatch(/from ?["']koffi["']/);
    expect(code).not.toContain('@duckdb/');
    expect(code).not.toContain('aws-cdk-lib');
    expect(bundle.bundleBytes).toBeGreaterThan(0);
  });

  it('ships every chunk the entry imports, statically or lazily', () => {
    // Prepare
    const code = readFileSync(bundle.entry, 'utf8');

    // Act
    const imported = [...code.matchAll(/(?:from ?|import\()["']\.\/(chunks\/[^"']+\.mjs)["']/g)].map(
      (m) => m[1],
    );

    // Assess
    expect(imported.length).toBeGreaterThan(0);
    for (const chunk of imported) expect(bundle.chunks).toContain(chunk);
    for (const chunk of bundle.chunks) expect(existsSync(join(bundle.outDir, chunk))).toBe(true);
  });

  it("keeps the SDK's STS and SSO clients out of the entry, in chunks read only when a profile or web identity needs them", () => {
    // Prepare
    const entryCode = readFileSync(bundle.entry, 'utf8');

    // Act
    const chunkWithSts = bundle.chunks.find((c) =>
      readFileSync(join(bundle.outDir, c), 'utf8').includes('AssumeRoleWithWebIdentity'),
    );

    // Assess
    expect(entryCode).not.toContain('AssumeRoleWithWebIdentity');
    expect(chunkWithSts).toBeDefined();
  });

  it('is minified with a linked source map next to it, not inlined', () => {
    // Prepare / Act
    const code = readFileSync(bundle.entry, 'utf8');
    const map = JSON.parse(readFileSync(`${bundle.entry}.map`, 'utf8')) as {
      version: number;
      sources: string[];
    };

    // Assess
    expect(code.trimEnd().endsWith('//# sourceMappingURL=gpu-sentinel-agent.mjs.map')).toBe(true);
    expect(code).not.toContain('sourceMappingURL=data:');
    expect(map.version).toBe(3);
    expect(map.sources.some((s) => s.endsWith('agent/packaging/agent-main.ts'))).toBe(true);
    // Unminified, the entry alone was 2.2 MiB.
    expect(bundle.bundleBytes).toBeLessThan(1024 * 1024);
  });

  it('answers `agent --help` with exit 0 and lists every option', () => {
    // Prepare / Act
    const result = runBundle(['agent', '--help']);

    // Assess
    expect(result.status).toBe(0);
    for (const o of AGENT_CONFIG_OPTIONS) {
      expect(result.stdout).toContain(`${o.flag} <value>`);
      expect(result.stdout.replace(/\s+/g, ' ')).toContain(o.env);
    }
    expect(result.stdout).toContain('--config <file>');
  });

  it('answers --version', () => {
    // Prepare / Act
    const result = runBundle(['--version']);

    // Assess
    expect(result.status).toBe(0);
    expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('prints the resolved config with env over defaults', () => {
    // Prepare
    const env = {
      GPU_SENTINEL_CONFIG: join(bundle.outDir, 'agent.sample.json'),
      GPU_SENTINEL_FLUSH_INTERVAL_S: '30',
    };

    // Act
    const result = runBundle(['config'], env);

    // Assess
    expect(result.status).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed.config).toEqual({ ...AGENT_CONFIG_DEFAULTS, flushIntervalS: 30 });
    expect(printed.sources.flushIntervalS).toBe('env GPU_SENTINEL_FLUSH_INTERVAL_S');
  });

  it('exits 2 naming the flag on a bad option', () => {
    // Prepare / Act
    const result = runBundle(['agent', '--flush-interval-s', '0']);

    // Assess
    expect(result.status).toBe(2);
    expect(result.stderr).toContain(
      'flag --flush-interval-s: Expected `flushIntervalS` to be an integer in 1..3600, got `0` (number)',
    );
  });

  it('loads no worker_threads, child_process nor undici while it runs (pino and commander get stubs for what the agent never calls; built-ins and koffi load node:http and node:util through require)', () => {
    // Prepare: a preload that writes the Node built-ins loaded by the time the process exits
    const { loaded, preload } = moduleLoadListPreload(dir, 'once');
    const env = {
      PATH: '/usr/bin:/bin',
      GPU_SENTINEL_CONFIG: join(bundle.outDir, 'agent.sample.json'),
      GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
      FAKE_NVML_PRESET: 'p5',
      GPU_SENTINEL_LOG_LEVEL: 'info',
    };
    const args = [
      'agent',
      '--once',
      '--print',
      '--poll-interval-ms',
      '100',
      '--instance-id',
      'i-0abc12345def67890',
    ];
    args.push('--instance-type', 'p5.48xlarge', '--region', 'us-east-1');

    // Act
    const result = spawnSync(process.execPath, ['-r', preload, bundle.entry, ...args], {
      cwd: dir,
      encoding: 'utf8',
      env,
    });

    // Assess: it ran, logged through pino, and never loaded the two built-ins
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout).windows.length).toBeGreaterThan(0);
    const modules = readFileSync(loaded, 'utf8').split('\n');
    expect(modules).toContain('NativeModule http');
    expect(modules.filter((m) => /\b(worker_threads|child_process)$|undici/.test(m))).toEqual([]);
    expect(
      Object.keys(bundle.metafile.inputs).filter((path) => path.includes('node_modules/thread-stream/')),
    ).toEqual([]);
  });

  it('loads NVML through its own koffi and prints one batch of 8 GPUs', () => {
    // Prepare
    const env = {
      GPU_SENTINEL_CONFIG: join(bundle.outDir, 'agent.sample.json'),
      GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
      FAKE_NVML_PRESET: 'p5',
      GPU_SENTINEL_LOG_LEVEL: 'error',
    };
    const identity = [
      '--instance-id',
      'i-0abc12345def67890',
      '--instance-type',
      'p5.48xlarge',
      '--region',
      'us-east-1',
    ];

    // Act
    const result = runBundle(['agent', '--once', '--print', '--poll-interval-ms', '100', ...identity], env);

    // Assess
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const batch = JSON.parse(result.stdout);
    expect(batch.host.instance_id).toBe('i-0abc12345def67890');
    expect(batch.windows.filter((w: { kind: string }) => w.kind === 'flush')).toHaveLength(8);
  });
});

/** A request one of the loopback servers received. */
interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** A loopback HTTP server answering with `answer` and keeping every request. */
async function loopback(
  answer: (req: Seen) => { status: number; body: string },
): Promise<{ server: Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      seen.push(r);
      const { status, body } = answer(r);
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const ROLE_CREDENTIALS = {
  accessKeyId: 'ASIAROLEEXAMPLE',
  secretAccessKey: 'role-secret',
  sessionToken: 'role-token',
};

/** IMDSv2 as EC2 answers it: a token on PUT, then the role name and its credentials only with that token. */
function imdsAnswer(req: Seen): { status: number; body: string } {
  if (req.method === 'PUT' && req.url === '/latest/api/token')
    return req.headers['x-aws-ec2-metadata-token-ttl-seconds']
      ? { status: 200, body: 'imds-token' }
      : { status: 400, body: '' };
  if (req.headers['x-aws-ec2-metadata-token'] !== 'imds-token') return { status: 401, body: '' };
  if (req.url === '/latest/meta-data/iam/security-credentials/')
    return { status: 200, body: 'gpu-sentinel-agent' };
  if (req.url === '/latest/meta-data/iam/security-credentials/gpu-sentinel-agent')
    return {
      status: 200,
      body: JSON.stringify({
        Code: 'Success',
        Type: 'AWS-HMAC',
        AccessKeyId: ROLE_CREDENTIALS.accessKeyId,
        SecretAccessKey: ROLE_CREDENTIALS.secretAccessKey,
        Token: ROLE_CREDENTIALS.sessionToken,
        Expiration: new Date(Date.now() + 6 * 3_600_000).toISOString(),
        LastUpdated: new Date().toISOString(),
      }),
    };
  return { status: 404, body: '' };
}

/** Runs the bundled agent (auth sigv4, loopback API) until the API saw a batch, then SIGTERMs it; resolves its exit code. */
async function runSigningAgent(
  api: { url: string; seen: Seen[] },
  env: Record<string, string>,
  home: string,
  nodeArgs: readonly string[] = [],
): Promise<number | null> {
  mkdirSync(home, { recursive: true });
  const child = spawn(process.execPath, [...nodeArgs, bundle.entry, 'agent'], {
    cwd: dir,
    stdio: 'ignore',
    env: {
      PATH: '/usr/bin:/bin',
      HOME: home,
      GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
      FAKE_NVML_PRESET: 'p5',
      GPU_SENTINEL_ENDPOINT: api.url,
      GPU_SENTINEL_AUTH: 'sigv4',
      GPU_SENTINEL_IMDS: 'off',
      GPU_SENTINEL_INSTANCE_ID: 'i-0abc12345def67890',
      GPU_SENTINEL_INSTANCE_TYPE: 'p5.48xlarge',
      GPU_SENTINEL_REGION: 'us-east-1',
      GPU_SENTINEL_FLUSH_INTERVAL_S: '1',
      GPU_SENTINEL_SEND_INTERVAL_S: '0',
      GPU_SENTINEL_KMSG_PATH: 'off',
      GPU_SENTINEL_DCGM_EXPORTER_URL: 'off',
      GPU_SENTINEL_SPOOL_DIR: join(home, 'spool'),
      GPU_SENTINEL_LOG_LEVEL: 'error',
      ...env,
    },
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  for (let i = 0; i < 300 && api.seen.length === 0 && child.exitCode === null; i++)
    await new Promise((r) => setTimeout(r, 50));
  child.kill('SIGTERM');
  return exited;
}

describe('agent bundle credentials', () => {
  let api: Awaited<ReturnType<typeof loopback>>;
  let imds: Awaited<ReturnType<typeof loopback>>;
  beforeAll(async () => {
    api = await loopback(() => ({ status: 202, body: '{"accepted":8}' }));
    imds = await loopback(imdsAnswer);
  });
  afterAll(async () => {
    await Promise.all([api, imds].map(({ server }) => new Promise((r) => server.close(r))));
  });

  it('signs its batches with the instance role from IMDSv2, loaded from its chunk without undici nor worker_threads', async () => {
    // Prepare
    api.seen.length = 0;
    imds.seen.length = 0;
    const { loaded, preload } = moduleLoadListPreload(dir, 'imds');

    // Act
    const code = await runSigningAgent(
      api,
      { AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url },
      join(dir, 'home-imds'),
      ['-r', preload],
    );

    // Assess
    expect(code).toBe(0);
    const batch = api.seen[0] as Seen;
    expect(batch).toBeDefined();
    expect(imds.seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      'PUT /latest/api/token',
      'GET /latest/meta-data/iam/security-credentials/',
      'GET /latest/meta-data/iam/security-credentials/gpu-sentinel-agent',
    ]);
    expect(batch.headers['x-amz-security-token']).toBe(ROLE_CREDENTIALS.sessionToken);
    expect(String(batch.headers.authorization)).toContain(`Credential=${ROLE_CREDENTIALS.accessKeyId}/`);
    expect(await expectedAuthorization(batch, api.url, ROLE_CREDENTIALS)).toBe(batch.headers.authorization);
    // The IMDS credential provider's chunk imports node:http: the bundle loads it through require
    const modules = readFileSync(loaded, 'utf8').split('\n');
    expect(modules).toContain('NativeModule http');
    expect(modules.filter((m) => /\bworker_threads$|undici/.test(m))).toEqual([]);
    expect(unwantedBuiltins(modules.join('\n'))).toEqual([]);
  });

  it('signs with env keys when AWS_ACCESS_KEY_ID is set, without asking IMDS nor loading fs/promises nor assert', async () => {
    // Prepare
    api.seen.length = 0;
    imds.seen.length = 0;
    const keys = { accessKeyId: 'AKIDENVEXAMPLE', secretAccessKey: 'env-secret' };
    const { loaded, preload } = moduleLoadListPreload(dir, 'env-keys');

    // Act
    const code = await runSigningAgent(
      api,
      {
        AWS_ACCESS_KEY_ID: keys.accessKeyId,
        AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
        AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url,
      },
      join(dir, 'home-env'),
      ['-r', preload],
    );

    // Assess: signed; the built-ins the steady state must not load (a send and its retry budget
    // included) are not in the list
    expect(code).toBe(0);
    const batch = api.seen[0] as Seen;
    expect(batch).toBeDefined();
    expect(imds.seen).toEqual([]);
    expect(await expectedAuthorization(batch, api.url, keys)).toBe(batch.headers.authorization);
    expect(unwantedBuiltins(readFileSync(loaded, 'utf8'))).toEqual([]);
  });

  it("signs with a profile's keys from ~/.aws/credentials, read through fs/promises loaded on first use", async () => {
    // Prepare: the SDK's shared-config loader imports fs/promises, which the bundle loads only
    // when one of its functions is called
    api.seen.length = 0;
    imds.seen.length = 0;
    const keys = { accessKeyId: 'AKIDPROFILEEXAMPLE', secretAccessKey: 'profile-secret' };
    const home = join(dir, 'home-profile');
    mkdirSync(join(home, '.aws'), { recursive: true });
    writeFileSync(
      join(home, '.aws', 'credentials'),
      `[default]\naws_access_key_id = ${keys.accessKeyId}\naws_secret_access_key = ${keys.secretAccessKey}\n`,
    );
    const { loaded, preload } = moduleLoadListPreload(dir, 'profile');

    // Act
    const code = await runSigningAgent(api, { AWS_EC2_METADATA_SERVICE_ENDPOINT: imds.url }, home, [
      '-r',
      preload,
    ]);

    // Assess: signed with the profile's keys, and fs/promises was loaded for it
    expect(code).toBe(0);
    const batch = api.seen[0] as Seen;
    expect(batch).toBeDefined();
    expect(imds.seen).toEqual([]);
    expect(await expectedAuthorization(batch, api.url, keys)).toBe(batch.headers.authorization);
    expect(readFileSync(loaded, 'utf8').split('\n')).toContain('NativeModule fs/promises');
  });
});
