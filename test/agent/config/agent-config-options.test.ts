import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AGENT_CONFIG_DEFAULTS,
  AGENT_CONFIG_OPTIONS,
  AgentConfigSchema,
  agentConfigSample,
  loadAgentConfig,
  renderAgentConfigMarkdown,
} from '../../../agent/config';

const SAMPLE = join(import.meta.dirname, '..', '..', '..', 'agent', 'packaging', 'agent.sample.json');

describe('agent config options table', () => {
  it('lists every option of the schema once, in no other order than the schema', () => {
    // Prepare
    const schemaKeys = Object.keys(AgentConfigSchema.entries);

    // Act
    const tableKeys = AGENT_CONFIG_OPTIONS.map((o) => o.name);

    // Assess
    expect(tableKeys).toEqual(schemaKeys);
  });

  it('gives every option a distinct GPU_SENTINEL_ env var and a distinct flag', () => {
    // Prepare / Act
    const envs = new Set(AGENT_CONFIG_OPTIONS.map((o) => o.env));
    const flags = new Set(AGENT_CONFIG_OPTIONS.map((o) => o.flag));

    // Assess
    expect(envs.size).toBe(AGENT_CONFIG_OPTIONS.length);
    expect(flags.size).toBe(AGENT_CONFIG_OPTIONS.length);
    for (const o of AGENT_CONFIG_OPTIONS) {
      expect(o.env).toMatch(/^GPU_SENTINEL_[A-Z0-9_]+$/);
      expect(o.flag).toMatch(/^--[a-z0-9-]+$/);
    }
  });

  it.each([
    {
      name: 'pollIntervalMs',
      env: 'GPU_SENTINEL_POLL_INTERVAL_MS',
      flag: '--poll-interval-ms',
      unit: 'ms',
      def: 1000,
    },
    {
      name: 'flushIntervalS',
      env: 'GPU_SENTINEL_FLUSH_INTERVAL_S',
      flag: '--flush-interval-s',
      unit: 's',
      def: 10,
    },
    { name: 'horizonS', env: 'GPU_SENTINEL_HORIZON_S', flag: '--horizon-s', unit: 's', def: 900 },
    {
      name: 'nvmlLibraryPath',
      env: 'GPU_SENTINEL_NVML_LIB',
      flag: '--nvml-lib',
      unit: '',
      def: 'libnvidia-ml.so.1',
    },
    {
      name: 'spoolMaxBytes',
      env: 'GPU_SENTINEL_SPOOL_MAX_BYTES',
      flag: '--spool-max-bytes',
      unit: 'bytes',
      def: 268435456,
    },
    {
      name: 'spoolMaxAgeS',
      env: 'GPU_SENTINEL_SPOOL_MAX_AGE_S',
      flag: '--spool-max-age-s',
      unit: 's',
      def: 259200,
    },
    { name: 'endpoint', env: 'GPU_SENTINEL_ENDPOINT', flag: '--endpoint', unit: '', def: undefined },
  ])('names $name $env and $flag, default $def', ({ name, env, flag, unit, def }) => {
    // Prepare / Act
    const option = AGENT_CONFIG_OPTIONS.find((o) => o.name === name);

    // Assess
    expect(option).toMatchObject({ env, flag, unit, default: def });
  });

  it('renders one Markdown row per option', () => {
    // Prepare / Act
    const lines = renderAgentConfigMarkdown().trimEnd().split('\n');

    // Assess
    expect(lines).toHaveLength(AGENT_CONFIG_OPTIONS.length + 2);
    expect(lines).toContain(
      '| `flushIntervalS` | `GPU_SENTINEL_FLUSH_INTERVAL_S` | `--flush-interval-s` | s | `10` | Flush window: samples are aggregated into windows this often, each kept in the spool as it closes. |',
    );
  });
});

describe('agent.sample.json', () => {
  it('is the generated sample, so it lists every option', () => {
    // Prepare / Act
    const text = readFileSync(SAMPLE, 'utf8');

    // Assess
    expect(text).toBe(`${JSON.stringify(agentConfigSample(), null, 2)}\n`);
    expect(Object.keys(JSON.parse(text))).toEqual(AGENT_CONFIG_OPTIONS.map((o) => o.name));
  });

  it('parses and equals the defaults', () => {
    // Prepare / Act
    const { config, file } = loadAgentConfig({ file: SAMPLE, env: {} });

    // Assess
    expect(file).toBe(SAMPLE);
    expect(config).toEqual(AGENT_CONFIG_DEFAULTS);
  });
});
