import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_SEA_FILE, type AgentSea, buildAgentSea } from '../../../agent/packaging/build-agent-sea';
import { AGENT_VERSION } from '../../../agent/version';
import { parseBatch } from '../../../lambdas/contract';
import { fakeNvmlPath } from '../../setup/fake-nvml';
import { moduleLoadListPreload, unwantedBuiltins } from './steady-builtins';

/**
 * The single executable agent, built for both architectures (the Node.js binaries and postject
 * come from the npm registry once, cached in dist/.sea-cache); the one of this machine's
 * architecture is run with no Node.js on PATH.
 */
const HOST_ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const OTHER_ARCH = HOST_ARCH === 'x64' ? 'arm64' : 'x64';
/** ELF `e_machine` of each architecture (x86-64: 62, AArch64: 183). */
const ELF_MACHINE = { x64: 62, arm64: 183 } as const;

let dir: string;
/** A PATH with the tools install.sh uses and no `node`. */
let bareBin: string;
const built: Partial<Record<'x64' | 'arm64', AgentSea>> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-sea-'));
  for (const arch of [HOST_ARCH, OTHER_ARCH] as const)
    built[arch] = await buildAgentSea({ arch, outDir: join(dir, `agent-${arch}`), tarball: true });
  bareBin = join(dir, 'bin');
  mkdirSync(bareBin);
  for (const tool of [
    'bash',
    'sed',
    'cp',
    'mkdir',
    'rm',
    'mv',
    'ln',
    'chmod',
    'cat',
    'dirname',
    'uname',
    'mktemp',
    'stat',
    'id',
  ])
    symlinkSync(
      execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(),
      join(bareBin, tool),
    );
}, 600_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sea(arch: 'x64' | 'arm64'): AgentSea {
  const s = built[arch];
  if (s === undefined) throw new Error(`no ${arch} build`);
  return s;
}

/** Runs this machine's executable with only `env` (PATH without node), from a folder outside the repository. */
function runSea(args: readonly string[], env: Record<string, string> = {}) {
  return spawnSync(sea(HOST_ARCH).executable, args, {
    cwd: dir,
    encoding: 'utf8',
    env: { PATH: bareBin, ...env },
  });
}

