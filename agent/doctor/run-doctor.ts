import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import type { Host } from '../../lambdas/contract/schema';
import type { Clock } from '../clock';
import type { AgentConfig } from '../config';
import { ImdsClient } from '../identity/imds';
import { type HostCredentialSource, hostCredentialProvider } from '../send/host-credentials';
import { HttpSender } from '../send/sender';
import { checkCredentials, checkEndpoint, checkImds, checkProbe, probeBatch } from './aws-checks';
import { DOCTOR_CHECK_IDS, type DoctorCheckId, type DoctorCheckResult } from './doctor-check';
import { checkEfa, checkKmsg, checkNvml, checkProfiling } from './host-checks';
import { stsCallerArn } from './sts-caller-identity';

/** Options of {@link runDoctor}. */
export interface DoctorOptions {
  /** The resolved agent configuration: the doctor checks what this agent would use. */
  readonly config: AgentConfig;
  /** `agent.version` of the probe batch. */
  readonly version: string;
  /** The clock (signing dates, `sent_at`). */
  readonly clock: Clock;
  /** The user the doctor runs as (`process.getuid()`), named in the kernel-log check. */
  readonly uid: number;
  /** The fetch for IMDS, dcgm-exporter, the endpoint and the probe. @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** IMDS base URL. @default http://169.254.169.254 */
  readonly imdsBaseUrl?: string;
  /** `kernel.dmesg_restrict`'s file. @default '/proc/sys/kernel/dmesg_restrict' */
  readonly dmesgRestrictPath?: string;
  /**
   * The credentials to sign with, and their source's name.
   * @default the agent's own chain (`hostCredentialProvider`)
   */
  readonly credentials?: {
    readonly provider: AwsCredentialIdentity | AwsCredentialIdentityProvider;
    readonly source: HostCredentialSource;
  };
  /** Who the credentials are, given the API's region. @default STS GetCallerIdentity in that region */
  readonly whoAmI?: (region: string) => Promise<string>;
  /** Per-request timeout of the endpoint and probe requests, ms. @default 5000 */
  readonly timeoutMs?: number;
  /**
   * The checks to report, e.g. `['nvml', 'profiling', 'kmsg', 'efa']` in an AMI build that has no
   * endpoint or agent role yet; the others are neither printed nor counted (the checks a reported
   * one depends on still run: IMDS for EFA's instance type, the endpoint for the probe).
   * @default every check of {@link DOCTOR_CHECK_IDS}
   */
  readonly only?: readonly DoctorCheckId[];
}

/**
 * `gpu-sentinel doctor`: every check the agent depends on, each a result with the fix in words,
 * in the order of {@link DOCTOR_CHECK_IDS}: NVML (driver version), profiling (GPM or
 * dcgm-exporter), the kernel log, EFA sysfs, IMDSv2 and the identity, the credentials' role, the
 * endpoint, and the signed probe (the API's identity checks, nothing stored). Checks that need an
 * earlier one that failed are skipped, saying which.
 *
 * @param options - the config and the injected clock, fetch, credentials and paths
 * @returns the results, in order; never throws for a failed check
 */
