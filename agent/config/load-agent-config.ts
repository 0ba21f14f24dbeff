import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { isLoopbackHost } from '../send/loopback-host';
import { AGENT_CONFIG_OPTIONS, type AgentConfigOption } from './agent-config-options';
import {
  AGENT_CONFIG_DEFAULTS,
  type AgentConfig,
  type AgentConfigName,
  AgentConfigSchema,
} from './agent-config-schema';
import type { AgentConfigSource } from './agent-config-source';
import { AGENT_CONFIG_FILE_ENV, DEFAULT_AGENT_CONFIG_FILE } from './constants';
import { AgentConfigError, describeSource } from './errors';

/** Options of {@link loadAgentConfig}. */
export interface LoadAgentConfigOptions {
  /**
   * Config file to read (`--config`); it must exist. When absent, `GPU_SENTINEL_CONFIG` names a file
   * that must exist, else {@link DEFAULT_AGENT_CONFIG_FILE} is read if present.
   */
  readonly file?: string;
  /** The environment; `GPU_SENTINEL_*` variables are read, empty ones count as unset. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Flag values by option name (`flushIntervalS`, not the flag spelling); strings are parsed like
   * env values, other values are taken as they are; `undefined` counts as unset.
   */
  readonly flags?: Readonly<Partial<Record<AgentConfigName, unknown>>>;
  /** The file read when no file is named. @default '/etc/gpu-sentinel/agent.json' */
  readonly defaultFile?: string;
}

/** The resolved configuration and where each option came from. */
export interface LoadedAgentConfig {
  /** Every option, defaults filled in. */
  readonly config: AgentConfig;
  /** The source of each option that is set (defaults say `default`). */
  readonly sources: Readonly<Partial<Record<AgentConfigName, AgentConfigSource>>>;
  /** The config file read, or `undefined` when none was (the default file is absent). */
  readonly file: string | undefined;
}

const OPTIONS_BY_NAME = new Map<string, AgentConfigOption>(AGENT_CONFIG_OPTIONS.map((o) => [o.name, o]));
const SWITCH_WORDS: Readonly<Record<string, 'on' | 'off'>> = {
  on: 'on',
  off: 'off',
  true: 'on',
  false: 'off',
  '1': 'on',
  '0': 'off',
  yes: 'on',
  no: 'off',
};

/**
 * Resolves the agent's configuration with precedence flags > env (`GPU_SENTINEL_*`) > config file
 * (JSON) > defaults. Each value is checked where it comes from, so an error names its source and
 * option; then cross-option rules apply (`pollIntervalMs` ≤ `flushIntervalS` × 1000,
 * `horizonS` ≥ `flushIntervalS`, `imds` `off` needs `instanceId`, `instanceType` and `region`).
 * Unknown `GPU_SENTINEL_*` variables are ignored (other tools share the prefix).
 *
 * @param options - the file to read, the environment, the flag values
 * @returns the configuration, the source of each option and the file read
 * @throws {AgentConfigError} when a named file is missing or unreadable, a file is not a JSON
 *   object or has an unknown key, a value is out of its range, or a cross-option rule fails
 * @example
 * const { config } = loadAgentConfig({ env: process.env, flags: { flushIntervalS: '30' } });
 */
export function loadAgentConfig(options: LoadAgentConfigOptions): LoadedAgentConfig {
  const values: Partial<Record<AgentConfigName, unknown>> = {};
  const sources: Partial<Record<AgentConfigName, AgentConfigSource>> = {};
  const set = (name: AgentConfigName, value: unknown, source: AgentConfigSource): void => {
    values[name] = checkValue(name, value, source);
    sources[name] = source;
  };

  const file = chooseFile(options);
  const source: AgentConfigSource = { kind: 'file', path: file.path };
  const content = readConfigFile(file.path, file.required, source);
  if (content !== undefined) {
    for (const [key, value] of Object.entries(content)) {
      if (!OPTIONS_BY_NAME.has(key))
        throw new AgentConfigError(
          source,
          key,
          value,
          `Expected only agent options, got unknown key \`${key}\`; see agent.sample.json for the ${AGENT_CONFIG_OPTIONS.length} options`,
        );
      // null means "not set here", so the sample can list options without a default.
      if (value !== null) set(key as AgentConfigName, value, source);
    }
  }
  for (const option of AGENT_CONFIG_OPTIONS) {
    const raw = options.env[option.env];
    if (raw === undefined || raw === '') continue;
    set(option.name, parseString(option, raw), { kind: 'env', variable: option.env });
  }
  for (const option of AGENT_CONFIG_OPTIONS) {
    const raw = options.flags?.[option.name];
    if (raw === undefined) continue;
    set(option.name, typeof raw === 'string' ? parseString(option, raw) : raw, {
      kind: 'flag',
      flag: option.flag,
    });
  }

  const config = AgentConfigSchema.parse(values);
  checkAcrossOptions(config, sources);
  return {
    config,
    sources: { ...defaultSources(), ...sources },
    file: content !== undefined ? file.path : undefined,
  };

  function defaultSources(): Partial<Record<AgentConfigName, AgentConfigSource>> {
    const out: Partial<Record<AgentConfigName, AgentConfigSource>> = {};
    for (const name of Object.keys(AGENT_CONFIG_DEFAULTS) as AgentConfigName[])
      out[name] = { kind: 'default' };
    return out;
  }
}

