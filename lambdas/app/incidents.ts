import type { Host } from '../contract';
import {
  type Alert,
  DEFAULT_STORM_LIMITS,
  type Finding,
  incidentAlert,
  incidentLevel,
  incidentScopes,
  type Storm,
  stormPauseReason,
  stormThreshold,
} from '../domain';
import type { PipelineDeps } from './pipeline';

/**
 * True for a point finding that remediates (action `replace` or `reset`): the faults a storm is
 * made of, and the ones whose alerts an incident takes over.
 *
 * @param finding - a point finding
 */
export function isFault(finding: Finding): boolean {
  return finding.action === 'replace' || finding.action === 'reset';
}

/**
 * Judges whether the batch's faults are part of a storm (docs/remediation.md): records the
 * instance's fault in its group's and the fleet's incident scope (`StateStore.recordFault`), and
 * for each scope whose faulting instances reach its threshold sends the incident's opening message
 * (critical, once per cooldown) and, when the count has doubled since, its update (a warning).
 *
 * @param faults - the batch's faults (`isFault`), most severe first; none → nothing is recorded
 * @param host - the batch's host, with the real group (from Auto Scaling when enriched)
 * @param desired - the group's desired capacity, when known
 * @param deps - state store and storm limits
 * @param now - the server's clock (the fault's time: arrival, not the agent's clock)
 * @param send - publishes an alert once (the pipeline's publish-then-record)
 * @returns why remediation is paused for this instance (the group's storm first), or undefined
 * @throws whatever the state store throws when it cannot be reached
 */
export async function judgeStorms(
  faults: readonly Finding[],
  host: Host,
  desired: number | undefined,
  deps: Pick<PipelineDeps, 'state' | 'stormLimits'>,
  now: Date,
  send: (alert: Alert) => Promise<boolean>,
): Promise<string | undefined> {
  const [first] = faults;
  if (first === undefined) return undefined;
  const limits = deps.stormLimits ?? DEFAULT_STORM_LIMITS;
  const storms: Storm[] = [];
  for (const scope of incidentScopes(host.asg_name)) {
    const members = await deps.state.recordFault(scope, host.instance_id, now.toISOString(), limits.windowS);
    const threshold = stormThreshold(scope, limits, desired);
    if (members.length >= threshold) storms.push({ scope, faults: members, threshold });
  }
  for (const storm of storms) {
    await send(incidentAlert(storm, first, host, limits, 0));
    if (incidentLevel(storm.faults.length, storm.threshold) > 0)
      await send(incidentAlert(storm, first, host, limits));
  }
  const [storm] = storms;
  return storm === undefined ? undefined : stormPauseReason(storm, limits.windowS);
}
