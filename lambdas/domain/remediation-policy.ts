import type { Host } from '../contract';
import { MS_PER_SECOND, QUARANTINE_TAG, REMEDIATION_OPT_OUT_TAG } from './constants';
import type { RemediationRecord } from './ports';
import type { RemediationMode } from './remediation-mode';
import type { Finding, RemediationAction, RemediationDecision } from './types';

/** Per-group rate limits of instance replacement (docs/design.md §8). */
export interface RemediationLimits {
  /**
   * Most replacements per Auto Scaling group in the rolling window, count ≥ 0.
   * @default 2 (docs/design.md §8)
   */
  readonly maxPerGroupPerWindow: number;
  /**
   * The rolling window of the per-group limit, s.
   * @default 3600 (docs/design.md §8: per hour)
   */
  readonly windowS: number;
  /**
   * Most replacements in the window as a fraction of the group's desired capacity (when known), 0..1;
   * the resulting number is floored, but at least {@link RemediationLimits.minPerGroup}.
   * @default 0.1 (docs/design.md §8: ≤ 10 % of desired capacity)
   */
  readonly maxFractionOfDesired: number;
  /**
   * Floor of the capacity-fraction limit, count ≥ 0 (so a group of 4 can still replace one).
   * @default 1
   */
  readonly minPerGroup: number;
  /**
   * Most replacements of the whole fleet (every group this deployment remediates) in the rolling
   * window, count ≥ 0: a circuit breaker for a fleet-wide cause (a bad driver, a bad AMI, a forged
   * storm) that would otherwise drain every group at its own limit.
   * @default 10
   */
  readonly maxFleetPerWindow: number;
  /**
   * Most reboots per Auto Scaling group in the rolling window `windowS`, count ≥ 0 (a reboot takes
   * the instance out for minutes, so a group is not rebooted wholesale).
   * @default 4 (this module's choice: twice the replacements, a reboot costs minutes, not an instance)
   */
  readonly maxRebootsPerGroupPerWindow: number;
  /**
   * Most reboots of the whole fleet in the rolling window `windowS`, count ≥ 0.
   * @default 20 (this module's choice: twice the fleet's replacements)
   */
  readonly maxFleetRebootsPerWindow: number;
  /**
   * A reset-class fault of an instance within this many seconds after its reboot means the reset did
   * not clear it: the ladder escalates to `replace` (NVIDIA's Xid catalog: a fault that persists
   * after a GPU reset points to hardware), s > 0. Also the least time between two reboots of one instance.
   * @default 3600
   */
  readonly rebootWindowS: number;
  /**
   * Faults stamped no later than this many seconds after a reboot decision are the ones the reboot
   * is clearing (lines of the old boot still in flight; EC2 queues the reboot and the instance
   * shuts down in well under a GPU instance's boot time), not a recurrence, s ≥ 0.
   * @default 120
   */
  readonly rebootSettleS: number;
}

/**
 * The default limits: ≤ 2 per group per hour and ≤ 10 % of desired capacity, at least 1 (docs/design.md §8);
 * ≤ 10 per hour fleet-wide (this module's choice: five groups at their limit); reboots ≤ 4 per group
 * and ≤ 20 fleet-wide per hour, a repeat within 1 hour of a reboot replaces (docs/remediation.md).
 */
export const DEFAULT_REMEDIATION_LIMITS: RemediationLimits = Object.freeze({
  maxPerGroupPerWindow: 2,
  windowS: 3600,
  maxFractionOfDesired: 0.1,
  minPerGroup: 1,
  maxFleetPerWindow: 10,
  maxRebootsPerGroupPerWindow: 4,
  maxFleetRebootsPerWindow: 20,
  rebootWindowS: 3600,
  rebootSettleS: 120,
});

/** Everything the remediation policy needs to decide about one finding. */
export interface RemediationInput {
  readonly finding: Finding;
  /** The finding's alert id (`alertId(finding)`). */
  readonly alertId: string;
  readonly host: Host;
  readonly mode: RemediationMode;
  /** The instance's earlier replace/quarantine record, if any (one per instance, ever). */
  readonly existing?: RemediationRecord;
  /** The instance's last confirmed reboot, if any (`StateStore.getLastReboot`). */
  readonly lastReboot?: RemediationRecord;
  /** Recent replace records of the instance's group (the policy filters by group, action and window itself). */
  readonly recentInGroup: readonly RemediationRecord[];
  /** The group's desired capacity, instances, when known. */
  readonly groupDesiredCapacity?: number;
  /** Tags of the Auto Scaling group, when known: the opt-out tag may sit on the group (docs/design.md §8). */
  readonly groupTags?: Readonly<Record<string, string>>;
  /** @default DEFAULT_REMEDIATION_LIMITS */
  readonly limits?: RemediationLimits;
  /** True when nothing will be executed (local mode). */
  readonly dryRun: boolean;
  /**
   * Why remediation is paused for this instance, when it is part of a storm (`stormPauseReason`):
   * the decision is `skip` with this reason, recorded like any other. @default undefined (not paused)
   */
  readonly pausedBy?: string;
}

