import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CONFIG_DEFAULTS, AGENT_CONFIG_OPTIONS } from '../../../agent/config';
import { type AgentBundle, buildAgentBundle } from '../../../agent/packaging/build-agent-bundle';
import { fakeNvmlPath } from '../../setup/fake-nvml';

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
