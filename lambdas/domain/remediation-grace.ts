import type { Host } from '../contract';
import { MS_PER_SECOND, REMEDIATION_OPT_OUT_TAG } from './constants';
import type { PendingRemediation } from './ports';
import type { Finding, RemediationDecision } from './types';

/**
 * The grace period (docs/remediation.md): with `remediationDelayS` > 0 a reboot or replacement is
 * first announced ("replacing i-… in N minutes", a `scheduled` decision; the state store keeps it
 * pending), carried out by the instance's first batch at or after its due time, and cancelled when
 * the instance recovered or a human acknowledged (the opt-out tag) before. Pure: the application
 * service reads and writes the pending record.
 */

/** The default grace period, s: 0, act at once (as without one). */
export const DEFAULT_REMEDIATION_DELAY_S = 0;

/** The longest grace period accepted, s: one day (a longer wait is a human's decision, not a delay). */
export const MAX_REMEDIATION_DELAY_S = 86_400;

/**
 * Validates a grace period.
 *
 * @param delayS - seconds between the notice and the action
 * @param field - the setting's name, for the message (`remediationDelayS`, `REMEDIATION_DELAY_S`, `--remediation-delay-s`)
 * @returns `delayS` unchanged
 * @throws {RangeError} naming the field unless an integer in 0..{@link MAX_REMEDIATION_DELAY_S}
 */
export function checkRemediationDelayS(delayS: number, field: string): number {
  if (!Number.isInteger(delayS) || delayS < 0 || delayS > MAX_REMEDIATION_DELAY_S) {
    throw new RangeError(
      `Expected \`${field}\` to be whole seconds in 0..${MAX_REMEDIATION_DELAY_S} (0 = act at once), got \`${delayS}\`.`,
    );
  }
  return delayS;
}

/**
 * Parses a grace period given as text (the ingest Lambda's `REMEDIATION_DELAY_S`, a CLI value).
 *
 * @param raw - whole seconds as text; undefined or blank = {@link DEFAULT_REMEDIATION_DELAY_S}
 * @param field - the setting's name, for the message
 * @returns the delay, s
 * @throws {RangeError} naming the field and the text unless whole seconds in 0..{@link MAX_REMEDIATION_DELAY_S}
 */
export function parseRemediationDelayS(raw: string | undefined, field: string): number {
  if (raw === undefined || raw.trim() === '') return DEFAULT_REMEDIATION_DELAY_S;
  const n = /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (Number.isNaN(n)) {
    throw new RangeError(
      `Expected \`${field}\` to be whole seconds in 0..${MAX_REMEDIATION_DELAY_S} (0 = act at once), got \`${raw}\`.`,
    );
  }
  return checkRemediationDelayS(n, field);
}

/**
 * Why remediation is opted out for this host, if it is: the tag `gpu-sentinel:remediation=off` on
 * the instance or its Auto Scaling group (a human's acknowledgement).
 *
 * @param host - the (enriched) host, its tags
 * @param groupTags - the group's tags, when known
 * @returns the reason, or undefined when not opted out
 */
export function optOutReason(
  host: Pick<Host, 'tags' | 'asg_name'>,
  groupTags: Readonly<Record<string, string>> | undefined,
): string | undefined {
  const off = (tags: Readonly<Record<string, string>> | undefined) =>
    tags?.[REMEDIATION_OPT_OUT_TAG]?.trim().toLowerCase() === 'off';
  if (off(host.tags)) return `opt-out tag ${REMEDIATION_OPT_OUT_TAG}=off on the instance`;
  if (off(groupTags)) {
    return `opt-out tag ${REMEDIATION_OPT_OUT_TAG}=off on Auto Scaling group ${host.asg_name ?? '?'}`;
  }
  return undefined;
}

/** What `decided` says in words: "replacing" or "rebooting" (a replace outside a group quarantines). */
function doing(pending: Pick<PendingRemediation, 'action'>, asgName: string | undefined): string {
  if (pending.action === 'reboot') return 'rebooting';
  return asgName === undefined ? 'quarantining' : 'replacing';
}

/**
 * The pending record a reboot or replacement decision starts, due `delayS` after `now`.
 *
 * @param decision - a `reboot` or `replace` decision
 * @param finding - the fault that decided it
 * @param delayS - the grace period, s > 0
 * @param now - decision time
 * @returns the record, `last_fault_at` = `decided_at`
 */
export function pendingOf(
  decision: RemediationDecision & { action: 'reboot' | 'replace' },
  finding: Finding,
  delayS: number,
  now: Date,
): PendingRemediation {
  const at = now.toISOString();
  return {
    instance_id: decision.instance_id,
    action: decision.action,
    finding,
    decided_at: at,
    due_at: new Date(now.getTime() + delayS * MS_PER_SECOND).toISOString(),
    last_fault_at: at,
  };
}

