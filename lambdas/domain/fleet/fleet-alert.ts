import { alertAttributes, alertBody, alertId, alertSubject, ownerOf, statusLabel } from '../alert-message';
import { TEAM_TAG } from '../constants';
import type { FiringAlert } from '../ports';
import type { Alert, AlertStatus, Finding } from '../types';
import { type FleetFinding, type FleetSubject, TEAM_SUBJECT_PREFIX } from './fleet-rule';

/**
 * The scope under which the fleet evaluator keeps its firing alerts in the StateStore (where the
 * ingest pipeline uses the instance id): ingest never lists it, so an ingest batch never resolves a
 * fleet alert, and the evaluator finds all of its own with one read.
 */
export const FLEET_FIRING_SCOPE = 'fleet';

/** What a fleet alert can say about where: an instance (from EC2) or a team. */
type Where = FleetSubject | { readonly kind: 'unknown' };

function whereLines(finding: Finding, where: Where): string[] {
  if (where.kind === 'team') return [`  team: ${where.team}`];
  if (where.kind === 'unknown') return [`  ${finding.instance_id} (${finding.instance_type})`];
  const i = where.instance;
  const owner = ownerOf(i.tags);
  return [
    `  instance: ${i.instance_id} (${i.instance_type})`,
    `  region: ${i.region}${i.az === undefined ? '' : `, AZ ${i.az}`}`,
    `  Auto Scaling group: ${i.asg_name ?? 'none'}`,
    `  lifecycle: ${i.lifecycle}, launched ${i.launch_time}`,
    ...(owner === '' ? [] : [`  owner: ${owner}`]),
  ];
}

function build(finding: Finding, where: Where, status: AlertStatus): Alert {
  const id = alertId(finding);
  const label = statusLabel(finding, status);
  const head =
    where.kind === 'team'
      ? `[${label}] ${finding.rule} team ${where.team}: `
      : `[${label}] ${finding.rule} ${finding.instance_id} ${finding.instance_type}: `;
  const tags =
    where.kind === 'instance' ? where.instance.tags : where.kind === 'team' ? { [TEAM_TAG]: where.team } : {};
  return {
    id,
    finding,
    subject: alertSubject(head + finding.summary),
    body: alertBody(finding, status, whereLines(finding, where), id),
    attributes: alertAttributes(finding, status, tags),
    status,
  };
}

/**
 * The alert of a fleet finding (docs/design.md §7): the same id scheme, subject form, body sections
 * and SNS message attributes as an ingest alert (`severity`, `rule`, `instance_type`, `status`, and
 * `team`/`job` when known, so a team's filter policy gets its fleet alerts too). An instance subject is
 * described from what EC2 says (region, AZ, group, lifecycle, tags); a team subject by its name.
 *
 * @param fleetFinding - the finding and whom it is about
 * @returns the firing alert
 * @example
 * toFleetAlert(f).subject; // "[WARNING] agent_silent i-0abc… p5.48xlarge: no batch for 12 min: $55.04/h of GPUs unmonitored"
 */
export function toFleetAlert(fleetFinding: FleetFinding): Alert {
  return build(fleetFinding.finding, fleetFinding.subject, 'firing');
}

/**
 * The firing record of a sent fleet alert, kept under {@link FLEET_FIRING_SCOPE}.
 *
 * @param alert - the alert that was sent
 * @returns the record the resolve message is later built from
 */
export function fleetFiringRecord(alert: Alert): FiringAlert {
  const f = alert.finding;
  return {
    instance_id: FLEET_FIRING_SCOPE,
    alert_id: alert.id,
    rule: f.rule,
    severity: f.severity,
    instance_type: f.instance_type,
    since: f.at,
    summary: f.summary,
  };
}

/**
 * The resolve message of a firing fleet alert: same id, rule and severity (same topic), `RESOLVED`,
 * nothing to do. The subject (instance or `team:<name>`) is read back from the alert id.
 *
 * @param firing - the firing record ({@link fleetFiringRecord})
 * @param now - the evaluator's clock
 * @returns the resolved alert
 */
export function fleetResolvedAlert(firing: FiringAlert, now: Date): Alert {
  const afterRule = firing.alert_id.slice(firing.rule.length + 1);
  const hash = afterRule.indexOf('#');
  const subjectId = hash < 0 ? afterRule : afterRule.slice(0, hash);
  const variant = hash < 0 ? undefined : afterRule.slice(hash + 1);
  const finding: Finding = {
    rule: firing.rule,
    severity: firing.severity,
    action: 'none',
    instance_id: subjectId,
    instance_type: firing.instance_type,
    at: now.toISOString(),
    summary: firing.summary,
    remedy: 'Nothing: the condition no longer holds.',
    evidence: { firing_since: firing.since, resolved_at: now.toISOString() },
    ...(variant === undefined ? {} : { variant }),
  };
  const where: Where = subjectId.startsWith(TEAM_SUBJECT_PREFIX)
    ? { kind: 'team', team: subjectId.slice(TEAM_SUBJECT_PREFIX.length) }
    : { kind: 'unknown' };
  return build(finding, where, 'resolved');
}
