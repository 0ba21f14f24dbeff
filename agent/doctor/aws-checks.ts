import { randomUUID } from 'node:crypto';
import type { Batch, Host } from '../../lambdas/contract/schema';
import type { ImdsClient } from '../identity/imds';
import type { HostCredentialSource } from '../send/host-credentials';
import type { HttpSender } from '../send/sender';
import { classifyApiRefusal, refusalFix } from './api-refusal';
import type { DoctorCheckResult } from './doctor-check';

/**
 * The AWS checks of `gpu-sentinel doctor`: IMDSv2 identity, the credentials' role, the endpoint,
 * the signed probe. Each returns a result and never throws.
 */

/** What the IMDS check learnt, for the checks after it. */
export interface ImdsFindings {
  /** The check's result. */
  readonly result: DoctorCheckResult;
  /** The identity the agent would send, when IMDS answered. */
  readonly host?: Host;
}

/**
 * IMDSv2 answers (a session token, then the instance identity the agent sends: instance id, type,
 * region, AZ, AMI, lifecycle), through the agent's own IMDS client.
 *
 * @param imds - the agent's IMDS client, or undefined when `imds` is off
 * @param override - the identity the config gives when IMDS is off
 * @returns the result, and the host when known
 */
export async function checkImds(
  imds: ImdsClient | undefined,
  override: Host | undefined,
): Promise<ImdsFindings> {
  if (imds === undefined) {
    return {
      result: {
        id: 'imds',
        status: override ? 'skip' : 'fail',
        detail: override
          ? `imds is off; identity from the config: ${override.instance_id} (${override.instance_type}, ${override.region})`
          : 'imds is off and the config gives no complete identity',
        ...(override
          ? {}
          : { fix: 'On EC2 set `imds` on; off EC2 set instanceId, instanceType and region.' }),
      },
      ...(override ? { host: override } : {}),
    };
  }
  try {
    const host = await imds.host();
    return {
      result: {
        id: 'imds',
        status: 'pass',
        detail: `${host.instance_id}, ${host.instance_type}, ${host.az ?? host.region}${host.lifecycle ? `, ${host.lifecycle}` : ''}${host.asg_name ? `, group ${host.asg_name}` : ''}`,
      },
      host: { ...host, ...(override ?? {}) },
    };
  } catch (err) {
    return {
      result: {
        id: 'imds',
        status: 'fail',
        detail: (err as Error).message,
        fix: 'Enable IMDSv2 on the instance (aws ec2 modify-instance-metadata-options --http-endpoint enabled --http-tokens required), with a hop limit of 2 in containers; the agent needs it for its identity and its credentials.',
      },
    };
  }
}

/** Options of {@link checkCredentials}. */
export interface CredentialsCheckOptions {
  /** Where the credential chain takes them from on this host. */
  readonly source: HostCredentialSource;
  /** Asks who the credentials are (STS GetCallerIdentity); throws when it cannot say. */
  readonly whoAmI: () => Promise<string>;
  /** The stack's agent role ARN (output `AgentRoleArn`, config `agentRoleArn`), when known. */
  readonly agentRoleArn?: string;
  /** The instance id the caller's session must be named after (IMDS), when known. */
  readonly instanceId?: string;
}

/**
 * The credentials the agent signs with are the agent role's instance-profile session: an
 * assumed-role ARN whose role is the stack's agent role and whose session name is this instance's
 * id (EC2 names instance-profile sessions so; the API admits nothing else).
 *
 * @param options - source, whoAmI, agent role, instance id
 * @returns the result
 */
export async function checkCredentials(options: CredentialsCheckOptions): Promise<DoctorCheckResult> {
  let arn: string;
  try {
    arn = await options.whoAmI();
  } catch (err) {
    return {
      id: 'credentials',
      status: 'fail',
      detail: `credential source ${options.source}: ${(err as Error).message}`,
      fix: "Attach the stack's instance profile (output AgentInstanceProfileArn) to the instance, and remove env keys or ~/.aws files that shadow it; STS must be reachable (a VPC endpoint for sts in private subnets).",
    };
  }
  const session = /^arn:aws[a-z-]*:sts::\d{12}:assumed-role\/([^/]+)\/([^/]+)$/.exec(arn);
  const fix = (why: string): DoctorCheckResult => ({
    id: 'credentials',
    status: 'fail',
    detail: `${arn} (source ${options.source}): ${why}`,
    fix: "The API admits only the agent role's instance-profile credentials: attach the stack's instance profile (AgentInstanceProfileArn), or add this role to -c agentRoleArns and attach AgentPolicyArn to it; let the agent use the instance role (no AWS_* keys, AWS_PROFILE or ~/.aws on the host).",
  });
  if (session === null) return fix('not an assumed-role session');
  const [, role, sessionName] = session;
  const expectedRole = options.agentRoleArn?.split('/').pop();
  if (expectedRole !== undefined && role !== expectedRole)
    return fix(`role ${role} is not the stack's agent role ${expectedRole}`);
  if (options.instanceId !== undefined && sessionName !== options.instanceId)
    return fix(
      `session ${sessionName} is not this instance's id ${options.instanceId}, so these are not its instance-profile credentials`,
    );
  return {
    id: 'credentials',
    status: 'pass',
    detail: `${arn} (source ${options.source})${expectedRole === undefined ? '; no agentRoleArn configured, role not compared' : ''}`,
  };
}