/**
 * The notice: "replacing i-… in N minutes" (a `scheduled` decision, critical: a job can checkpoint).
 *
 * @param decision - the reboot or replace decision it defers
 * @param pending - its pending record
 * @param delayS - the grace period, s
 * @returns the decision, action `scheduled`, its reason leading with what and when
 */
export function scheduledDecision(
  decision: RemediationDecision,
  pending: PendingRemediation,
  delayS: number,
): RemediationDecision {
  const minutes = Math.round((delayS / 60) * 10) / 10;
  return {
    ...decision,
    action: 'scheduled',
    reason: `${doing(pending, decision.asg_name)} ${decision.instance_id} in ${minutes} minutes (at ${pending.due_at}) so a job can checkpoint; cancelled if the instance recovers or is tagged ${REMEDIATION_OPT_OUT_TAG}=off before. Why: ${decision.reason}`,
    pending: { action: pending.action, decided_at: pending.decided_at, due_at: pending.due_at },
  };
}

/**
 * A fault while its reboot or replacement is announced and not yet due: a recorded `skip`.
 *
 * @param decision - what the policy decided for the fault
 * @param pending - the pending record (after this fault's update)
 * @returns the decision, action `skip`
 */
export function waitingDecision(
  decision: RemediationDecision,
  pending: PendingRemediation,
): RemediationDecision {
  return {
    ...decision,
    action: 'skip',
    reason: `${doing(pending, decision.asg_name)} ${decision.instance_id} is announced (at ${pending.decided_at}) and due at ${pending.due_at}; the fault is still there`,
    pending: { action: pending.action, decided_at: pending.decided_at, due_at: pending.due_at },
  };
}

/** What to do with a pending remediation now. */
export type PendingVerdict =
  | { readonly kind: 'wait' }
  | { readonly kind: 'run' }
  | { readonly kind: 'cancel'; readonly reason: string };

/**
 * Judges a pending remediation on a batch of its instance (docs/remediation.md, grace period), in
 * this order: opted out (the tag on the instance or group: a human acknowledged) → `cancel` at any
 * time; not due → `wait`; recovered (no fault since the notice, `last_fault_at` ≤ `decided_at`, and
 * no GPU of the instance marked broken) → `cancel`; else → `run`.
 *
 * @param pending - the pending record
 * @param context - the host (tags), its group's tags, the instance's broken marks (count), and
 *   whether this batch has a fault
 * @param now - the server's clock
 * @returns the verdict, a cancellation with its reason
 */
export function judgePending(
  pending: PendingRemediation,
  context: {
    readonly host: Pick<Host, 'tags' | 'asg_name'>;
    readonly groupTags?: Readonly<Record<string, string>>;
    readonly brokenGpus: number;
    readonly faultNow: boolean;
  },
  now: Date,
): PendingVerdict {
  const optOut = optOutReason(context.host, context.groupTags);
  if (optOut !== undefined) return { kind: 'cancel', reason: `${optOut}: a human acknowledged` };
  if (now.getTime() < Date.parse(pending.due_at)) return { kind: 'wait' };
  const faulted = context.faultNow || Date.parse(pending.last_fault_at) > Date.parse(pending.decided_at);
  if (!faulted && context.brokenGpus === 0) {
    return {
      kind: 'cancel',
      reason: `the instance recovered: no fault since the notice at ${pending.decided_at} and no GPU marked broken`,
    };
  }
  return { kind: 'run' };
}

/**
 * The cancellation of a pending remediation (an `info` decision).
 *
 * @param pending - the record cancelled
 * @param host - the (enriched) host
 * @param reason - why (`judgePending`)
 * @param now - decision time
 * @param dryRun - true in local mode or a mode other than `replace`
 * @param alertId - the fault's alert id
 * @returns the decision, action `cancelled`
 */
export function cancelledDecision(
  pending: PendingRemediation,
  host: Pick<Host, 'asg_name' | 'region'>,
  reason: string,
  now: Date,
  dryRun: boolean,
  alertId: string,
): RemediationDecision {
  const f = pending.finding;
  return {
    rule: f.rule,
    severity: f.severity,
    instance_id: pending.instance_id,
    ...(f.gpu_index === undefined ? {} : { gpu_index: f.gpu_index }),
    ...(host.asg_name === undefined ? {} : { asg_name: host.asg_name }),
    region: host.region,
    action: 'cancelled',
    reason: `${doing(pending, host.asg_name)} ${pending.instance_id} (announced at ${pending.decided_at}, due ${pending.due_at}) is cancelled: ${reason}`,
    at: now.toISOString(),
    alert_id: alertId,
    dry_run: dryRun,
    pending: { action: pending.action, decided_at: pending.decided_at, due_at: pending.due_at },
  };
}
