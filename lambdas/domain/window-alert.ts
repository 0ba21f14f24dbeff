import type { Host } from '../contract';
import { toAlert } from './alert-message';
import type { FiringAlert } from './ports';
import type { Alert, Finding } from './types';

/**
 * The firing record of a sent window alert, kept under its instance until a batch judges the
 * condition gone (the ingest side of the alert lifecycle; the fleet's is `fleetFiringRecord`).
 *
 * @param alert - the alert that was sent (its finding a window finding)
 * @returns the record the resolve message is later built from
 */
export function windowFiringRecord(alert: Alert): FiringAlert {
  const f = alert.finding;
  return {
    instance_id: f.instance_id,
    alert_id: alert.id,
    rule: f.rule,
    severity: f.severity,
    instance_type: f.instance_type,
    since: f.at,
    summary: f.summary,
  };
}

/**
 * The resolve message of a firing window alert: same rule, instance and severity (same topic),
 * `RESOLVED`, nothing to do.
 *
 * @param firing - the firing record ({@link windowFiringRecord})
 * @param host - the instance, as the batch that judged it gone has it
 * @param now - the server's clock: the resolve time
 * @returns the resolved alert
 */
export function windowResolvedAlert(firing: FiringAlert, host: Host, now: Date): Alert {
  const finding: Finding = {
    rule: firing.rule,
    severity: firing.severity,
    action: 'none',
    instance_id: firing.instance_id,
    instance_type: firing.instance_type,
    at: now.toISOString(),
    summary: firing.summary,
    remedy: 'Nothing: the condition no longer holds over the last horizon.',
    evidence: { firing_since: firing.since, resolved_at: now.toISOString() },
  };
  return toAlert(finding, host, 'resolved');
}
