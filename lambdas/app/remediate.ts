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
  MS_PER_SECOND,
  REMEDIATION_LEASE_S,
  type RemediationDecision,
  repeatedEscalation,
} from '../domain';
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
  const desired = instance?.asg?.desired_capacity;
  const since = new Date(now.getTime() - limits.windowS * MS_PER_SECOND);
  let decision = decideRemediation(
    {
      finding,
      alertId: alertId(finding),
      host,
      mode: deps.remediationMode,
      existing: await deps.state.getRemediation(host.instance_id),
      ...(finding.action === 'reset' && pausedBy === undefined
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