/** The ELF header's machine field of `file`. */
function elfMachine(file: string): number {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  readSync(fd, header, 0, 20, 0);
  closeSync(fd);
  expect(header.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
  return header.readUInt16LE(18);
}

describe('single executable agent', () => {
  it.each(['x64', 'arm64'] as const)('is a linux-%s executable with the agent injected', (arch) => {
    // Prepare
    const { executable } = sea(arch);

    // Act
    const binary = readFileSync(executable);

    // Assess: the architecture, and the fuse postject flips when it injects the blob
    expect(elfMachine(executable)).toBe(ELF_MACHINE[arch]);
    expect(binary.includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1')).toBe(true);
    // No zod in the injected script (its schema classes name themselves, e.g. "ZodObject"): the
    // two-pass bundle drops the contract's schemas, which a CommonJS bundle kept and built at start
    expect(binary.includes('ZodObject')).toBe(false);
    expect(readFileSync(join(sea(arch).outDir, 'VERSION'), 'utf8')).toBe(`${AGENT_VERSION} linux-${arch}\n`);
    expect(
      existsSync(join(sea(arch).outDir, 'node_modules', '@koromix', `koffi-linux-${arch}`, 'package.json')),
    ).toBe(true);
  });

  it.each(['x64', 'arm64'] as const)(
    'packs one linux-%s tarball with the executable, koffi and install.sh under agent/',
    (arch) => {
      // Prepare
      const tarball = sea(arch).tarball ?? '';

      // Act
      const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');

      // Assess
      expect(tarball.endsWith(`gpu-sentinel-agent-${AGENT_VERSION}-linux-${arch}.tar.gz`)).toBe(true);
      expect(listing).toEqual(
        expect.arrayContaining([
          `agent/${AGENT_SEA_FILE}`,
          'agent/install.sh',
          'agent/gpu-sentinel-agent.service',
          'agent/VERSION',
          'agent/node_modules/koffi/package.json',
          `agent/node_modules/@koromix/koffi-linux-${arch}/package.json`,
        ]),
      );
    },
  );

  it('prints its version with no node on PATH', () => {
    // Prepare
    const noNode = spawnSync('bash', ['-c', 'command -v node'], { env: { PATH: bareBin } });

    // Act
    const result = runSea(['--version']);

    // Assess
    expect(noNode.status).not.toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe(AGENT_VERSION);
  });

  it('runs the agent: loads NVML through the koffi beside it and prints one batch of 8 GPUs', () => {
    // Prepare
    const env = {
      GPU_SENTINEL_CONFIG: join(sea(HOST_ARCH).outDir, 'agent.sample.json'),
      GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
      FAKE_NVML_PRESET: 'p5',
      GPU_SENTINEL_LOG_LEVEL: 'error',
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
    const result = runSea(args, env);

    // Assess
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const batch = parseBatch(
      JSON.parse(result.stdout),
      new Date(Date.parse(JSON.parse(result.stdout).sent_at)),
    );
    expect(new Set(batch.windows.map((w) => w.gpu.index)).size).toBe(8);
    expect(batch.agent.version).toBe(AGENT_VERSION);
  });

  it('signs and sends its batches without loading fs/promises, assert, worker_threads nor zod', async () => {
    // Prepare: a loopback API, environment keys, and a preload (NODE_OPTIONS) that writes the
    // built-ins the process loaded when it exits
    const bodies: number[] = [];
    const server = createServer((req, res) => {
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        bytes += c.length;
      });
      req.on('end', () => {
        bodies.push(bytes);
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":8}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { loaded, preload } = moduleLoadListPreload(dir, 'sea');
    const home = join(dir, 'home-sea');
    mkdirSync(home);

    // Act: run until the API got two batches, then SIGTERM
    const child = spawn(sea(HOST_ARCH).executable, ['agent'], {
      cwd: dir,
      stdio: 'ignore',
      env: {
        PATH: bareBin,
        HOME: home,
        NODE_OPTIONS: `--require ${preload}`,
        AWS_ACCESS_KEY_ID: 'AKIDENVEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'env-secret',
        GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
        FAKE_NVML_PRESET: 'p5',
        GPU_SENTINEL_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
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
      },
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    for (let i = 0; i < 300 && bodies.length < 2 && child.exitCode === null; i++)
      await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGTERM');
    const code = await exited;
    await new Promise((r) => server.close(r));

    // Assess: it sent, exited cleanly, and never loaded the cut built-ins
    expect(code).toBe(0);
    expect(bodies.length).toBeGreaterThanOrEqual(2);
    const modules = readFileSync(loaded, 'utf8');
    expect(modules).toContain('NativeModule http');
    expect(unwantedBuiltins(modules)).toEqual([]);
  });

  it('installs from its bundle with no node anywhere: the unit runs the executable, the endpoint is written', () => {
    // Prepare
    const root = join(dir, 'root');

    // Act
    const result = spawnSync(
      join(sea(HOST_ARCH).outDir, 'install.sh'),
      ['--root', root, '--endpoint', 'https://abc123.execute-api.us-east-1.amazonaws.com/prod?a=1&b="2"'],
      { encoding: 'utf8', env: { PATH: bareBin } },
    );

    // Assess
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const unit = readFileSync(join(root, 'etc/systemd/system/gpu-sentinel-agent.service'), 'utf8').split(
      '\n',
    );
    expect(unit).toContain('ExecStart=/opt/gpu-sentinel/lib/gpu-sentinel-agent agent');
    expect(readFileSync(join(root, 'opt/gpu-sentinel/bin/gpu-sentinel-agent'), 'utf8')).toBe(
      '#!/bin/sh\nexec /opt/gpu-sentinel/lib/gpu-sentinel-agent "$@"\n',
    );
    expect(existsSync(join(root, 'opt/gpu-sentinel/lib/node_modules/koffi/package.json'))).toBe(true);
    const config = JSON.parse(readFileSync(join(root, 'etc/gpu-sentinel/agent.json'), 'utf8'));
    expect(config.endpoint).toBe('https://abc123.execute-api.us-east-1.amazonaws.com/prod?a=1&b="2"');
  });

  it('refuses, on this machine, the bundle of the other architecture', () => {
    // Prepare
    const root = join(dir, 'other-root');

    // Act
    const result = spawnSync(join(sea(OTHER_ARCH).outDir, 'install.sh'), ['--root', root], {
      encoding: 'utf8',
      env: { PATH: bareBin },
    });

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      `Expected a bundle built for linux-${HOST_ARCH} (the target's architecture), got linux-${OTHER_ARCH}`,
    );
    expect(existsSync(root)).toBe(false);
  });
});
