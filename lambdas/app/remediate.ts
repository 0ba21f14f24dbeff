import type { Batch } from '../contract';
import {
  afterFailedCall,
  afterReservation,
  alertId,
  DEFAULT_ALERT_COOLDOWN_S,
  DEFAULT_REMEDIATION_LIMITS,
  decideRemediation,
  escalationId,
  type Finding,
  groupReplacementLimit,
  type InstanceInfo,
  judgePending,
  MS_PER_SECOND,
  optOutReason,
  REMEDIATION_LEASE_S,
  type RemediationDecision,
  repeatedEscalation,
} from '../domain';
import { cancelPending, deferUntilDue } from './grace-period';
import type { PipelineDeps } from './pipeline';

/**
 * The remediation ladder for one point finding (docs/design.md §8, docs/remediation.md): decides
 * through the domain policy (a reset-class fault reboots first, and replaces when it comes back),
 * reserves the reboot, replacement or quarantine atomically within the group and fleet budgets,
 * carries it out unless dry-run, and only then confirms it; a failed call releases the reservation
 * (so the next batch retries) and escalates. An escalation pages once per instance and cooldown.
 * With enrichment (`instance`), the group, its desired capacity and tags come from Auto Scaling,
 * not from what the agent says about itself. Every decision, done or skipped, is recorded.
 *
 * @param finding - a point finding whose action is `replace` or `reset`
 * @param batch - the (enriched) batch it came from
 * @param instance - what EC2 and Auto Scaling say about the sender; undefined without enrichment
 * @param deps - state store, remediator, decision sink, log, mode, limits, cooldown
 * @param now - the server's clock
 * @param pausedBy - why remediation is paused (the instance is part of a storm, `judgeStorms`): the
 *   decision is a recorded `skip` @default undefined
 *
 * With a grace period (`deps.remediationDelayS` > 0) a reboot or replacement is announced first and
 * carried out by the first batch at or after its due time (`deferUntilDue`, {@link settlePending});
 * an announced one is cancelled when the opt-out tag appears. The pending record is taken once the
 * decision is carried out or moot (kept after an escalation, so the next batch retries, and while a
 * storm pauses remediation, which still counts the fault against recovery).
 * @returns the decision as recorded
 * @throws whatever the state store throws when it cannot be reached (nothing was carried out)
 * @throws whatever the decision sink throws when an escalation cannot be recorded (its claim is
 *   given back, so the agent's retry pages)
 */
