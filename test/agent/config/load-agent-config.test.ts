import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AGENT_CONFIG_DEFAULTS,
  AgentConfigError,
  type AgentConfigName,
  loadAgentConfig,
} from '../../../agent/config';

const dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a config file under the temp dir and returns its path. */
function configFile(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

/** A default file that does not exist, so the host's /etc never leaks into a test. */
const NO_DEFAULT_FILE = join(dir, 'absent-default.json');

/** An identity complete enough to run without IMDS. */
const IDENTITY_ENV = {
  GPU_SENTINEL_INSTANCE_ID: 'i-0abc12345def67890',
  GPU_SENTINEL_INSTANCE_TYPE: 'p5.48xlarge',
  GPU_SENTINEL_REGION: 'us-east-1',
};

/** Runs the loader expecting it to throw, and returns the error. */
function loadError(options: Parameters<typeof loadAgentConfig>[0]): AgentConfigError {
  try {
    loadAgentConfig({ defaultFile: NO_DEFAULT_FILE, ...options });
  } catch (err) {
    if (err instanceof AgentConfigError) return err;
    throw err;
  }
  throw new Error('expected loadAgentConfig to throw');
}

describe('loadAgentConfig precedence', () => {
  const file = configFile('precedence.json', { flushIntervalS: 20, horizonS: 600, logLevel: 'debug' });

  it.each([
    { label: 'defaults alone', file: undefined, env: {}, flags: {}, flush: 10, from: 'default' },
    { label: 'the file over defaults', file, env: {}, flags: {}, flush: 20, from: 'file' },
    {
      label: 'env over the file',
      file,
      env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '30' },
      flags: {},
      flush: 30,
      from: 'env',
    },
    {
      label: 'flags over env and the file',
      file,
      env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '30' },
      flags: { flushIntervalS: '40' },
      flush: 40,
      from: 'flag',
    },
    {
      label: 'a typed flag value as it is',
      file: undefined,
      env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '30' },
      flags: { flushIntervalS: 50 },
      flush: 50,
      from: 'flag',
    },
    {
      label: 'an empty env variable as unset',
      file,
      env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '' },
      flags: {},
      flush: 20,
      from: 'file',
    },
  ])('takes $label', ({ file: path, env, flags, flush, from }) => {
    // Prepare
    const options = { env, flags, defaultFile: NO_DEFAULT_FILE, ...(path ? { file: path } : {}) };

    // Act
    const loaded = loadAgentConfig(options);

    // Assess
    expect(loaded.config.flushIntervalS).toBe(flush);
    expect(loaded.sources.flushIntervalS?.kind).toBe(from);
  });

  it('keeps options each source does not set from the lower sources', () => {
    // Prepare
    const env = { GPU_SENTINEL_AUTH: 'none' };

    // Act
    const { config, sources } = loadAgentConfig({ file, env, flags: { pollIntervalMs: '500' } });

    // Assess
    expect(config).toEqual({
      ...AGENT_CONFIG_DEFAULTS,
      flushIntervalS: 20,
      horizonS: 600,
      logLevel: 'debug',
      auth: 'none',
      pollIntervalMs: 500,
    });
    expect(sources.logLevel).toEqual({ kind: 'file', path: file });
    expect(sources.auth).toEqual({ kind: 'env', variable: 'GPU_SENTINEL_AUTH' });
    expect(sources.pollIntervalMs).toEqual({ kind: 'flag', flag: '--poll-interval-ms' });
    expect(sources.spoolDir).toEqual({ kind: 'default' });
  });

  it('reads the default file when it exists, and tolerates its absence', () => {
    // Prepare
    const present = configFile('default-present.json', { spoolMaxAgeS: 3600 });

    // Act
    const withFile = loadAgentConfig({ env: {}, defaultFile: present });
    const without = loadAgentConfig({ env: {}, defaultFile: NO_DEFAULT_FILE });

    // Assess
    expect(withFile.config.spoolMaxAgeS).toBe(3600);
    expect(withFile.file).toBe(present);
    expect(without.config).toEqual(AGENT_CONFIG_DEFAULTS);
    expect(without.file).toBeUndefined();
  });

  it('reads the file named by GPU_SENTINEL_CONFIG', () => {
    // Prepare
    const named = configFile('from-env.json', { region: 'eu-west-1' });

    // Act
    const { config, file } = loadAgentConfig({
      env: { GPU_SENTINEL_CONFIG: named },
      defaultFile: NO_DEFAULT_FILE,
    });

    // Assess
    expect(config.region).toBe('eu-west-1');
    expect(file).toBe(named);
  });

  it('takes null in the file as not set', () => {
    // Prepare
    const path = configFile('nulls.json', { endpoint: null, flushIntervalS: null });

    // Act
    const { config } = loadAgentConfig({ file: path, env: {} });

    // Assess
    expect(config.endpoint).toBeUndefined();
    expect(config.flushIntervalS).toBe(10);
  });
});