function optedOut(tags: Readonly<Record<string, string>> | undefined): boolean {
  return tags?.[REMEDIATION_OPT_OUT_TAG]?.trim().toLowerCase() === 'off';
}

/**
 * The per-group replacement limit and how it was computed.
 *
 * @param limits - the limits
 * @param desired - the group's desired capacity, if known
 * @returns `{ limit, how }`: the smaller of `maxPerGroupPerWindow` and max(minPerGroup, floor(desired × fraction))
 */
export function groupReplacementLimit(
  limits: RemediationLimits,
  desired: number | undefined,
): { limit: number; how: string } {
  const perWindow = limits.maxPerGroupPerWindow;
  if (desired === undefined) return { limit: perWindow, how: `${perWindow} per ${limits.windowS} s` };
  const byCapacity = Math.max(limits.minPerGroup, Math.floor(desired * limits.maxFractionOfDesired));
  const pct = Math.round(limits.maxFractionOfDesired * 100);
  return {
    limit: Math.min(perWindow, byCapacity),
    how: `min(${perWindow} per ${limits.windowS} s, max(${limits.minPerGroup}, floor(${pct}% of desired ${desired}) = ${byCapacity}))`,
  };
}

/**
 * Where a reset-class finding stands against the instance's last reboot: `clearing` when the fault
 * is stamped before the reboot settled (the reboot is clearing it), `recurred` when it came back
 * within `rebootWindowS` after it (the reset did not help: replace), else `none` (reboot).
 */
function againstLastReboot(
  findingAt: string,
  lastReboot: RemediationRecord | undefined,
  limits: RemediationLimits,
): { state: 'none' } | { state: 'clearing' | 'recurred'; afterS: number; at: string } {
  if (lastReboot === undefined) return { state: 'none' };
  const afterS = Math.round((Date.parse(findingAt) - Date.parse(lastReboot.at)) / MS_PER_SECOND);
  if (!(afterS <= limits.rebootWindowS)) return { state: 'none' };
  return { state: afterS <= limits.rebootSettleS ? 'clearing' : 'recurred', afterS, at: lastReboot.at };
}

/**
 * Decides what to do about a finding (docs/design.md §8, docs/remediation.md). A finding with action
 * `reset` climbs the ladder (reboot, then replace when the fault comes back); one with action
 * `replace` can lead to `replace` or `quarantine`. Checks, in this order; the first that applies decides:
 *
 * 1. mode `off` → `skip`;
 * 2. finding action `none` → `skip`; `notify` → `notify`; part of a storm (`pausedBy`) → `skip`
 *    with the incident's reason; `reset` on an instance already being
 *    replaced or quarantined (`existing`) → `skip`: a reset of a GPU on its way out helps nobody;
 * 3. mode `notify` → `notify` (says what `replace` mode would have done);
 * 4. opt-out tag `gpu-sentinel:remediation=off` on the instance or its group → `skip`;
 * 5. `reset`: stamped within `rebootSettleS` after the instance's last reboot → `skip` (the reboot
 *    is clearing it); within `rebootWindowS` after it → on to step 6 as a `replace` (the reset did
 *    not clear it); else → `reboot` (EC2 RebootInstances resets every GPU; budgets are checked when
 *    it is reserved);
 * 6. already replaced or quarantined (`existing`) → `skip` (one replacement per instance, ever);
 * 7. in an Auto Scaling group: replacements of that group in the last `windowS` (records with action
 *    `replace`, `now − windowS < at ≤ now`) at or over the limit → `escalate` with the numbers; else
 *    `replace` (SetInstanceHealth Unhealthy);
 * 8. not in a group → `quarantine` (tag `gpu-sentinel:quarantine=<rule>` and page; never terminate).
 *
 * @param input - see {@link RemediationInput}
 * @param now - decision time
 * @returns the decision, with `reason` saying exactly why; `dry_run` true when `input.dryRun` or the mode is not `replace`
 */