export async function runDoctor(options: DoctorOptions): Promise<DoctorCheckResult[]> {
  const { config, clock } = options;
  const fetchFn = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 5000;
  const results = new Map<string, DoctorCheckResult>();
  const put = (r: DoctorCheckResult): void => void results.set(r.id, r);

  const nvml = checkNvml(config.nvmlLibraryPath, clock);
  put(nvml.result);
  put(await checkProfiling(nvml.profiling, config.dcgmExporterUrl, fetchFn));
  put(
    checkKmsg({
      path: config.kmsgPath,
      uid: options.uid,
      ...(options.dmesgRestrictPath ? { dmesgRestrictPath: options.dmesgRestrictPath } : {}),
    }),
  );
  const override: Host | undefined =
    config.instanceId && config.instanceType && config.region
      ? {
          instance_id: config.instanceId,
          instance_type: config.instanceType,
          region: config.region,
          ...(config.az ? { az: config.az } : {}),
        }
      : undefined;
  const imds =
    config.imds === 'on'
      ? new ImdsClient({ fetch: fetchFn, ...(options.imdsBaseUrl ? { baseUrl: options.imdsBaseUrl } : {}) })
      : undefined;
  const identity = await checkImds(imds, override);
  put(identity.result);
  const host = identity.host;
  put(checkEfa(config.efaRoot, host?.instance_type ?? config.instanceType));

  const region = config.region ?? host?.region;
  const credentials = options.credentials ?? hostCredentialProvider();
  if (config.auth === 'none') {
    put({ id: 'credentials', status: 'skip', detail: 'auth is none: requests go unsigned (a loopback API)' });
  } else if (region === undefined) {
    put({
      id: 'credentials',
      status: 'fail',
      detail: 'no region: IMDS did not answer and `region` is not set',
      fix: "Set `region` to the API's region.",
    });
  } else {
    const whoAmI =
      options.whoAmI ??
      ((r: string) =>
        stsCallerArn({ region: r, credentials: credentials.provider, clock, fetch: fetchFn, timeoutMs }));
    put(
      await checkCredentials({
        source: credentials.source,
        whoAmI: () => whoAmI(region),
        ...(config.agentRoleArn ? { agentRoleArn: config.agentRoleArn } : {}),
        ...(host ? { instanceId: host.instance_id } : {}),
      }),
    );
  }

  if (!config.endpoint) {
    const fix =
      'Set `endpoint` (--endpoint, GPU_SENTINEL_ENDPOINT) to the stack output BatchesUrl without /v1/batches.';
    put({ id: 'endpoint', status: 'fail', detail: 'no endpoint configured', fix });
    put({ id: 'probe', status: 'skip', detail: 'no endpoint to probe' });
    return ordered(results, options.only);
  }
  let sender: HttpSender;
  try {
    sender = new HttpSender({
      endpoint: config.endpoint,
      auth: config.auth,
      ...(region ? { region } : {}),
      credentials: credentials.provider,
      fetch: fetchFn,
      clock,
      retries: 0,
      authRetries: 0,
      requestTimeoutMs: timeoutMs,
    });
  } catch (err) {
    put({
      id: 'endpoint',
      status: 'fail',
      detail: (err as Error).message,
      fix: 'Fix `endpoint`, `auth` and `region`.',
    });
    put({ id: 'probe', status: 'skip', detail: 'no usable endpoint' });
    return ordered(results, options.only);
  }
  const endpoint = await checkEndpoint(sender.batchesUrl, fetchFn, timeoutMs);
  put(endpoint);
  if (endpoint.status === 'fail')
    put({ id: 'probe', status: 'skip', detail: 'the endpoint does not answer' });
  else if (host === undefined) put({ id: 'probe', status: 'skip', detail: 'no instance identity to send' });
  else put(await checkProbe(sender, probeBatch(host, options.version, clock())));
  return ordered(results, options.only);
}

/**
 * The doctor's exit code: 1 when any check failed, else 0.
 *
 * @param results - from {@link runDoctor}
 * @returns 0 or 1
 */
export function doctorExitCode(results: readonly DoctorCheckResult[]): number {
  return results.some((r) => r.status === 'fail') ? 1 : 0;
}

function ordered(
  results: Map<string, DoctorCheckResult>,
  only: readonly DoctorCheckId[] | undefined,
): DoctorCheckResult[] {
  return DOCTOR_CHECK_IDS.filter((id) => only === undefined || only.includes(id)).flatMap(
    (id) => results.get(id) ?? [],
  );
}

/**
 * Parses a comma-separated list of check ids (`--checks nvml,kmsg`).
 *
 * @param value - ids of {@link DOCTOR_CHECK_IDS}, comma-separated, at least one
 * @returns the ids
 * @throws {RangeError} naming `--checks` and the unknown id
 */
export function parseDoctorChecks(value: string): DoctorCheckId[] {
  const ids = value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  const known: readonly string[] = DOCTOR_CHECK_IDS;
  const bad = ids.find((id) => !known.includes(id));
  if (ids.length === 0 || bad !== undefined)
    throw new RangeError(
      `Expected \`--checks\` to be a comma-separated list of ${DOCTOR_CHECK_IDS.join(', ')}, got \`${value}\``,
    );
  return ids as DoctorCheckId[];
}