describe('loadAgentConfig env parsing', () => {
  it.each([
    { variable: 'GPU_SENTINEL_POLL_INTERVAL_MS', raw: '250', name: 'pollIntervalMs', value: 250 },
    { variable: 'GPU_SENTINEL_POLL_INTERVAL_MS', raw: ' 2000 ', name: 'pollIntervalMs', value: 2000 },
    { variable: 'GPU_SENTINEL_SPOOL_MAX_BYTES', raw: '1048576', name: 'spoolMaxBytes', value: 1048576 },
    { variable: 'GPU_SENTINEL_SPOOL_MAX_BYTES', raw: '1e9', name: 'spoolMaxBytes', value: 1e9 },
    { variable: 'GPU_SENTINEL_HORIZON_S', raw: '+120', name: 'horizonS', value: 120 },
    { variable: 'GPU_SENTINEL_IMDS', raw: 'on', name: 'imds', value: 'on' },
    { variable: 'GPU_SENTINEL_IMDS', raw: 'OFF', name: 'imds', value: 'off' },
    { variable: 'GPU_SENTINEL_IMDS', raw: 'true', name: 'imds', value: 'on' },
    { variable: 'GPU_SENTINEL_IMDS', raw: 'false', name: 'imds', value: 'off' },
    { variable: 'GPU_SENTINEL_IMDS', raw: '1', name: 'imds', value: 'on' },
    { variable: 'GPU_SENTINEL_IMDS', raw: '0', name: 'imds', value: 'off' },
    { variable: 'GPU_SENTINEL_IMDS', raw: 'yes', name: 'imds', value: 'on' },
    { variable: 'GPU_SENTINEL_IMDS', raw: 'no', name: 'imds', value: 'off' },
    {
      variable: 'GPU_SENTINEL_NVML_LIB',
      raw: '/opt/nvidia/libnvidia-ml.so.1',
      name: 'nvmlLibraryPath',
      value: '/opt/nvidia/libnvidia-ml.so.1',
    },
    { variable: 'GPU_SENTINEL_KMSG_PATH', raw: 'off', name: 'kmsgPath', value: 'off' },
    {
      variable: 'GPU_SENTINEL_DCGM_EXPORTER_URL',
      raw: 'http://10.0.0.1:9400/metrics',
      name: 'dcgmExporterUrl',
      value: 'http://10.0.0.1:9400/metrics',
    },
    { variable: 'GPU_SENTINEL_LOG_LEVEL', raw: 'warn', name: 'logLevel', value: 'warn' },
  ] as const)('parses $variable=$raw as $value', ({ variable, raw, name, value }) => {
    // Prepare: a full identity, so `imds` off is valid
    const env = { ...IDENTITY_ENV, [variable]: raw };

    // Act
    const { config } = loadAgentConfig({ env, defaultFile: NO_DEFAULT_FILE });

    // Assess
    expect(config[name as AgentConfigName]).toBe(value);
  });

  it('ignores unknown GPU_SENTINEL_ variables', () => {
    // Prepare
    const env = { GPU_SENTINEL_SOMETHING_ELSE: 'x', GPU_SENTINEL_FLUSH_INTERVAL: '-1' };

    // Act
    const { config } = loadAgentConfig({ env, defaultFile: NO_DEFAULT_FILE });

    // Assess
    expect(config).toEqual(AGENT_CONFIG_DEFAULTS);
  });

  it('takes booleans for imds in the file', () => {
    // Prepare
    const path = configFile('imds-bool.json', {
      imds: false,
      instanceId: 'i-0abc12345def67890',
      instanceType: 'p5.48xlarge',
      region: 'us-east-1',
    });

    // Act
    const { config } = loadAgentConfig({ file: path, env: {} });

    // Assess
    expect(config.imds).toBe('off');
  });
});

