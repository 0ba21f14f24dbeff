import type { Host } from '../contract';
import { alertAttributes, alertSubject } from './alert-message';
import type { ScopeFault } from './ports';
import type { Alert, Finding } from './types';

/**
 * Storms (docs/remediation.md): when a large share of a group faults within minutes, the cause is
 * rarely hardware (a driver, an AMI, the fabric), so the faults become one incident per group (and
 * one for the fleet) that lists the instances, and remediation in the scope pauses; as Karpenter
 * and EKS node auto-repair stop repairing past a share of unhealthy nodes.
 */

/** When faults of distinct instances are a storm. */
export interface StormLimits {
  /**
   * How far back a fault counts, s > 0.
   * @default 600 (10 minutes)
   */
  readonly windowS: number;
  /**
   * Distinct instances of one Auto Scaling group faulting within `windowS` that make a storm,
   * count ≥ 2 (whichever of this and `groupFraction` is reached first).
   * @default 3 (this module's choice: independent hardware faults of three instances of one group
   *   within 10 minutes are rare; each instance before the storm pages and is remediated, so a lower
   *   number keeps a 100-instance storm within 10 critical messages)
   */
  readonly groupInstances: number;
  /**
   * Share of the group's desired capacity faulting within `windowS` that makes a storm, 0..1; the
   * number is rounded up, and at least 2 (one instance is never a storm).
   * @default 0.2 (the share past which Karpenter's node repair stops: 20 % unhealthy)
   */
  readonly groupFraction: number;
  /**
   * Distinct instances of the whole fleet (every group, and instances outside groups) faulting
   * within `windowS` that make a fleet storm, count ≥ 2.
   * @default 10 (the fleet's replacement budget per hour)
   */
  readonly fleetInstances: number;
  /**
   * Most instance ids an incident message lists; the rest are counted, count ≥ 1.
   * @default 50
   */
  readonly listedInstances: number;
}

/** The default storm limits (docs/remediation.md). */
export const DEFAULT_STORM_LIMITS: StormLimits = Object.freeze({
  windowS: 600,
  groupInstances: 3,
  groupFraction: 0.2,
  fleetInstances: 10,
  listedInstances: 50,
});

/** The incident scope of the whole fleet. */
export const FLEET_INCIDENT_SCOPE = 'fleet';

/**
 * The incident scopes an instance's fault counts in: its group's (when it has one) and the fleet's.
 *
 * @param asgName - the instance's real Auto Scaling group, if any
 * @returns `['asg#<group>', 'fleet']` or `['fleet']`
 */
export function incidentScopes(asgName: string | undefined): string[] {
  return asgName === undefined ? [FLEET_INCIDENT_SCOPE] : [`asg#${asgName}`, FLEET_INCIDENT_SCOPE];
}

/**
 * The number of faulting instances that makes a storm in a scope.
 *
 * @param scope - `asg#<group>` or `fleet`
 * @param limits - the storm limits
 * @param desired - the group's desired capacity, when known (group scopes only)
 * @returns `fleetInstances` for the fleet; for a group min(groupInstances, max(2, ceil(groupFraction × desired)))
 */
export function stormThreshold(scope: string, limits: StormLimits, desired: number | undefined): number {
  if (scope === FLEET_INCIDENT_SCOPE) return limits.fleetInstances;
  if (desired === undefined) return limits.groupInstances;
  return Math.min(limits.groupInstances, Math.max(2, Math.ceil(desired * limits.groupFraction)));
}

/** One scope judged a storm: its members and the threshold they reached. */
export interface Storm {
  /** `asg#<group>` or `fleet`. */
  readonly scope: string;
  /** The faulting instances within the window, oldest first. */
  readonly faults: readonly ScopeFault[];
  /** The number of instances that makes a storm here. */
  readonly threshold: number;
}

/**
 * The update level of an incident: 0 when it opens (at the threshold), then one more each time the
 * instance count doubles (threshold × 2, × 4, …), so a growing storm sends a few updates, not one
 * per instance.
 *
 * @param count - instances in the incident, ≥ threshold
 * @param threshold - the scope's threshold, ≥ 1
 * @returns floor(log2(count / threshold)), ≥ 0
 */
