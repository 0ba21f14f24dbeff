import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { PipelineDeps } from '../app/pipeline';
import { PROBE_HEADER } from '../contract';
import { InstanceLookupError, parseAssumedRoleArn } from '../domain';
import { assertSender, claimedSender } from './caller-identity';
import { headerValue } from './http-body';

/** The identity checks the ingest handler can run, as a probe answer names them. */
export const SENDER_CHECKS = ['instance_session', 'ec2_instance'] as const;
/** Union of {@link SENDER_CHECKS}. */
export type SenderCheck = (typeof SENDER_CHECKS)[number];

/** The handler settings the identity checks read (a subset of the ingest handler's deps). */
export interface SenderCheckDeps {
  /** EC2 lookups of the claimed instance; absent: no lookup (local mode, tests). */
  readonly instances?: PipelineDeps['instances'];
  /** `instance-session` (default) or `none` (local mode on loopback only). */
  readonly callerCheck?: 'instance-session' | 'none';
  /** Role names whose instance sessions may send; undefined: any role. */
  readonly agentRoleNames?: readonly string[];
  /** The account EC2 can answer for; callers of another account are not looked up. */
  readonly accountId?: string;
}

/** What {@link verifySender} established about the caller. */
export interface SenderVerdict {
  /** The checks that ran and passed, in order. */
  readonly verified: readonly SenderCheck[];
  /** The checks that did not run, each with why (a setting, not a failure). */
  readonly notChecked: readonly { readonly check: SenderCheck; readonly reason: string }[];
  /** Whether the pipeline may ask EC2 about this caller (false for a caller of another account). */
  readonly lookupAllowed: boolean;
}

/**
 * Runs the handler's identity checks on a decoded request body (docs/design.md §11), before
 * validation: the caller is an instance-role session of an agent role named after the claimed
 * `host.instance_id` (`judgeSender`), then, where `instances` can answer for the caller's account,
 * EC2 knows the instance in the claimed region, running, of a GPU type, with the caller's role.
 *
 * @param event - the API Gateway proxy event (its `requestContext.identity.userArn` is the SigV4 caller)
 * @param json - the decoded body, any shape
 * @param deps - the checks' settings
 * @returns the checks run and skipped, and whether EC2 may be asked about this caller later
 * @throws {IngestRequestError} 403 naming `host.instance_id` when the caller may not send for it
 * @throws {InstanceLookupError} when EC2 does not know the instance (yet) or cannot be asked: retry later
 */
export async function verifySender(
  event: APIGatewayProxyEvent,
  json: unknown,
  deps: SenderCheckDeps,
): Promise<SenderVerdict> {
  if ((deps.callerCheck ?? 'instance-session') === 'none') {
    const reason = 'the API runs without caller checks (local mode on loopback)';
    return {
      verified: [],
      notChecked: SENDER_CHECKS.map((check) => ({ check, reason })),
      lookupAllowed: deps.instances !== undefined,
    };
  }
  const claim = claimedSender(json);
  const callerArn = event.requestContext?.identity?.userArn;
  // The cheap checks first: no EC2 call for a caller that is not even the instance it names.
  assertSender({ callerArn, instanceId: claim.instanceId, agentRoleNames: deps.agentRoleNames });
  const callerAccount = parseAssumedRoleArn(callerArn)?.accountId;
  const lookupAllowed = deps.accountId === undefined || callerAccount === deps.accountId;
  if (!lookupAllowed || deps.instances === undefined) {
    const reason = lookupAllowed
      ? 'the API is not configured to look instances up in EC2'
      : `the caller's account ${callerAccount ?? '(none)'} is not the API's; EC2 answers only for its own`;
    return {
      verified: ['instance_session'],
      notChecked: [{ check: 'ec2_instance', reason }],
      lookupAllowed: false,
    };
  }
  if (claim.instanceId === undefined || claim.region === undefined) {
    // Validation names the malformed field next; there is nothing to look up.
    return { verified: ['instance_session'], notChecked: [], lookupAllowed };
  }
  const instance = await deps.instances.describe(claim.instanceId, claim.region);
  if (instance === undefined) {
    // Past the resource policy only an instance's own credentials carry its id as session
    // name, so an id EC2 does not know is a just-launched instance (DescribeInstances is
    // eventually consistent): retry later, never reject the agent's data for good.
    throw new InstanceLookupError(
      claim.instanceId,
      claim.region,
      'EC2 does not know the instance (yet); retry later',
    );
  }
  assertSender({ callerArn, instanceId: claim.instanceId, instance, agentRoleNames: deps.agentRoleNames });
  return { verified: ['instance_session', 'ec2_instance'], notChecked: [], lookupAllowed };
}

/**
 * Whether a request is a signed probe: header {@link PROBE_HEADER} (any case) with value `1` or
 * `true`. Any other value, or none, is a batch.
 *
 * @param event - the API Gateway proxy event
 * @returns true for a probe
 */
export function isProbe(event: Pick<APIGatewayProxyEvent, 'headers'>): boolean {
  const value = headerValue(event.headers, PROBE_HEADER)?.trim().toLowerCase();
  return value === '1' || value === 'true';
}

/**
 * The body of a probe's `200`: what the API verified, and what it stored (nothing).
 *
 * - `caller_arn`: the SigV4 caller API Gateway authorized (null without IAM: local mode);
 * - `instance_id`: the validated batch's `host.instance_id`;
 * - `verified`: `iam_authorization` when API Gateway passed a caller (its IAM auth and resource
 *   policy let the request through), then the handler's checks ({@link SENDER_CHECKS}) that ran,
 *   then `contract` (the body is a valid contract v1 batch);
 * - `not_checked`: the checks this deployment skips, each with why;
 * - `stored`: always 0.
 *
 * @param event - the proxy event
 * @param batch - the validated batch
 * @param sender - {@link verifySender}'s verdict
 * @returns the JSON body
 */
export function probeAnswer(
  event: APIGatewayProxyEvent,
  batch: { readonly host: { readonly instance_id: string } },
  sender: SenderVerdict,
): Record<string, unknown> {
  const callerArn = event.requestContext?.identity?.userArn ?? null;
  return {
    probe: true,
    caller_arn: callerArn,
    instance_id: batch.host.instance_id,
    verified: [...(callerArn ? ['iam_authorization'] : []), ...sender.verified, 'contract'],
    not_checked: sender.notChecked,
    stored: 0,
  };
}
