import { AGENT_CONFIG_DEFAULTS, type AgentConfigName } from './agent-config-schema';
import { AGENT_ENV_PREFIX } from './constants';

/** How a string from the environment or a flag becomes a value: as is, a number, or an on/off switch. */
export type AgentConfigValueKind = 'string' | 'integer' | 'switch';

/** One row of the options table: how an agent option is named in each source, its unit and default. */
export interface AgentConfigOption {
  /** Key in the config file and in {@link AgentConfig}, e.g. `flushIntervalS`. */
  readonly name: AgentConfigName;
  /** Environment variable, e.g. `GPU_SENTINEL_FLUSH_INTERVAL_S`. */
  readonly env: string;
  /** Command-line flag of `gpu-sentinel-agent agent`, e.g. `--flush-interval-s`. */
  readonly flag: string;
  /** Unit of the value (`ms`, `s`, `bytes`), or `''` for none. */
  readonly unit: string;
  /** The default, or `undefined` when the option is absent unless set. */
  readonly default: string | number | undefined;
  /** Human wording of the default when there is none or it needs a gloss (`256 MiB`, `from IMDS`). */
  readonly defaultNote?: string;
  /** The accepted values, completing "Expected `name` to be …", e.g. `an integer in 1..3600`. */
  readonly expected: string;
  /** How env and flag strings are parsed. */
  readonly kind: AgentConfigValueKind;
  /** One sentence for the docs and `--help`. */
  readonly description: string;
}

/** The row of one option, env var derived from the name unless given. */
function row(
  name: AgentConfigName,
  fields: Omit<AgentConfigOption, 'name' | 'env' | 'flag' | 'default'> & { env?: string; flag?: string },
): AgentConfigOption {
  const kebab = name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  return {
    name,
    env: fields.env ?? `${AGENT_ENV_PREFIX}${kebab.replace(/-/g, '_').toUpperCase()}`,
    flag: fields.flag ?? `--${kebab}`,
    default: AGENT_CONFIG_DEFAULTS[name],
    ...(fields.defaultNote !== undefined ? { defaultNote: fields.defaultNote } : {}),
    unit: fields.unit,
    expected: fields.expected,
    kind: fields.kind,
    description: fields.description,
  };
}

/**
 * The table of every agent option, in the order of the docs: name (file key), environment
 * variable, flag, unit, default and description. The README's and `--help`'s lists are generated
 * from it; {@link AgentConfigSchema} holds the same options' ranges.
 *
 * Naming: env `GPU_SENTINEL_<NAME_IN_SNAKE_CASE>`, flag `--<name-in-kebab-case>`, except
 * `nvmlLibraryPath` (`GPU_SENTINEL_NVML_LIB`, `--nvml-lib`, the names the CLI already had).
 */
