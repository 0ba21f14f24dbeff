import { AGENT_CONFIG_OPTIONS, type AgentConfig } from '../../agent/config';
import { AGENT_GLIBC_TUNABLES } from '../../agent/packaging/build-agent-sea';
import { fakeNvmlPath } from '../setup/fake-nvml';

/** The `GPU_SENTINEL_*` environment variable of an agent option. @throws {Error} for an unknown option */
export function envName(name: keyof AgentConfig): string {
  const option = AGENT_CONFIG_OPTIONS.find((o) => o.name === name);
  if (!option) throw new Error(`Expected an agent option named \`${name}\`, got none`);
  return option.env;
}

/** What differs between the benches' agents. */
export interface BenchAgentEnvOptions {
  /** H100s of the fake library's p5 preset, 1..64. */
  readonly gpus: number;
  /** The loopback sink's URL. */
  readonly endpoint: string;
  /** Sign with SigV4 (AWS's documented example keys) or send unsigned. */
  readonly sigv4: boolean;
  /** The agent's spool folder (the bench's own temporary one). */
  readonly spoolDir: string;
  /** More variables, set last (poll, flush and send intervals; the fake's call-cost model). */
  readonly extra?: Readonly<Record<string, string>>;
}

/**
 * The environment the agent benches run an agent in, as a host's unit runs it: only PATH from this
 * process, glibc's malloc settings of the systemd unit and the DaemonSet's image
 * (`AGENT_GLIBC_TUNABLES`), the fake libnvidia-ml.so's p5 preset, no IMDS (a fixed p5.48xlarge
 * identity in us-east-1a), errors-only logging.
 */
export function benchAgentEnv(options: BenchAgentEnvOptions): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    GLIBC_TUNABLES: AGENT_GLIBC_TUNABLES,
    FAKE_NVML_PRESET: 'p5',
    FAKE_NVML_GPU_COUNT: String(options.gpus),
    [envName('endpoint')]: options.endpoint,
    [envName('auth')]: options.sigv4 ? 'sigv4' : 'none',
    ...(options.sigv4
      ? {
          AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE',
          AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
        }
      : {}),
    [envName('imds')]: 'off',
    [envName('instanceId')]: 'i-0abc12345def67890',
    [envName('instanceType')]: 'p5.48xlarge',
    [envName('region')]: 'us-east-1',
    [envName('az')]: 'us-east-1a',
    [envName('nvmlLibraryPath')]: fakeNvmlPath(),
    [envName('spoolDir')]: options.spoolDir,
    [envName('logLevel')]: 'error',
    ...options.extra,
  };
}