export async function remediate(
  finding: Finding,
  batch: Batch,
  instance: InstanceInfo | undefined,
  deps: PipelineDeps,
  now: Date,
  pausedBy?: string,
): Promise<RemediationDecision> {
  const host = instance ? { ...batch.host, asg_name: instance.asg?.name } : batch.host;
  const limits = deps.remediationLimits ?? DEFAULT_REMEDIATION_LIMITS;
  const delayS = deps.remediationDelayS ?? 0;
  let fault = finding;
  const pending = delayS > 0 ? await deps.state.getPendingRemediation(host.instance_id) : undefined;
  if (pending !== undefined && pausedBy !== undefined) {
    // A storm pauses remediation, not the record of the fault: the instance has not recovered.
    await deps.state.putPendingRemediation({ ...pending, last_fault_at: now.toISOString() });
  } else if (pending !== undefined) {
    const optOut = optOutReason(host, instance?.asg?.tags);
    const cancelled =
      optOut === undefined
        ? undefined
        : await cancelPending(pending, host, `${optOut}: a human acknowledged`, deps, now);
    if (cancelled !== undefined) return cancelled;
    // An announced replacement is not brought down to a reboot by a later reset-class fault.
    if (pending.action === 'replace' && finding.action === 'reset') fault = pending.finding;
  }
  const desired = instance?.asg?.desired_capacity;
  const since = new Date(now.getTime() - limits.windowS * MS_PER_SECOND);
  let decision = decideRemediation(
    {
      finding: fault,
      alertId: alertId(fault),
      host,
      mode: deps.remediationMode,
      existing: await deps.state.getRemediation(host.instance_id),
      ...(fault.action === 'reset' && pausedBy === undefined
        ? { lastReboot: await deps.state.getLastReboot(host.instance_id) }
        : {}),
      recentInGroup: host.asg_name ? await deps.state.listRemediations(host.asg_name, since) : [],
      groupDesiredCapacity: desired,
      groupTags: instance?.asg?.tags,
      limits,
      dryRun: deps.dryRun,
      ...(pausedBy === undefined ? {} : { pausedBy }),
    },
    now,
  );
  if (delayS > 0 && (decision.action === 'replace' || decision.action === 'reboot')) {
    const deferred = await deferUntilDue(
      { ...decision, action: decision.action },
      fault,
      pending,
      deps,
      now,
      delayS,
    );
    if (deferred !== undefined) {
      await deps.decisions.record(deferred);
      return deferred;
    }
    decision = {
      ...decision,
      reason: `grace period of ${delayS} s over (announced at ${pending?.decided_at}): ${decision.reason}`,
    };
  }
  if (decision.action === 'replace' || decision.action === 'quarantine' || decision.action === 'reboot') {
    const record = {
      instance_id: host.instance_id,
      ...(host.asg_name === undefined ? {} : { asg_name: host.asg_name }),
      action: decision.action,
      at: decision.at,
      rule: decision.rule,
    };
    const reboot = decision.action === 'reboot';
    const reservation = await deps.state.reserveRemediation({
      record,
      budget: reboot
        ? {
            groupLimit: limits.maxRebootsPerGroupPerWindow,
            fleetLimit: limits.maxFleetRebootsPerWindow,
            windowS: limits.windowS,
          }
        : {
            groupLimit: groupReplacementLimit(limits, desired).limit,
            fleetLimit: limits.maxFleetPerWindow,
            windowS: limits.windowS,
          },
      leaseS: REMEDIATION_LEASE_S,
      ...(reboot ? { repeatAfterS: limits.rebootWindowS } : {}),
    });
    decision = afterReservation(decision, reservation, limits, desired);
    if (reservation.granted) {
      try {
        if (!deps.dryRun) {
          if (decision.action === 'replace') await deps.remediator.replace(decision);
          else if (decision.action === 'reboot') await deps.remediator.reboot(decision);
          else await deps.remediator.quarantine(decision);
        }
      } catch (err) {
        deps.log.error('remediation failed; escalating to a human', {
          instance_id: host.instance_id,
          action: decision.action,
          error: (err as Error).message,
        });
        await deps.state.releaseRemediation(record, reservation.leaseId);
        decision = afterFailedCall(decision, (err as Error).message);
      }
      if (decision.action !== 'escalate') await deps.state.confirmRemediation(record, reservation.leaseId);
    }
  }
  if (pending !== undefined && pausedBy === undefined && decision.action !== 'escalate') {
    await deps.state.takePendingRemediation(pending.instance_id, pending.decided_at);
  }
  if (decision.action === 'escalate') {
    const cooldownS = deps.alertCooldownS ?? DEFAULT_ALERT_COOLDOWN_S;
    const id = escalationId(host.instance_id);
    if (await deps.state.claimAlert(id, decision.at, cooldownS)) {
      try {
        await deps.decisions.record(decision);
      } catch (err) {
        // The page did not go out: give the claim back so the agent's retry pages instead.
        await deps.state.releaseAlert(id, decision.at);
        throw err;
      }
      return decision;
    }
    decision = repeatedEscalation(decision, cooldownS);
  }
  await deps.decisions.record(decision);
  return decision;
}

/**
 * A batch with no fault of its instance, under a grace period: settles the instance's pending
 * remediation, if any (`judgePending`): cancelled when a human acknowledged (opt-out tag) or, once
 * due, the instance recovered (no fault since the notice, no GPU marked broken); carried out through
 * {@link remediate} (the same policy, budgets, lease and record-after-success) once due otherwise.
 *
 * @param batch - the (enriched) batch
 * @param instance - what EC2 and Auto Scaling say about the sender; undefined without enrichment
 * @param broken - the instance's broken marks (gpuKey → since), as read for the batch
 * @param deps - as {@link remediate}
 * @param now - the server's clock
 * @returns the decision recorded, or undefined when nothing is pending or it is not due
 * @throws as {@link remediate}
 */
export async function settlePending(
  batch: Batch,
  instance: InstanceInfo | undefined,
  broken: ReadonlyMap<string, string>,
  deps: PipelineDeps,
  now: Date,
): Promise<RemediationDecision | undefined> {
  const pending = await deps.state.getPendingRemediation(batch.host.instance_id);
  if (pending === undefined) return undefined;
  const host = instance ? { ...batch.host, asg_name: instance.asg?.name } : batch.host;
  const verdict = judgePending(
    pending,
    { host, groupTags: instance?.asg?.tags, brokenGpus: broken.size, faultNow: false },
    now,
  );
  if (verdict.kind === 'wait') return undefined;
  if (verdict.kind === 'cancel') return cancelPending(pending, host, verdict.reason, deps, now);
  return remediate(pending.finding, batch, instance, deps, now);
}