export const AGENT_CONFIG_OPTIONS: readonly AgentConfigOption[] = Object.freeze([
  row('endpoint', {
    unit: '',
    defaultNote: 'none (required to send)',
    expected: 'an http(s) URL',
    kind: 'string',
    description: 'API stage URL; batches go to `<endpoint>/v1/batches`.',
  }),
  row('region', {
    unit: '',
    defaultNote: 'the instance region (IMDS)',
    expected: 'an AWS region like `us-east-1`',
    kind: 'string',
    description: 'AWS region of the API, for SigV4 signing (service `execute-api`).',
  }),
  row('auth', {
    unit: '',
    expected: 'one of `sigv4`, `none`',
    kind: 'string',
    description: 'Request signing: `sigv4` with the instance role, or `none` for a loopback API.',
  }),
  row('pollIntervalMs', {
    unit: 'ms',
    expected: 'an integer in 100..60000',
    kind: 'integer',
    description: 'How often NVML is read.',
  }),
  row('flushIntervalS', {
    unit: 's',
    expected: 'an integer in 1..3600',
    kind: 'integer',
    description:
      'Flush window: samples are aggregated into windows this often, each kept in the spool as it closes.',
  }),
  row('sendIntervalS', {
    unit: 's',
    expected: 'an integer in 0..3600',
    kind: 'integer',
    description:
      'Kept windows are sent this often, merged into as few requests as the API allows (0: after every flush); critical events go at once.',
  }),
  row('horizonS', {
    unit: 's',
    expected: 'an integer in 60..3600',
    kind: 'integer',
    description: 'Long horizon window (attribution, memory growth slope), at least `flushIntervalS`.',
  }),
  row('nvmlLibraryPath', {
    env: 'GPU_SENTINEL_NVML_LIB',
    flag: '--nvml-lib',
    unit: '',
    expected: 'a non-empty soname or path',
    kind: 'string',
    description: 'NVML library to load, a soname found by the dynamic loader or an absolute path.',
  }),
  row('kmsgPath', {
    unit: '',
    expected: 'an absolute path or `off`',
    kind: 'string',
    description: 'Kernel log read for NVRM Xid lines (needs CAP_SYSLOG); `off` disables the source.',
  }),
  row('efaRoot', {
    unit: '',
    expected: 'an absolute path or `off`',
    kind: 'string',
    description: 'sysfs root of the EFA devices (hw_counters); `off` disables the source.',
  }),
  row('dcgmExporterUrl', {
    unit: '',
    expected: 'an http(s) URL or `off`',
    kind: 'string',
    description: 'dcgm-exporter metrics scraped for profiling counters where GPM is absent; `off` disables.',
  }),
  row('imds', {
    unit: '',
    expected: 'one of `on`, `off` (or true/false, 1/0, yes/no)',
    kind: 'switch',
    description:
      'Ask IMDSv2 for identity, tags and spot notices; `off` needs `instanceId`, `instanceType`, `region`.',
  }),
  row('instanceId', {
    unit: '',
    defaultNote: 'from IMDS',
    expected: 'an EC2 instance id like `i-0abc12345def67890`',
    kind: 'string',
    description: 'Identity override: EC2 instance id.',
  }),
  row('instanceType', {
    unit: '',
    defaultNote: 'from IMDS',
    expected: 'an EC2 instance type like `p5.48xlarge`',
    kind: 'string',
    description: 'Identity override: EC2 instance type.',
  }),
  row('az', {
    unit: '',
    defaultNote: 'from IMDS',
    expected: 'an availability zone like `us-east-1a`',
    kind: 'string',
    description: 'Identity override: availability zone.',
  }),
  row('agentRoleArn', {
    unit: '',
    defaultNote: 'none (the doctor then does not compare roles)',
    expected: 'an IAM role ARN like `arn:aws:iam::123456789012:role/GpuNodeRole`',
    kind: 'string',
    description:
      "The stack's agent role (output `AgentRoleArn`); `gpu-sentinel doctor` checks the host's credentials are its instance session. The agent does not read it.",
  }),
  row('spoolDir', {
    unit: '',
    expected: 'an absolute path',
    kind: 'string',
    description: 'On-disk spool of undelivered batches (the systemd unit’s StateDirectory).',
  }),
  row('spoolMaxBytes', {
    unit: 'bytes',
    defaultNote: '268435456 (256 MiB)',
    expected: 'an integer in 1048576..68719476736 (1 MiB..64 GiB)',
    kind: 'integer',
    description: 'Spool size bound; past it the oldest batches are dropped and counted (`data_dropped`).',
  }),
  row('spoolMaxAgeS', {
    unit: 's',
    defaultNote: '259200 (72 h)',
    expected: 'an integer in 60..2592000 (30 days)',
    kind: 'integer',
    description: 'Spooled batches older than this are dropped and counted.',
  }),
  row('logLevel', {
    unit: '',
    expected: 'one of `debug`, `info`, `warn`, `error`',
    kind: 'string',
    description: 'Level of the JSON log on stderr (the journal under systemd).',
  }),
]);
