import { type EC2Client, RebootInstancesCommand } from '@aws-sdk/client-ec2';
import type { RemediationDecision } from '../domain/types';
import { RemediationFailedError } from './errors';

/**
 * Reboots the decision's one instance with EC2 `RebootInstances` (the ladder's first step: a reboot
 * resets every GPU of the instance, which clears the faults NVIDIA's Xid catalog resolves with
 * "reset the GPU"). EC2 queues the reboot and answers at once; an instance that does not shut down
 * cleanly within four minutes is hard-rebooted by EC2 (EC2 API reference, RebootInstances). The
 * instance keeps its id, volumes and Auto Scaling membership, so nothing is replaced.
 *
 * @param ec2 - the EC2 client of the instance's region
 * @param decision - a `reboot` decision
 * @throws {RemediationFailedError} when the call fails (throttled, no permission, unknown instance):
 *   the caller escalates to a human
 */
export async function rebootInstance(ec2: EC2Client, decision: RemediationDecision): Promise<void> {
  try {
    await ec2.send(new RebootInstancesCommand({ InstanceIds: [decision.instance_id] }));
  } catch (error) {
    throw new RemediationFailedError(
      decision.instance_id,
      'RebootInstances',
      'expected EC2 to queue the reboot, the call failed; escalate to a human',
      { cause: error },
    );
  }
}
