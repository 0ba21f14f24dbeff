import { InstanceIdSchema } from '../contract';
import { judgeSender, type SenderClaim } from '../domain';
import { IngestRequestError } from './errors';

/** AWS region shape (`us-east-1`, `us-gov-west-1`), as the contract's `host.region`. */
const REGION_PATTERN = /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$/;

/** Who a request body says it is from, read before validation so identity is checked first. */
export interface ClaimedSender {
  /** `host.instance_id` when it is a well-formed instance id. */
  readonly instanceId?: string;
  /** `host.region` when it is a well-formed region (the region EC2 is asked in). */
  readonly region?: string;
}

/**
 * Reads `host.instance_id` and `host.region` from an unvalidated JSON value, keeping each only
 * when well-formed (a malformed one is left to validation, which names the field).
 *
 * @param json - the decoded request body, any shape
 * @returns the claimed instance id and region, each possibly absent
 */
export function claimedSender(json: unknown): ClaimedSender {
  const host = (json as { host?: unknown } | null)?.host;
  if (typeof host !== 'object' || host === null) return {};
  const { instance_id: id, region } = host as { instance_id?: unknown; region?: unknown };
  return {
    ...(InstanceIdSchema.safeParse(id).success ? { instanceId: id as string } : {}),
    ...(typeof region === 'string' && REGION_PATTERN.test(region) ? { region } : {}),
  };
}

/**
 * Checks that the caller may send for the instance it claims ({@link judgeSender}: an instance
 * role session of an agent role, named after the claimed instance, which EC2 says runs and is a
 * GPU instance).
 *
 * @param claim - caller ARN, claimed instance, EC2's answer, agent role names
 * @throws {IngestRequestError} 403 naming `host.instance_id`, with the reason, when it may not
 */
export function assertSender(claim: SenderClaim): void {
  const verdict = judgeSender(claim);
  if (!verdict.allowed) throw new IngestRequestError(403, 'host.instance_id', verdict.reason);
}

/**
 * Checks that an instance sends only for itself: the caller's assumed-role session name must
 * equal `instanceId` (no EC2 lookup; see {@link assertSender} for the full check).
 *
 * @param callerArn - the SigV4-authenticated caller's ARN
 * @param instanceId - `host.instance_id` of the batch
 * @throws {IngestRequestError} 403 naming `host.instance_id` when they differ or the caller is not an instance role session
 */
export function assertCallerIsInstance(callerArn: string | null | undefined, instanceId: string): void {
  assertSender({ callerArn, instanceId });
}
