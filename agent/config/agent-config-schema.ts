import * as v from 'valibot';
import {
  AZ_RULE,
  INSTANCE_ID_RULE,
  INSTANCE_TYPE_RULE,
  REGION_RULE,
} from '../../lambdas/contract/field-rules';
import { DEFAULT_SEND_INTERVAL_S } from '../agent-loop';
import { matchingRule } from '../contract-rule-schema';
import { GIB, MIB, OFF } from './constants';

/** True for an absolute http(s) URL. */
function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/** An absolute http(s) URL. */
const httpUrl = v.pipe(v.string(), v.check(isHttpUrl));
/** An absolute POSIX path. */
const absolutePath = v.pipe(v.string(), v.regex(/^\/\S*$/));
/** An absolute path, or `off` to disable the source. */
const pathOrOff = v.union([v.literal(OFF), absolutePath]);
/** An http(s) URL, or `off` to disable the source. */
const urlOrOff = v.union([v.literal(OFF), httpUrl]);
/** An integer in `min..max`. */
const intIn = (min: number, max: number) => v.pipe(v.number(), v.integer(), v.minValue(min), v.maxValue(max));

/** Levels of the agent's JSON log (pino), most verbose first. */
export const AGENT_LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** Union of {@link AGENT_LOG_LEVELS}. */
export type AgentLogLevel = (typeof AGENT_LOG_LEVELS)[number];

/** Request signing: `sigv4` (API Gateway IAM auth, the instance role) or `none` (a loopback API). */
export const AGENT_AUTH_MODES = ['sigv4', 'none'] as const;
/** Union of {@link AGENT_AUTH_MODES}. */
export type AgentAuthMode = (typeof AGENT_AUTH_MODES)[number];

/** A two-state switch, written `on` or `off` (env and flags also take true/false, 1/0, yes/no). */
export const AGENT_SWITCH_VALUES = ['on', 'off'] as const;
/** Union of {@link AGENT_SWITCH_VALUES}. */
export type AgentSwitch = (typeof AGENT_SWITCH_VALUES)[number];

/**
 * Every option of the host agent, with its range and default: the one schema the config file,
 * the `GPU_SENTINEL_*` environment and the command-line flags are checked against. Strict: an
 * unknown key is an error. Options without a default are absent unless set (`endpoint` is needed
 * to send; `region` and the identity overrides come from IMDS otherwise). The table with units,
 * env vars and flags is {@link AGENT_CONFIG_OPTIONS}. A valibot schema (not zod): the bundled agent
 * loads no zod; the identity overrides use the contract's own patterns (field-rules.ts).
 */
const schema = v.strictObject({
  /** API stage URL; batches go to `<endpoint>/v1/batches`. No default. */
  endpoint: v.optional(httpUrl),
  /** AWS region of the API, for SigV4. @default the instance's region (IMDS) */
  region: v.optional(matchingRule(REGION_RULE)),
  /** Request signing. @default 'sigv4' */
  auth: v.optional(v.picklist(AGENT_AUTH_MODES), 'sigv4'),
  /** NVML poll interval, ms, integer 100..60000. @default 1000 */
  pollIntervalMs: v.optional(intIn(100, 60_000), 1000),
  /** Flush window, s, integer 1..3600. @default 10 */
  flushIntervalS: v.optional(intIn(1, 3600), 10),
  /** Kept windows are sent this often, s, integer 0..3600 (0: after every flush); critical events go at once. @default 60 */
  sendIntervalS: v.optional(intIn(0, 3600), DEFAULT_SEND_INTERVAL_S),
  /** Long horizon window (attribution, slopes), s, integer 60..3600. @default 900 */
  horizonS: v.optional(intIn(60, 3600), 900),
  /** NVML library, a soname or an absolute path. @default 'libnvidia-ml.so.1' */
  nvmlLibraryPath: v.optional(v.pipe(v.string(), v.minLength(1)), 'libnvidia-ml.so.1'),
  /** Kernel log for NVRM Xid lines, absolute path or `off`. @default '/dev/kmsg' */
  kmsgPath: v.optional(pathOrOff, '/dev/kmsg'),
  /** sysfs root of the EFA devices, absolute path or `off`. @default '/sys/class/infiniband' */
  efaRoot: v.optional(pathOrOff, '/sys/class/infiniband'),
  /** dcgm-exporter metrics URL, http(s) or `off`. @default 'http://127.0.0.1:9400/metrics' */
  dcgmExporterUrl: v.optional(urlOrOff, 'http://127.0.0.1:9400/metrics'),
  /** Ask IMDSv2 for identity, tags and spot notices. @default 'on' */
  imds: v.optional(v.picklist(AGENT_SWITCH_VALUES), 'on'),
  /** Identity override: EC2 instance id. @default from IMDS */
  instanceId: v.optional(matchingRule(INSTANCE_ID_RULE)),
  /** Identity override: EC2 instance type. @default from IMDS */
  instanceType: v.optional(matchingRule(INSTANCE_TYPE_RULE)),
  /** Identity override: availability zone. @default from IMDS */
  az: v.optional(matchingRule(AZ_RULE)),
  /**
   * The stack's agent role (output `AgentRoleArn`): `gpu-sentinel doctor` checks the host's
   * credentials are this role's instance session. The agent itself does not read it. @default none
   */
  agentRoleArn: v.optional(
    v.pipe(v.string(), v.regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]{1,512}$/)),
  ),
  /** On-disk spool of undelivered batches, absolute path. @default '/var/lib/gpu-sentinel/spool' */
  spoolDir: v.optional(absolutePath, '/var/lib/gpu-sentinel/spool'),
  /** Spool bound, bytes, integer 1 MiB..64 GiB; past it the oldest batches are dropped and counted. @default 268435456 (256 MiB) */
  spoolMaxBytes: v.optional(intIn(MIB, 64 * GIB), 256 * MIB),
  /** Spool age bound, s, integer 60..2592000 (30 days). @default 259200 (72 h) */
  spoolMaxAgeS: v.optional(intIn(60, 2_592_000), 259_200),
  /** Agent log level. @default 'info' */
  logLevel: v.optional(v.picklist(AGENT_LOG_LEVELS), 'info'),
});

/**
 * {@link schema} with the two uses the code makes of it: `parse` a whole configuration (defaults
 * filled in) and `entries`, one schema per option (checked where each value comes from).
 */
export const AgentConfigSchema = Object.freeze({
  /** The valibot schema, for `v.safeParse` and friends. */
  valibot: schema,
  /** Each option's schema by name (`v.safeParse(AgentConfigSchema.entries.flushIntervalS, 30)`). */
  entries: schema.entries,
  /**
   * Parses a whole configuration object, defaults filled in.
   * @throws {v.ValiError} when a key is unknown or a value is out of its range
   */
  parse: (input: unknown): AgentConfig => v.parse(schema, input),
});

/** The agent's resolved configuration (defaults filled in). */
export type AgentConfig = v.InferOutput<typeof schema>;

/** What a config file, the environment or the flags may set: any subset of the options. */
export type AgentConfigInput = v.InferInput<typeof schema>;

/** The name of one agent option, e.g. `flushIntervalS`. */
export type AgentConfigName = keyof AgentConfig;

/** Every option at its default (options without a default are absent). */
export const AGENT_CONFIG_DEFAULTS: Readonly<AgentConfig> = Object.freeze(v.parse(schema, {}));