/** Which file to read and whether it must exist. */
function chooseFile(options: LoadAgentConfigOptions): { path: string; required: boolean } {
  if (options.file !== undefined && options.file !== '') return { path: options.file, required: true };
  const fromEnv = options.env[AGENT_CONFIG_FILE_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return { path: fromEnv, required: true };
  return { path: options.defaultFile ?? DEFAULT_AGENT_CONFIG_FILE, required: false };
}

/**
 * Reads a config file: a JSON object. Returns `undefined` when an optional file is absent.
 * @throws {AgentConfigError} when a required file is absent, or any file is unreadable or not a JSON object
 */
function readConfigFile(
  path: string,
  required: boolean,
  source: AgentConfigSource,
): Record<string, unknown> | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return undefined;
    throw new AgentConfigError(
      source,
      '(file)',
      path,
      `Expected a readable agent config file (JSON), got ${code ?? String(cause)}; create it (see agent.sample.json) or name another with --config`,
      { cause },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new AgentConfigError(
      source,
      '(file)',
      path,
      `Expected JSON, got a parse error: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new AgentConfigError(
      source,
      '(file)',
      parsed,
      `Expected a JSON object of agent options, got \`${render(parsed)}\` (${typeOf(parsed)})`,
    );
  return parsed as Record<string, unknown>;
}

/** Parses an env or flag string by the option's kind; unparseable strings stay strings (and fail the check). */
function parseString(option: AgentConfigOption, raw: string): unknown {
  const text = raw.trim();
  switch (option.kind) {
    case 'integer':
      return /^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?$/i.test(text) ? Number(text) : raw;
    case 'switch':
      return SWITCH_WORDS[text.toLowerCase()] ?? raw;
    case 'string':
      return text;
  }
}

/**
 * Checks one value against its option's schema.
 * @throws {AgentConfigError} in the house form, naming source and option
 */
function checkValue(name: AgentConfigName, value: unknown, source: AgentConfigSource): unknown {
  const normalized =
    OPTIONS_BY_NAME.get(name)?.kind === 'switch' && typeof value === 'boolean'
      ? value
        ? 'on'
        : 'off'
      : value;
  const result = v.safeParse(AgentConfigSchema.entries[name], normalized);
  if (result.success) return result.output;
  const expected = OPTIONS_BY_NAME.get(name)?.expected ?? 'valid';
  throw new AgentConfigError(
    source,
    name,
    value,
    `Expected \`${name}\` to be ${expected}, got \`${render(value)}\` (${typeOf(value)})`,
    { cause: new v.ValiError(result.issues) },
  );
}

/**
 * Rules between options, checked on the merged result.
 * @throws {AgentConfigError} naming the option and the source of its value
 */
function checkAcrossOptions(
  config: AgentConfig,
  sources: Partial<Record<AgentConfigName, AgentConfigSource>>,
): void {
  const from = (name: AgentConfigName): AgentConfigSource => sources[name] ?? { kind: 'default' };
  if (config.pollIntervalMs > config.flushIntervalS * 1000)
    throw new AgentConfigError(
      from('pollIntervalMs'),
      'pollIntervalMs',
      config.pollIntervalMs,
      `Expected \`pollIntervalMs\` to be <= \`flushIntervalS\` × 1000 = ${config.flushIntervalS * 1000} (flushIntervalS from ${describeSource(from('flushIntervalS'))}), got \`${config.pollIntervalMs}\` (number)`,
    );
  if (config.horizonS < config.flushIntervalS)
    throw new AgentConfigError(
      from('horizonS'),
      'horizonS',
      config.horizonS,
      `Expected \`horizonS\` to be >= \`flushIntervalS\` = ${config.flushIntervalS} (flushIntervalS from ${describeSource(from('flushIntervalS'))}), got \`${config.horizonS}\` (number)`,
    );
  if (config.auth === 'sigv4' && config.endpoint !== undefined) {
    const url = new URL(config.endpoint);
    if (url.protocol === 'http:' && !isLoopbackHost(url.hostname))
      throw new AgentConfigError(
        from('endpoint'),
        'endpoint',
        config.endpoint,
        `Expected \`endpoint\` to be an https:// URL when \`auth\` is \`sigv4\` (plain http only to a loopback host: signed requests must not cross the network in the clear), got \`${config.endpoint}\``,
      );
  }
  if (config.imds === 'off')
    for (const name of ['instanceId', 'instanceType', 'region'] as const)
      if (config[name] === undefined)
        throw new AgentConfigError(
          from('imds'),
          name,
          undefined,
          `Expected \`${name}\` to be set when \`imds\` is \`off\` (the identity cannot come from IMDS), got nothing; set ${OPTIONS_BY_NAME.get(name)?.env} or ${OPTIONS_BY_NAME.get(name)?.flag}`,
        );
}

/** A value as the message shows it, cut at 80 characters. */
function render(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** `typeof`, with `null` and `array` told apart. */
function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