/**
 * The endpoint answers HTTP at all (DNS, TCP, TLS): an unsigned `GET <endpoint>/v1/batches`;
 * any status counts (API Gateway answers 403 Missing Authentication Token to it).
 *
 * @param url - the batches URL
 * @param fetchFn - the fetch to use
 * @param timeoutMs - give up after this many ms
 * @returns the result
 */
export async function checkEndpoint(
  url: string,
  fetchFn: typeof fetch,
  timeoutMs: number,
): Promise<DoctorCheckResult> {
  try {
    const res = await fetchFn(url, { method: 'GET', signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    const gateway = res.headers.get('x-amzn-requestid') ?? res.headers.get('x-amz-apigw-id');
    return {
      id: 'endpoint',
      status: 'pass',
      detail: `${url} answers HTTP ${res.status}${gateway ? ' (API Gateway)' : ''}`,
    };
  } catch (err) {
    const inner = (err as { cause?: { code?: string; message?: string } }).cause;
    const cause = inner?.code ?? inner?.message ?? (err as Error).message;
    return {
      id: 'endpoint',
      status: 'fail',
      detail: `${url}: no answer (${cause})`,
      fix: 'Check `endpoint` (stack output BatchesUrl without /v1/batches), DNS, HTTPS egress (security group, NACL, proxy) and, in private subnets, an execute-api VPC endpoint or a NAT gateway.',
    };
  }
}

/**
 * The smallest batch the API validates: this host, the agent, no windows, EFA ports or events,
 * so even an API that predates the probe stores nothing from it.
 *
 * @param host - the identity the agent sends
 * @param version - the agent version
 * @param now - `sent_at`
 * @returns a contract batch
 */
export function probeBatch(host: Host, version: string, now: Date): Batch {
  return {
    schema: 'gpu-sentinel/v1',
    batch_id: randomUUID(),
    seq: 0,
    sent_at: now.toISOString(),
    host,
    agent: { version, profiling_source: 'none' },
    windows: [],
    efa: [],
    events: [],
  };
}

/**
 * The signed probe: the API runs every check a batch meets (IAM authorization and the resource
 * policy at API Gateway, the handler's identity and EC2 checks, validation) and stores nothing.
 * A refusal names who refused (API Gateway's resource policy or the handler) and the fix.
 *
 * @param sender - the agent's sender (SigV4 with its credentials)
 * @param batch - from {@link probeBatch}
 * @returns the result
 */
export async function checkProbe(
  sender: Pick<HttpSender, 'probe'>,
  batch: Batch,
): Promise<DoctorCheckResult> {
  let answer: Awaited<ReturnType<HttpSender['probe']>>;
  try {
    answer = await sender.probe(batch);
  } catch (err) {
    return {
      id: 'probe',
      status: 'fail',
      detail: `not sent: ${(err as Error).message}`,
      fix: 'Fix the endpoint and credentials checks above first.',
    };
  }
  if (answer.status >= 200 && answer.status < 300) {
    let body: { probe?: unknown; verified?: unknown; not_checked?: unknown; caller_arn?: unknown } = {};
    try {
      body = JSON.parse(answer.text) as typeof body;
    } catch {
      // handled below as an API without the probe
    }
    if (body.probe !== true)
      return {
        id: 'probe',
        status: 'fail',
        detail: `HTTP ${answer.status} without a probe answer: the API predates the probe (it accepted an empty batch)`,
        fix: 'Redeploy the stack (cdk deploy) to get the probe; the batch sent had no windows, so nothing was stored.',
      };
    const verified = Array.isArray(body.verified) ? body.verified.join(', ') : '';
    const skipped = Array.isArray(body.not_checked)
      ? (body.not_checked as { check?: string; reason?: string }[]).map((c) => `${c.check} (${c.reason})`)
      : [];
    return {
      id: 'probe',
      status: 'pass',
      detail: `verified ${verified}${skipped.length > 0 ? `; not checked: ${skipped.join('; ')}` : ''}; nothing stored`,
    };
  }
  const refusal = classifyApiRefusal(answer.status, answer.headers, answer.text);
  const who =
    refusal.by === 'resource-policy'
      ? `refused by API Gateway's resource policy${refusal.explicitDeny ? ' (explicit deny)' : ''}`
      : refusal.by === 'handler'
        ? 'refused by the ingest handler'
        : `refused (${refusal.by})`;
  return {
    id: 'probe',
    status: 'fail',
    detail: `HTTP ${answer.status} ${who}: ${refusal.message}`,
    fix: refusalFix(refusal),
  };
}
