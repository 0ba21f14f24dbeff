import type { Host } from '../contract';
import { alertAttributes, alertSubject } from './alert-message';
import type { Alert, Finding, Severity } from './types';

/**
 * Bounded fan-out (docs/remediation.md): one batch, or one instance, can only send so many alerts;
 * the rest go into one summary alert with the counts, so a batch of 256 distinct Xid codes is a
 * handful of messages and a bounded number of state calls, not hundreds.
 */

/** How many alerts one batch and one instance may send. */
export interface AlertBounds {
  /**
   * Most alerts one batch sends one by one (point findings most severe first, then window
   * findings), count ≥ 1; the rest are counted in one summary alert.
   * @default 10
   */
  readonly perBatch: number;
  /**
   * Most distinct alerts one instance sends one by one within `windowS` (over all its batches),
   * count ≥ 1; the rest are counted in its summary alert.
   * @default 20
   */
  readonly perInstance: number;
  /**
   * The window of the per-instance bound, s > 0.
   * @default 3600 (the alert cooldown: an alert that still fires is sent again after it)
   */
  readonly windowS: number;
  /**
   * Most lines (rule and variant with their count) a summary alert lists, count ≥ 1.
   * @default 20
   */
  readonly listedLines: number;
}

/** The default bounds (docs/remediation.md). */
export const DEFAULT_ALERT_BOUNDS: AlertBounds = Object.freeze({
  perBatch: 10,
  perInstance: 20,
  windowS: 3600,
  listedLines: 20,
});

/** The scope `StateStore.recordFault` keeps an instance's recent alert ids under (the per-instance bound). */
export function instanceAlertScope(instanceId: string): string {
  return `alerts#${instanceId}`;
}

const SEVERITY_RANK: Readonly<Record<Severity, number>> = { critical: 0, warning: 1, info: 2 };

/**
 * The summary alert of the findings a batch did not send one by one: id `summary:<instance id>`
 * (sent once per cooldown), the most severe of their severities, the counts by rule and variant.
 *
 * @param folded - the findings over the bounds (≥ 1), in the order they were judged
 * @param host - the batch's host
 * @param bounds - the bounds (for the text and the lines listed)
 * @returns the alert
 * @throws {RangeError} when `folded` is empty
 */
export function summaryAlert(folded: readonly Finding[], host: Host, bounds: AlertBounds): Alert {
  const [first] = folded;
  if (first === undefined)
    throw new RangeError('Expected at least one folded finding for a summary alert, got none');
  const severity = folded.reduce<Severity>(
    (worst, f) => (SEVERITY_RANK[f.severity] < SEVERITY_RANK[worst] ? f.severity : worst),
    'info',
  );
  const counts = new Map<string, number>();
  for (const f of folded) {
    const key = f.variant === undefined ? f.rule : `${f.rule}#${f.variant}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const byRule = new Map<string, number>();
  for (const f of folded) byRule.set(f.rule, (byRule.get(f.rule) ?? 0) + 1);
  const lines = [...counts].sort(([a, m], [b, n]) => n - m || a.localeCompare(b));
  const listed = lines.slice(0, bounds.listedLines).map(([k, n]) => `  ${k}: ${n}`);
  const rules = [...byRule].map(([r, n]) => `${r} ${n}`).join(', ');
  const id = `summary:${host.instance_id}`;
  const finding: Finding = {
    rule: first.rule,
    severity,
    action: 'none',
    instance_id: host.instance_id,
    instance_type: host.instance_type,
    at: first.at,
    summary: `${folded.length} more finding(s) over the alert bounds (${rules})`,
    remedy:
      'Each finding is stored and judged (remediation included); look at the instance as a whole before acting on one of them.',
    evidence: {
      folded: folded.length,
      per_batch: bounds.perBatch,
      per_instance: bounds.perInstance,
      window_s: bounds.windowS,
    },
  };
  const body = [
    `What: ${finding.summary}. One batch sends at most ${bounds.perBatch} alerts one by one, one instance at most ${bounds.perInstance} distinct alerts in ${bounds.windowS} s; these were not sent one by one.`,
    `Severity: ${severity} (the most severe folded)`,
    `First seen: ${first.at}`,
    '',
    'Where:',
    `  instance: ${host.instance_id} (${host.instance_type})`,
    `  region: ${host.region}`,
    `  Auto Scaling group: ${host.asg_name ?? 'none'}`,
    '',
    `Counts (${lines.length} kind(s)):`,
    ...listed,
    ...(lines.length > listed.length ? [`  … and ${lines.length - listed.length} more kind(s)`] : []),
    '',
    `What to do: ${finding.remedy}`,
    '',
    `Alert id: ${id}`,
  ].join('\n');
  return {
    id,
    finding,
    subject: alertSubject(
      `[${severity.toUpperCase()}] summary ${host.instance_id} ${host.instance_type}: ${folded.length} more findings (${rules})`,
    ),
    body,
    attributes: { ...alertAttributes(finding, 'firing', host.tags ?? {}), summary: 'true' },
    status: 'firing',
  };
}
