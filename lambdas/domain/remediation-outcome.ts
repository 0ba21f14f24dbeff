import type { RemediationReservation } from './ports';
import { groupReplacementLimit, type RemediationLimits } from './remediation-policy';
import type { RemediationDecision } from './types';

/**
 * The id under which escalations of an instance are deduplicated (one page per instance and
 * cooldown, not one per batch), claimed like an alert id.
 *
 * @param instanceId - EC2 instance id
 * @returns `escalation:<instance id>`
 */
export function escalationId(instanceId: string): string {
  return `escalation:${instanceId}`;
}

/**
 * What a `reboot`, `replace` or `quarantine` decision becomes after the state store answered its
 * reservation (docs/design.md §8): unchanged when granted; `skip` when the instance is already remediated
 * (or, for a reboot, was rebooted within `rebootWindowS`) or another invocation holds its lease;
 * `escalate` with the numbers when the group's or the fleet's budget is spent.
 *
 * @param decision - the policy's decision (action `reboot`, `replace` or `quarantine`)
 * @param reservation - the store's answer
 * @param limits - the limits the budget came from (for the message)
 * @param desired - the group's desired capacity, when known (for the message)
 * @returns the decision to carry out and record
 */
export function afterReservation(
  decision: RemediationDecision,
  reservation: RemediationReservation,
  limits: RemediationLimits,
  desired: number | undefined,
): RemediationDecision {
  if (reservation.granted) return decision;
  if (decision.action === 'reboot') return afterRebootRefused(decision, reservation, limits);
  switch (reservation.reason) {
    case 'remediated':
      return { ...decision, action: 'skip', reason: 'another invocation already remediated this instance' };
    case 'in_progress':
      return {
        ...decision,
        action: 'skip',
        reason: 'another invocation is remediating this instance now (its reservation is held)',
      };
    case 'group_budget':
      return {
        ...decision,
        action: 'escalate',
        reason: `rate limit: ${reservation.used ?? '?'} replacement(s) in Auto Scaling group ${decision.asg_name ?? '?'} in the last ${limits.windowS} s, limit ${reservation.limit ?? '?'} = ${groupReplacementLimit(limits, desired).how}; a human must replace it`,
      };
    case 'fleet_budget':
      return {
        ...decision,
        action: 'escalate',
        reason: `fleet rate limit: ${reservation.used ?? '?'} replacement(s) across the fleet in the last ${limits.windowS} s, limit ${reservation.limit ?? '?'}; a fleet-wide cause is likely, a human must look before more instances are replaced`,
      };
  }
}

/** A refused `reboot` reservation: skipped when taken by another invocation, escalated over a reboot budget. */
function afterRebootRefused(
  decision: RemediationDecision,
  reservation: Exclude<RemediationReservation, { granted: true }>,
  limits: RemediationLimits,
): RemediationDecision {
  switch (reservation.reason) {
    case 'remediated':
      return {
        ...decision,
        action: 'skip',
        reason: `another invocation already rebooted this instance within the last ${limits.rebootWindowS} s`,
      };
    case 'in_progress':
      return {
        ...decision,
        action: 'skip',
        reason: 'another invocation is rebooting this instance now (its reservation is held)',
      };
    case 'group_budget':
    case 'fleet_budget':
      return {
        ...decision,
        action: 'escalate',
        reason: `reboot rate limit: ${reservation.used ?? '?'} reboot(s) ${reservation.reason === 'group_budget' ? `in Auto Scaling group ${decision.asg_name ?? '?'}` : 'across the fleet'} in the last ${limits.windowS} s, limit ${reservation.limit ?? '?'}; a human must reset the GPU (nvidia-smi -r when idle, or a reboot)`,
      };
  }
}

/**
 * A decision whose call to Auto Scaling or EC2 failed: escalated to a human, with the cause.
 *
 * @param decision - the `reboot`, `replace` or `quarantine` decision that could not be carried out
 * @param message - the failure's message
 * @returns the decision with action `escalate`
 */
export function afterFailedCall(decision: RemediationDecision, message: string): RemediationDecision {
  return {
    ...decision,
    action: 'escalate',
    reason: `${decision.action} could not be done safely (${message}); a human must act`,
  };
}

/**
 * An escalation that was already paged for this instance within the cooldown becomes a `skip`
 * (still recorded for the audit trail, on the info topic), so a rate-limited instance pages once
 * per cooldown instead of once per batch.
 *
 * @param decision - an `escalate` decision
 * @param cooldownS - the escalation cooldown, s
 * @returns the decision with action `skip` and why
 */
export function repeatedEscalation(decision: RemediationDecision, cooldownS: number): RemediationDecision {
  return {
    ...decision,
    action: 'skip',
    reason: `already escalated to a human within the last ${cooldownS} s (not paged again): ${decision.reason}`,
  };
}