export function decideRemediation(input: RemediationInput, now: Date): RemediationDecision {
  const { finding, host, mode } = input;
  const limits = input.limits ?? DEFAULT_REMEDIATION_LIMITS;
  const decide = (action: RemediationAction, reason: string): RemediationDecision => ({
    rule: finding.rule,
    severity: finding.severity,
    instance_id: finding.instance_id,
    ...(finding.gpu_index === undefined ? {} : { gpu_index: finding.gpu_index }),
    ...(host.asg_name === undefined ? {} : { asg_name: host.asg_name }),
    region: host.region,
    action,
    reason,
    at: now.toISOString(),
    alert_id: input.alertId,
    dry_run: input.dryRun || mode !== 'replace',
  });

  if (mode === 'off') return decide('skip', 'remediation mode is off');
  if (finding.action === 'none') return decide('skip', 'the finding asks for no action');
  if (finding.action === 'notify') return decide('notify', 'the finding asks only for a notification');
  if (input.pausedBy !== undefined) return decide('skip', input.pausedBy);
  const reset = finding.action === 'reset';
  if (reset && input.existing !== undefined) {
    return decide(
      'skip',
      `the GPU needs a reset, but the instance is already ${input.existing.action === 'replace' ? 'being replaced' : 'quarantined'} (${input.existing.at}, rule ${input.existing.rule})`,
    );
  }
  const wouldDo =
    host.asg_name === undefined
      ? 'quarantine it (outside an Auto Scaling group)'
      : `replace it in Auto Scaling group ${host.asg_name}`;
  if (mode === 'notify') {
    return decide(
      'notify',
      `remediation mode is notify: replace mode would ${reset ? `reboot it (a reboot resets every GPU), then ${wouldDo} if the fault came back within ${limits.rebootWindowS} s` : wouldDo}`,
    );
  }
  if (optedOut(host.tags)) {
    return decide('skip', `opt-out tag ${REMEDIATION_OPT_OUT_TAG}=off on the instance; a human must act`);
  }
  if (optedOut(input.groupTags)) {
    return decide(
      'skip',
      `opt-out tag ${REMEDIATION_OPT_OUT_TAG}=off on Auto Scaling group ${host.asg_name ?? '?'}; a human must act`,
    );
  }
  let because = '';
  if (reset) {
    const reboot = againstLastReboot(finding.at, input.lastReboot, limits);
    if (reboot.state === 'clearing') {
      return decide(
        'skip',
        reboot.afterS < 0
          ? `the reboot at ${reboot.at} is clearing this fault (stamped ${-reboot.afterS} s before it: the episode the reboot answers)`
          : `the reboot at ${reboot.at} is clearing this fault (stamped ${reboot.afterS} s after it, within the ${limits.rebootSettleS} s it takes to go down)`,
      );
    }
    if (reboot.state === 'none') {
      return decide(
        'reboot',
        `the GPU needs a reset: EC2 RebootInstances resets every GPU of the instance; a fault within ${limits.rebootWindowS} s after it escalates to ${host.asg_name === undefined ? 'quarantine' : 'replace'}`,
      );
    }
    because = `the fault came back ${reboot.afterS} s after the reboot at ${reboot.at} (within ${limits.rebootWindowS} s): the reset did not clear it; `;
  }
  if (input.existing !== undefined) {
    const e = input.existing;
    return decide(
      'skip',
      `already ${e.action === 'replace' ? 'replaced' : 'quarantined'} at ${e.at} (rule ${e.rule}): one replacement per instance, ever`,
    );
  }
  if (host.asg_name !== undefined) {
    const since = now.getTime() - limits.windowS * MS_PER_SECOND;
    const recent = input.recentInGroup.filter((r) => {
      const t = Date.parse(r.at);
      return r.asg_name === host.asg_name && r.action === 'replace' && t > since && t <= now.getTime();
    }).length;
    const { limit, how } = groupReplacementLimit(limits, input.groupDesiredCapacity);
    if (recent >= limit) {
      return decide(
        'escalate',
        `${because}rate limit: ${recent} replacement(s) in Auto Scaling group ${host.asg_name} in the last ${limits.windowS} s, limit ${limit} = ${how}; a human must replace it`,
      );
    }
    return decide(
      'replace',
      `${because}in Auto Scaling group ${host.asg_name}; SetInstanceHealth(Unhealthy) so the group replaces it (${recent} of ${limit} replacement(s) used in the last ${limits.windowS} s)`,
    );
  }
  return decide(
    'quarantine',
    `${because}not in an Auto Scaling group: tag ${QUARANTINE_TAG}=${finding.rule} and page a human; never terminated`,
  );
}