export function incidentLevel(count: number, threshold: number): number {
  return Math.max(0, Math.floor(Math.log2(count / threshold)));
}

/** A scope for people: `Auto Scaling group g` or `the fleet`. */
function scopeLabel(scope: string): string {
  return scope === FLEET_INCIDENT_SCOPE ? 'the fleet' : `Auto Scaling group ${scope.replace(/^asg#/, '')}`;
}

/**
 * Why remediation is paused for an instance in a storm, as its decision records it.
 *
 * @param storm - the storm it is part of
 * @param windowS - the storm window, s
 * @returns e.g. `remediation paused: incident asg#g, 12 instances of Auto Scaling group g faulted within 600 s (storm at 3) …`
 */
export function stormPauseReason(storm: Storm, windowS: number): string {
  return `remediation paused: incident ${storm.scope}, ${storm.faults.length} instances of ${scopeLabel(storm.scope)} faulted within ${windowS} s (a storm from ${storm.threshold}); a correlated cause (driver, AMI, fabric) is rarely hardware, a human decides`;
}

/**
 * The incident message of a storm: critical when it opens (level 0), a warning for each update
 * (the instance count doubled). Its id is `incident:<scope>` (`#<level>` for an update), so the
 * alert lifecycle sends each once per cooldown, whichever invocation sees it first.
 *
 * @param storm - the storm
 * @param finding - the fault of the batch that saw it (its rule and summary are quoted)
 * @param host - that batch's host (instance type)
 * @param limits - the storm limits (window, instances listed)
 * @param level - 0 for the opening message, else the update level @default incidentLevel of the storm
 * @returns the alert
 */
export function incidentAlert(
  storm: Storm,
  finding: Finding,
  host: Host,
  limits: StormLimits,
  level: number = incidentLevel(storm.faults.length, storm.threshold),
): Alert {
  const count = storm.faults.length;
  const id = level === 0 ? `incident:${storm.scope}` : `incident:${storm.scope}#${level}`;
  const listed = storm.faults.slice(0, limits.listedInstances).map((f) => `  ${f.instance_id} (${f.at})`);
  const more = count - listed.length;
  const incident: Finding = {
    rule: finding.rule,
    severity: level === 0 ? 'critical' : 'warning',
    action: 'none',
    instance_id: finding.instance_id,
    instance_type: host.instance_type,
    at: storm.faults[0]?.at ?? finding.at,
    summary: `${count} instances of ${scopeLabel(storm.scope)} faulted within ${limits.windowS} s; remediation paused`,
    remedy:
      'Look for the common cause (a driver or AMI rollout, the fabric, a bad job) before replacing anything; remediation in this scope resumes once fewer instances fault within the window.',
    evidence: {
      instances: count,
      storm_threshold: storm.threshold,
      window_s: limits.windowS,
      latest: `${finding.rule}: ${finding.summary}`,
    },
  };
  const body = [
    `${level === 0 ? 'Incident opened' : `Incident update ${level}`}: ${incident.summary}.`,
    `A storm is ${storm.threshold} or more instances of ${scopeLabel(storm.scope)} faulting within ${limits.windowS} s. Every instance is still decided and recorded (action skip, reason "remediation paused"); none is replaced, rebooted or paged one by one.`,
    `Latest fault: ${finding.instance_id} ${finding.rule}: ${finding.summary}`,
    '',
    `Instances (${count}):`,
    ...listed,
    ...(more > 0 ? [`  … and ${more} more`] : []),
    '',
    `What to do: ${incident.remedy}`,
    '',
    `Alert id: ${id}`,
  ].join('\n');
  return {
    id,
    finding: incident,
    subject: alertSubject(
      `[${incident.severity.toUpperCase()}] incident ${storm.scope}: ${count} instances faulted in ${limits.windowS} s (${finding.rule}); remediation paused`,
    ),
    body,
    attributes: { ...alertAttributes(incident, 'firing', {}), incident: storm.scope },
    status: 'firing',
  };
}
