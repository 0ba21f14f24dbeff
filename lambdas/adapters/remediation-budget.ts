import type { RemediationBudget, RemediationRecord } from '../domain/ports';
import { isoToMs } from './iso-time';

/** A taken budget slot, as both state stores keep it. */
export interface BudgetSlot {
  /** Slot number, 0 ≤ slot < the limit it was taken under. */
  readonly slot: number;
  /** When it was taken, epoch ms; it counts until `at_ms + windowS × 1000`. */
  readonly at_ms: number;
}

/** The budget scope of an Auto Scaling group's replacements. */
export function groupScope(asgName: string): string {
  return `asg#${asgName}`;
}

/** The budget scope of the whole fleet's replacements. */
export const FLEET_SCOPE = 'fleet';

/**
 * The lease id of a reservation: the instance and the reservation time, so a retried call for the
 * same decision finds its own lease and two decisions never share one.
 *
 * @param record - the reserved remediation
 * @returns `<instance id>@<at>`
 */
export function leaseIdFor(record: RemediationRecord): string {
  return `${record.instance_id}@${record.at}`;
}

/**
 * Counts the slots of one budget scope still inside the rolling window and picks the lowest free one.
 *
 * @param slots - the scope's slots as stored (any age)
 * @param limit - the budget, count ≥ 0
 * @param cutoffMs - `at − windowS × 1000`: a slot taken at or before it is free again
 * @returns `used` (slots taken after the cutoff) and `free` (the lowest free slot number below
 *   `limit`), or no `free` when `used ≥ limit`
 */
export function pickBudgetSlot(
  slots: readonly BudgetSlot[],
  limit: number,
  cutoffMs: number,
): { used: number; free?: number } {
  const live = new Set(slots.filter((s) => s.at_ms > cutoffMs).map((s) => s.slot));
  const used = live.size;
  if (used >= limit) return { used };
  for (let slot = 0; slot < limit; slot += 1) if (!live.has(slot)) return { used, free: slot };
  return { used };
}

/**
 * The times a reservation is judged by.
 *
 * @param record - the remediation (its `at` is the reservation time)
 * @param leaseS - lease length, s
 * @param budget - the budgets, when the remediation is a replacement in a group
 * @returns `atMs`, `leaseUntilMs` (= at + lease) and `cutoffMs` (= at − window; `-Infinity` without budget)
 * @throws {TypeError} when `record.at` is not an ISO 8601 time
 */
export function reservationTimes(
  record: RemediationRecord,
  leaseS: number,
  budget: RemediationBudget | undefined,
): { atMs: number; leaseUntilMs: number; cutoffMs: number } {
  const atMs = isoToMs(record.at, 'record.at');
  return {
    atMs,
    leaseUntilMs: atMs + leaseS * 1000,
    cutoffMs: budget === undefined ? Number.NEGATIVE_INFINITY : atMs - budget.windowS * 1000,
  };
}

/** The budget scope of an Auto Scaling group's reboots. */
export function rebootGroupScope(asgName: string): string {
  return `reboot#asg#${asgName}`;
}

/** The budget scope of the whole fleet's reboots. */
export const REBOOT_FLEET_SCOPE = 'reboot#fleet';

/** What a reservation spends: its action, its group (if any) and the budgets. */
export interface BudgetSpend {
  /** `replace` or `reboot` (a quarantine spends nothing). */
  readonly action: 'replace' | 'reboot';
  /** The real group; always set for a `replace`, absent for a reboot outside a group. */
  readonly asgName?: string;
  readonly budget: RemediationBudget;
}

/**
 * Whether a reservation request spends budget: a `replace` in a named group, or any `reboot`, with
 * budgets given.
 *
 * @param record - the remediation
 * @param budget - the budgets, if any
 * @returns what it spends, else undefined
 */
export function budgetedGroup(
  record: RemediationRecord,
  budget: RemediationBudget | undefined,
): BudgetSpend | undefined {
  if (budget === undefined || record.action === 'quarantine') return undefined;
  if (record.action === 'replace') {
    if (record.asg_name === undefined) return undefined;
    return { action: 'replace', asgName: record.asg_name, budget };
  }
  return { action: 'reboot', ...(record.asg_name === undefined ? {} : { asgName: record.asg_name }), budget };
}

/**
 * The budget scopes a record's reservation spends or holds, group first: `asg#<group>` and `fleet`
 * for a replacement, `reboot#asg#<group>` (in a group) and `reboot#fleet` for a reboot.
 *
 * @param action - the record's action
 * @param asgName - the record's group, if any
 * @returns the scope names (none for a quarantine, or a replacement outside a group)
 */
export function scopesOf(action: RemediationRecord['action'], asgName: string | undefined): string[] {
  if (action === 'reboot')
    return asgName === undefined ? [REBOOT_FLEET_SCOPE] : [rebootGroupScope(asgName), REBOOT_FLEET_SCOPE];
  if (action === 'replace' && asgName !== undefined) return [groupScope(asgName), FLEET_SCOPE];
  return [];
}

/**
 * The budgets a reservation spends, in the order they are checked: the group's, then the fleet's.
 *
 * @param spend - what is spent (from {@link budgetedGroup})
 * @returns per scope: its name, its limit, and the refusal when it has no free slot
 */
export function budgetScopes(
  spend: BudgetSpend,
): readonly { scope: string; limit: number; refusal: 'group_budget' | 'fleet_budget' }[] {
  return scopesOf(spend.action, spend.asgName).map((scope, i, all) =>
    i === 0 && all.length === 2
      ? { scope, limit: spend.budget.groupLimit, refusal: 'group_budget' as const }
      : { scope, limit: spend.budget.fleetLimit, refusal: 'fleet_budget' as const },
  );
}
