import type { Host } from '../contract';
import {
  alertId,
  cancelledDecision,
  type Finding,
  type PendingRemediation,
  pendingOf,
  type RemediationDecision,
  scheduledDecision,
  waitingDecision,
} from '../domain';
import type { PipelineDeps } from './pipeline';

/**
 * Holds back a reboot or replacement decision until its grace period has passed (docs/remediation.md):
 * the first one is announced (`scheduled`, the pending record written with its due time; no budget
 * spent), a fault before it is due only updates the record (`skip`; a `replace` supersedes an
 * announced reboot and is announced in its turn, same due time), and once due the caller carries
 * the decision out.
 *
 * @param decision - the policy's `reboot` or `replace` decision
 * @param finding - the fault it is about
 * @param pending - the instance's pending record read before deciding, if any
 * @param deps - the state store
 * @param now - the server's clock
 * @param delayS - the grace period, s > 0
 * @returns the decision to record instead, or undefined when it is due (carry it out now)
 * @throws whatever the state store throws when it cannot be reached
 */
export async function deferUntilDue(
  decision: RemediationDecision & { action: 'reboot' | 'replace' },
  finding: Finding,
  pending: PendingRemediation | undefined,
  deps: Pick<PipelineDeps, 'state'>,
  now: Date,
  delayS: number,
): Promise<RemediationDecision | undefined> {
  if (pending === undefined) {
    const fresh = pendingOf(decision, finding, delayS, now);
    if (await deps.state.putPendingRemediation(fresh)) return scheduledDecision(decision, fresh, delayS);
    // Another invocation announced it first: this one waits with it.
    return waitingDecision(decision, (await deps.state.getPendingRemediation(decision.instance_id)) ?? fresh);
  }
  if (now.getTime() >= Date.parse(pending.due_at)) return undefined;
  const upgrade = decision.action === 'replace' && pending.action === 'reboot';
  const updated: PendingRemediation = {
    ...pending,
    last_fault_at: now.toISOString(),
    ...(upgrade ? { action: 'replace' as const, finding } : {}),
  };
  await deps.state.putPendingRemediation(updated);
  return upgrade ? scheduledDecision(decision, updated, delayS) : waitingDecision(decision, updated);
}

/**
 * Cancels a pending remediation, once: takes the record and records the `cancelled` decision.
 *
 * @param pending - the record
 * @param host - the (enriched) host
 * @param reason - why (`judgePending`, or the opt-out tag)
 * @param deps - state store, decision sink, dry-run, mode
 * @param now - the server's clock
 * @returns the decision recorded, or undefined when another invocation took the record first
 * @throws whatever the state store or the decision sink throws (a failed record leaves the
 *   cancellation unpublished: the record is gone, so the notice is what the operator last saw)
 */
export async function cancelPending(
  pending: PendingRemediation,
  host: Pick<Host, 'asg_name' | 'region'>,
  reason: string,
  deps: Pick<PipelineDeps, 'state' | 'decisions' | 'dryRun' | 'remediationMode'>,
  now: Date,
): Promise<RemediationDecision | undefined> {
  if (!(await deps.state.takePendingRemediation(pending.instance_id, pending.decided_at))) return undefined;
  const decision = cancelledDecision(
    pending,
    host,
    reason,
    now,
    deps.dryRun || deps.remediationMode !== 'replace',
    alertId(pending.finding),
  );
  await deps.decisions.record(decision);
  return decision;
}
