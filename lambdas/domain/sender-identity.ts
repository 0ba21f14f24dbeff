import { GPU_INSTANCE_TYPE_PATTERN, SENDING_INSTANCE_STATES } from './constants';
import type { InstanceInfo } from './types';

/**
 * The parts of a SigV4 caller's assumed-role ARN, as API Gateway IAM authorization reports it in
 * `requestContext.identity.userArn`: `arn:<partition>:sts::<account>:assumed-role/<role>/<session>`.
 * For EC2 instance-profile credentials EC2 itself sets the session name to the instance id.
 */
export interface AssumedRoleCaller {
  readonly partition: string;
  /** 12-digit account id. */
  readonly accountId: string;
  /** Role name (an assumed-role ARN carries no role path). */
  readonly roleName: string;
  /** Session name: the instance id for instance-profile credentials. */
  readonly sessionName: string;
}

/**
 * Parses an assumed-role caller ARN.
 *
 * @param callerArn - `requestContext.identity.userArn`
 * @returns the parts, or undefined for any other kind of principal (IAM user, root, federated user, none)
 * @example
 * parseAssumedRoleArn('arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0abc12345def67890')?.sessionName
 * // 'i-0abc12345def67890'
 */
export function parseAssumedRoleArn(callerArn: string | null | undefined): AssumedRoleCaller | undefined {
  if (!callerArn) return undefined;
  const match = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([^/]+)\/([^/]+)$/.exec(callerArn);
  if (!match) return undefined;
  return { partition: match[1]!, accountId: match[2]!, roleName: match[3]!, sessionName: match[4]! };
}

/** What {@link judgeSender} decides. */
export type SenderVerdict = { readonly allowed: true } | { readonly allowed: false; readonly reason: string };

/** Inputs of {@link judgeSender}. */
export interface SenderClaim {
  /** The SigV4 caller's ARN (`requestContext.identity.userArn`). */
  readonly callerArn: string | null | undefined;
  /** `host.instance_id` as the request body claims it (read before validation), if any. */
  readonly instanceId: string | undefined;
  /**
   * What EC2 says about the claimed instance in the claimed region; `null` when EC2 does not know
   * it; `undefined` when no lookup was made (no enrichment configured: local mode, tests).
   */
  readonly instance?: InstanceInfo | null;
  /**
   * Role names whose instance sessions may send (the agent roles the stack creates or is given).
   * @default undefined (any role; the API's resource policy is then the only role restriction)
   */
  readonly agentRoleNames?: readonly string[];
}

/**
 * Decides whether a caller may send a batch for the instance it claims (docs/design.md §11; threat model
 * in docs/security.md). Pure. In order:
 *
 * 1. the caller is an assumed-role session (instance-profile credentials are), of an agent role
 *    when `agentRoleNames` is given;
 * 2. its session name equals the claimed `host.instance_id` (EC2 names instance-profile sessions
 *    after the instance; anyone else who may `sts:AssumeRole` can pick any name, which is why the
 *    resource policy also demands instance credentials, `ec2:SourceInstanceARN`);
 * 3. with enrichment: EC2 knows the instance in the claimed region, it runs (or is winding down),
 *    it is of a GPU instance type, and it has an instance profile attached whose role (when IAM
 *    was asked) is the caller's role.
 *
 * A body that names no instance passes steps 2–3 here (validation then answers 400 naming
 * `host.instance_id`), but only for a caller that is an instance session.
 *
 * @param claim - the caller, the claimed instance and what EC2 says about it
 * @returns `{ allowed: true }`, or `{ allowed: false, reason }` with what was expected and what came
 */
export function judgeSender(claim: SenderClaim): SenderVerdict {
  const caller = parseAssumedRoleArn(claim.callerArn);
  if (caller === undefined) {
    return refuse(
      `caller ${claim.callerArn ?? '(anonymous)'} is not an EC2 instance role session; only instances may send batches for themselves`,
    );
  }
  if (claim.agentRoleNames !== undefined && !claim.agentRoleNames.includes(caller.roleName)) {
    return refuse(`caller role ${caller.roleName} is not an agent role of this deployment`);
  }
  if (claim.instanceId === undefined) return { allowed: true };
  if (caller.sessionName !== claim.instanceId) {
    return refuse(
      `caller session ${caller.sessionName} may not send for ${claim.instanceId}; an instance may only send its own telemetry`,
    );
  }
  const instance = claim.instance;
  if (instance === undefined) return { allowed: true };
  if (instance === null) return refuse(`EC2 knows no instance ${claim.instanceId} in the claimed region`);
  if (!SENDING_INSTANCE_STATES.includes(instance.state)) {
    return refuse(`instance ${instance.instance_id} is ${instance.state}, expected running`);
  }
  if (!GPU_INSTANCE_TYPE_PATTERN.test(instance.instance_type)) {
    return refuse(
      `instance ${instance.instance_id} is a ${instance.instance_type}, expected a GPU instance type`,
    );
  }
  if (instance.instance_profile_arn === undefined) {
    return refuse(
      `instance ${instance.instance_id} has no instance profile, so its credentials cannot be the caller's`,
    );
  }
  const roles = instance.instance_profile_role_names;
  if (roles !== undefined && !roles.includes(caller.roleName)) {
    return refuse(
      `instance ${instance.instance_id}'s instance profile carries role ${roles.join(', ') || '(none)'}, not the caller's role ${caller.roleName}`,
    );
  }
  return { allowed: true };
}

function refuse(reason: string): SenderVerdict {
  return { allowed: false, reason };
}
