import { z } from 'zod';
import { HostSchema } from '../../lambdas/contract';
import { DEFAULT_SEND_INTERVAL_S } from '../agent-loop';
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
const httpUrl = z.string().refine(isHttpUrl);
/** An absolute POSIX path. */
const absolutePath = z.string().regex(/^\/\S*$/);
/** An absolute path, or `off` to disable the source. */
const pathOrOff = z.union([z.literal(OFF), absolutePath]);
/** An http(s) URL, or `off` to disable the source. */
const urlOrOff = z.union([z.literal(OFF), httpUrl]);

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
 * env vars and flags is {@link AGENT_CONFIG_OPTIONS}.
 */
export const AgentConfigSchema = z.strictObject({
  /** API stage URL; batches go to `<endpoint>/v1/batches`. No default. */
  endpoint: httpUrl.optional(),
  /** AWS region of the API, for SigV4. @default the instance's region (IMDS) */
  region: HostSchema.shape.region.optional(),
  /** Request signing. @default 'sigv4' */
  auth: z.enum(AGENT_AUTH_MODES).default('sigv4'),
  /** NVML poll interval, ms, integer 100..60000. @default 1000 */
  pollIntervalMs: z.int().min(100).max(60_000).default(1000),
  /** Flush window, s, integer 1..3600. @default 10 */
  flushIntervalS: z.int().min(1).max(3600).default(10),
  /** Kept windows are sent this often, s, integer 0..3600 (0: after every flush); critical events go at once. @default 60 */
  sendIntervalS: z.int().min(0).max(3600).default(DEFAULT_SEND_INTERVAL_S),
  /** Long horizon window (attribution, slopes), s, integer 60..3600. @default 900 */
  horizonS: z.int().min(60).max(3600).default(900),
  /** NVML library, a soname or an absolute path. @default 'libnvidia-ml.so.1' */
  nvmlLibraryPath: z.string().min(1).default('libnvidia-ml.so.1'),
  /** Kernel log for NVRM Xid lines, absolute path or `off`. @default '/dev/kmsg' */
  kmsgPath: pathOrOff.default('/dev/kmsg'),
  /** sysfs root of the EFA devices, absolute path or `off`. @default '/sys/class/infiniband' */
  efaRoot: pathOrOff.default('/sys/class/infiniband'),
  /** dcgm-exporter metrics URL, http(s) or `off`. @default 'http://127.0.0.1:9400/metrics' */
  dcgmExporterUrl: urlOrOff.default('http://127.0.0.1:9400/metrics'),
  /** Ask IMDSv2 for identity, tags and spot notices. @default 'on' */
  imds: z.enum(AGENT_SWITCH_VALUES).default('on'),
  /** Identity override: EC2 instance id. @default from IMDS */
  instanceId: HostSchema.shape.instance_id.optional(),
  /** Identity override: EC2 instance type. @default from IMDS */
  instanceType: HostSchema.shape.instance_type.optional(),
  /** Identity override: availability zone. @default from IMDS */
  az: HostSchema.shape.az,
  /** On-disk spool of undelivered batches, absolute path. @default '/var/lib/gpu-sentinel/spool' */
  spoolDir: absolutePath.default('/var/lib/gpu-sentinel/spool'),
  /** Spool bound, bytes, integer 1 MiB..64 GiB; past it the oldest batches are dropped and counted. @default 268435456 (256 MiB) */
  spoolMaxBytes: z
    .int()
    .min(MIB)
    .max(64 * GIB)
    .default(256 * MIB),
  /** Spool age bound, s, integer 60..2592000 (30 days). @default 259200 (72 h) */
  spoolMaxAgeS: z.int().min(60).max(2_592_000).default(259_200),
  /** Agent log level. @default 'info' */
  logLevel: z.enum(AGENT_LOG_LEVELS).default('info'),
});

/** The agent's resolved configuration (defaults filled in). */
export type AgentConfig = z.infer<typeof AgentConfigSchema>;

/** What a config file, the environment or the flags may set: any subset of the options. */
export type AgentConfigInput = z.input<typeof AgentConfigSchema>;

/** The name of one agent option, e.g. `flushIntervalS`. */
export type AgentConfigName = keyof AgentConfig;

/** Every option at its default (options without a default are absent). */
export const AGENT_CONFIG_DEFAULTS: Readonly<AgentConfig> = Object.freeze(AgentConfigSchema.parse({}));