describe('loadAgentConfig validation errors', () => {
  it.each([
    {
      label: 'a negative flush interval from a flag',
      options: { env: {}, flags: { flushIntervalS: '-5' } },
      message:
        'flag --flush-interval-s: Expected `flushIntervalS` to be an integer in 1..3600, got `-5` (number)',
    },
    {
      label: 'a non-numeric poll interval from env',
      options: { env: { GPU_SENTINEL_POLL_INTERVAL_MS: 'fast' } },
      message:
        'env GPU_SENTINEL_POLL_INTERVAL_MS: Expected `pollIntervalMs` to be an integer in 100..60000, got `fast` (string)',
    },
    {
      label: 'a poll interval under 100 ms',
      options: { env: { GPU_SENTINEL_POLL_INTERVAL_MS: '99' } },
      message:
        'env GPU_SENTINEL_POLL_INTERVAL_MS: Expected `pollIntervalMs` to be an integer in 100..60000, got `99` (number)',
    },
    {
      label: 'a fractional flush interval',
      options: { env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '1.5' } },
      message: 'Expected `flushIntervalS` to be an integer in 1..3600, got `1.5` (number)',
    },
    {
      label: 'a horizon over an hour',
      options: { env: {}, flags: { horizonS: 7200 } },
      message: 'flag --horizon-s: Expected `horizonS` to be an integer in 60..3600, got `7200` (number)',
    },
    {
      label: 'an unknown auth mode',
      options: { env: { GPU_SENTINEL_AUTH: 'iam' } },
      message: 'env GPU_SENTINEL_AUTH: Expected `auth` to be one of `sigv4`, `none`, got `iam` (string)',
    },
    {
      label: 'an endpoint that is not a URL',
      options: { env: {}, flags: { endpoint: 'api.example.com' } },
      message: 'flag --endpoint: Expected `endpoint` to be an http(s) URL, got `api.example.com` (string)',
    },
    {
      label: 'a bad region',
      options: { env: { GPU_SENTINEL_REGION: 'US-EAST-1' } },
      message: 'Expected `region` to be an AWS region like `us-east-1`, got `US-EAST-1` (string)',
    },
    {
      label: 'a bad instance id',
      options: { env: { GPU_SENTINEL_INSTANCE_ID: 'i-xyz' } },
      message:
        'Expected `instanceId` to be an EC2 instance id like `i-0abc12345def67890`, got `i-xyz` (string)',
    },
    {
      label: 'a bad instance type',
      options: { env: { GPU_SENTINEL_INSTANCE_TYPE: 'p5' } },
      message: 'Expected `instanceType` to be an EC2 instance type like `p5.48xlarge`, got `p5` (string)',
    },
    {
      label: 'a bad availability zone',
      options: { env: { GPU_SENTINEL_AZ: 'us-east-1' } },
      message: 'Expected `az` to be an availability zone like `us-east-1a`, got `us-east-1` (string)',
    },
    {
      label: 'an empty NVML library',
      options: { env: {}, flags: { nvmlLibraryPath: '' } },
      message:
        'flag --nvml-lib: Expected `nvmlLibraryPath` to be a non-empty soname or path, got `` (string)',
    },
    {
      label: 'a relative kmsg path',
      options: { env: { GPU_SENTINEL_KMSG_PATH: 'dev/kmsg' } },
      message: 'Expected `kmsgPath` to be an absolute path or `off`, got `dev/kmsg` (string)',
    },
    {
      label: 'a relative EFA root',
      options: { env: { GPU_SENTINEL_EFA_ROOT: 'sys' } },
      message: 'Expected `efaRoot` to be an absolute path or `off`, got `sys` (string)',
    },
    {
      label: 'a dcgm-exporter URL that is not http',
      options: { env: { GPU_SENTINEL_DCGM_EXPORTER_URL: 'ftp://x/metrics' } },
      message: 'Expected `dcgmExporterUrl` to be an http(s) URL or `off`, got `ftp://x/metrics` (string)',
    },
    {
      label: 'an imds word that is no switch',
      options: { env: { GPU_SENTINEL_IMDS: 'maybe' } },
      message:
        'env GPU_SENTINEL_IMDS: Expected `imds` to be one of `on`, `off` (or true/false, 1/0, yes/no), got `maybe` (string)',
    },
    {
      label: 'a relative spool dir',
      options: { env: { GPU_SENTINEL_SPOOL_DIR: 'spool' } },
      message: 'Expected `spoolDir` to be an absolute path, got `spool` (string)',
    },
    {
      label: 'a spool bound under 1 MiB',
      options: { env: { GPU_SENTINEL_SPOOL_MAX_BYTES: '1000' } },
      message:
        'Expected `spoolMaxBytes` to be an integer in 1048576..68719476736 (1 MiB..64 GiB), got `1000` (number)',
    },
    {
      label: 'a spool age under a minute',
      options: { env: { GPU_SENTINEL_SPOOL_MAX_AGE_S: '59' } },
      message: 'Expected `spoolMaxAgeS` to be an integer in 60..2592000 (30 days), got `59` (number)',
    },
    {
      label: 'an unknown log level',
      options: { env: { GPU_SENTINEL_LOG_LEVEL: 'trace' } },
      message: 'Expected `logLevel` to be one of `debug`, `info`, `warn`, `error`, got `trace` (string)',
    },
    {
      label: 'a poll interval longer than the flush window',
      options: { env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '1' }, flags: { pollIntervalMs: 1500 } },
      message:
        'flag --poll-interval-ms: Expected `pollIntervalMs` to be <= `flushIntervalS` × 1000 = 1000 (flushIntervalS from env GPU_SENTINEL_FLUSH_INTERVAL_S), got `1500` (number)',
    },
    {
      label: 'a horizon shorter than the flush window',
      options: { env: { GPU_SENTINEL_FLUSH_INTERVAL_S: '120', GPU_SENTINEL_HORIZON_S: '60' } },
      message:
        'env GPU_SENTINEL_HORIZON_S: Expected `horizonS` to be >= `flushIntervalS` = 120 (flushIntervalS from env GPU_SENTINEL_FLUSH_INTERVAL_S), got `60` (number)',
    },
    {
      label: 'imds off without an identity',
      options: { env: { GPU_SENTINEL_IMDS: 'off', GPU_SENTINEL_INSTANCE_ID: 'i-0abc12345def67890' } },
      message:
        'env GPU_SENTINEL_IMDS: Expected `instanceType` to be set when `imds` is `off` (the identity cannot come from IMDS), got nothing; set GPU_SENTINEL_INSTANCE_TYPE or --instance-type',
    },
  ])('throws on $label', ({ options, message }) => {
    // Prepare / Act
    const err = loadError(options);

    // Assess
    expect(err.message).toContain(message);
    expect(err.name).toBe('AgentConfigError');
  });

  it('names the option and the file for a bad value in the file', () => {
    // Prepare
    const path = configFile('bad-value.json', { flushIntervalS: '10' });

    // Act
    const err = loadError({ file: path, env: {} });

    // Assess
    expect(err.message).toBe(
      `file ${path}: Expected \`flushIntervalS\` to be an integer in 1..3600, got \`10\` (string)`,
    );
    expect(err.option).toBe('flushIntervalS');
    expect(err.source).toEqual({ kind: 'file', path });
  });

  it('throws naming an unknown key in the file', () => {
    // Prepare
    const path = configFile('unknown-key.json', { flushIntervalMs: 10000 });

    // Act
    const err = loadError({ file: path, env: {} });

    // Assess
    expect(err.message).toContain(
      `file ${path}: Expected only agent options, got unknown key \`flushIntervalMs\``,
    );
    expect(err.option).toBe('flushIntervalMs');
  });

  it.each([
    { label: 'not JSON', content: '{ "flushIntervalS": 10, }', message: 'Expected JSON, got a parse error' },
    {
      label: 'an array',
      content: '[]',
      message: 'Expected a JSON object of agent options, got `[]` (array)',
    },
    { label: 'null', content: 'null', message: 'Expected a JSON object of agent options, got `null` (null)' },
  ])('throws when the file is $label', ({ label, content, message }) => {
    // Prepare
    const path = configFile(`bad-${label.replace(/\W/g, '-')}.json`, content);

    // Act
    const err = loadError({ file: path, env: {} });

    // Assess
    expect(err.message).toContain(`file ${path}: ${message}`);
  });

  it.each([
    { label: 'given as file', options: (path: string) => ({ file: path, env: {} }) },
    {
      label: 'named by GPU_SENTINEL_CONFIG',
      options: (path: string) => ({ env: { GPU_SENTINEL_CONFIG: path } }),
    },
  ])('throws when a file $label is missing', ({ options }) => {
    // Prepare
    const path = join(dir, 'missing.json');

    // Act
    const err = loadError(options(path));

    // Assess
    expect(err.message).toContain(`file ${path}: Expected a readable agent config file (JSON), got ENOENT`);
  });

  it.each([
    { endpoint: 'http://api.example.com/prod', auth: 'sigv4', refused: true },
    { endpoint: 'http://10.0.0.5:8080', auth: 'sigv4', refused: true },
    { endpoint: 'http://10.0.0.5:8080', auth: 'none', refused: false },
    { endpoint: 'http://127.0.0.1:7070', auth: 'sigv4', refused: false },
    { endpoint: 'https://abc.execute-api.us-east-1.amazonaws.com/prod', auth: 'sigv4', refused: false },
  ])(
    'refuses SigV4 over plain http to a non-loopback host: $endpoint with $auth → $refused',
    ({ endpoint, auth, refused }) => {
      // Prepare
      const options = {
        defaultFile: NO_DEFAULT_FILE,
        env: { GPU_SENTINEL_ENDPOINT: endpoint, GPU_SENTINEL_AUTH: auth },
      };

      // Act
      const load = () => loadAgentConfig(options);

      // Assess
      if (refused) expect(load).toThrow(/Expected `endpoint` to be an https:\/\/ URL when `auth` is `sigv4`/);
      else expect(load().config.endpoint).toBe(endpoint);
    },
  );
});
