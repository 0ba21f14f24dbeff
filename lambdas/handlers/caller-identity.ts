import { IngestRequestError } from './errors';

/**
 * The session name of an assumed-role caller ARN, which for an EC2 instance profile is the
 * instance id: `arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0abc12345def67890` →
 * `i-0abc12345def67890`. Undefined for any other kind of principal (IAM user, root, federated).
 */
export function assumedRoleSessionName(callerArn: string | null | undefined): string | undefined {
  if (!callerArn) return undefined;
  const match = /^arn:aws[a-z-]*:sts::\d{12}:assumed-role\/[^/]+\/([^/]+)$/.exec(callerArn);
  return match?.[1];
}

/**
 * Checks that an instance sends only for itself (DESIGN §11): the caller's assumed-role session
 * name (API Gateway `requestContext.identity.userArn` under IAM auth) must equal `host.instance_id`.
 *
 * @param callerArn - the SigV4-authenticated caller's ARN
 * @param instanceId - `host.instance_id` of the batch
 * @throws {IngestRequestError} 403 naming `host.instance_id` when they differ or the caller is not an instance role session
 */
export function assertCallerIsInstance(callerArn: string | null | undefined, instanceId: string): void {
  const session = assumedRoleSessionName(callerArn);
  if (session !== instanceId) {
    throw new IngestRequestError(
      403,
      'host.instance_id',
      session === undefined
        ? `caller ${callerArn ?? '(anonymous)'} is not an EC2 instance role session; only instances may send batches for themselves`
        : `caller session ${session} may not send for ${instanceId}; an instance may only send its own telemetry`,
    );
  }
}
