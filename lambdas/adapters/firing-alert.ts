import type { FiringAlert } from '../domain/ports';

/**
 * A stored firing-alert record (DynamoDB item or DuckDB row, same attribute names) → `FiringAlert`.
 *
 * @param r - the item or row, attributes `instance_id`, `alert_id`, `rule`, `severity`, `instance_type`, `since`, `summary`
 * @returns the firing alert
 */
export function toFiringAlert(r: Readonly<Record<string, unknown>>): FiringAlert {
  return {
    instance_id: r.instance_id as string,
    alert_id: r.alert_id as string,
    rule: r.rule as FiringAlert['rule'],
    severity: r.severity as FiringAlert['severity'],
    instance_type: r.instance_type as string,
    since: r.since as string,
    summary: r.summary as string,
  };
}
