import type { Batch, GpuEvent } from '../../contract';
import { MAX_EVIDENCE_LIST_ITEMS, MAX_EVIDENCE_TEXT_CHARS, MS_PER_SECOND } from '../constants';
import type { Finding, FindingAction, Severity } from '../types';

/** What a replace says, for a reset-class fault that came back. */
const REPLACE_REMEDY =
  'hardware fault: checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.';

import { type XidClass, type XidPolicyEntry, xidPolicyFor } from '../xid-policy';
import { describeGpu, type GpuRef, groupByGpu, resolveGpuRef } from './gpu-ref';
import type { PointRule } from './point-rule';
import type { RuleContext } from './rule-context';

interface TimedEvent {
  readonly event: GpuEvent;
  readonly ms: number;
  readonly order: number;
}

/**
 * Drops cross-source duplicates: an event from one source within `windowMs` of a not-yet-matched event of
 * the same GPU and code from another source is the same occurrence (NVML and kmsg both saw it).
 * Events from the same source are never merged (nine Xid 94 lines in 130 ms are nine occurrences).
 */
function dedupe(sorted: readonly TimedEvent[], windowMs: number): { kept: TimedEvent[]; dropped: number } {
  const kept: TimedEvent[] = [];
  const matched = new Set<number>();
  let dropped = 0;
  for (const ev of sorted) {
    let twin = -1;
    for (let k = kept.length - 1; k >= 0; k--) {
      const other = kept[k] as TimedEvent;
      if (ev.ms - other.ms > windowMs) break;
      if (other.event.source !== ev.event.source && !matched.has(k)) {
        twin = k;
        break;
      }
    }
    if (twin >= 0) {
      matched.add(twin);
      dropped++;
    } else kept.push(ev);
  }
  return { kept, dropped };
}

/** Most events inside any span of `windowMs` (two pointers over time-sorted events). */
function maxInWindow(sorted: readonly TimedEvent[], windowMs: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[hi] as TimedEvent).ms - (sorted[lo] as TimedEvent).ms > windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

function distinct(values: readonly (string | number | undefined)[]): string {
  const seen: string[] = [];
  for (const v of values) {
    if (v === undefined) continue;
    const s = String(v);
    if (!seen.includes(s)) seen.push(s);
    if (seen.length >= MAX_EVIDENCE_LIST_ITEMS) break;
  }
  return seen.join(',');
}

/** Start times of the episodes of a time-sorted run: occurrences more than `burstMs` after the previous one start a new one. */
function episodeStarts(sorted: readonly TimedEvent[], burstMs: number): TimedEvent[] {
  const starts: TimedEvent[] = [];
  let prevMs = Number.NEGATIVE_INFINITY;
  for (const ev of sorted) {
    if (ev.ms - prevMs > burstMs) starts.push(ev);
    prevMs = ev.ms;
  }
  return starts;
}

function outcome(
  entry: XidPolicyEntry,
  met: boolean,
  persists: boolean,
): { action: FindingAction; severity: Severity } | undefined {
  if (entry.action === 'ignore') return undefined;
  if (met && persists) return { action: 'replace', severity: 'critical' };
  if (met) return { action: entry.action, severity: entry.severity };
  // Below the count threshold: a replace/reset code is still worth a human look, never an action.
  if (entry.action === 'replace' || entry.action === 'reset')
    return { action: 'notify', severity: 'warning' };
  return undefined;
}

/** Recovery actions of Xid 154's text (NVIDIA's catalog) that need the GPU reset: the instance is rebooted. */
const RESET_RECOVERY_ACTIONS = new Set(['gpu reset required', 'node reboot required', 'drain and reset']);

/**
 * Xid 154 summarizes the recovery action the driver wants for the other Xids ("GPU recovery action
 * changed from 0x0 (None) to 0x2 (Node Reboot Required)", NVIDIA's catalog). When the latest one asks
 * for a GPU reset or a node reboot, it is a hardware `reset` (judged by `xid_fatal`); otherwise the
 * policy's entry (a notice).
 */
function recoveryActionEntry(entry: XidPolicyEntry, sorted: readonly TimedEvent[]): XidPolicyEntry {
  const latest = [...sorted].reverse().find((t) => t.event.detail !== undefined)?.event.detail ?? '';
  const action = / to 0x[0-9a-f]+ \(([^)]+)\)/i.exec(latest)?.[1]?.trim();
  if (action === undefined || !RESET_RECOVERY_ACTIONS.has(action.toLowerCase())) return entry;
  return {
    ...entry,
    action: 'reset',
    severity: 'warning',
    class: 'hardware',
    remedy: `The driver's recovery action is "${action}": reset the GPU (a reboot of the instance resets every GPU); if the fault comes back after it, replace the instance.`,
  };
}

/** The rule that judges each Xid class: named for what it judges, so an application fault is never published as `xid_fatal`. */
const RULE_OF_CLASS = {
  hardware: 'xid_fatal',
  application: 'xid_app',
  notice: 'xid_notice',
} as const satisfies Record<XidClass, string>;
type XidRuleId = (typeof RULE_OF_CLASS)[XidClass];

function xidFinding(
  batch: Batch,
  ref: GpuRef,
  xid: number,
  events: TimedEvent[],
  ctx: RuleContext,
  cls: XidClass,
): Finding[] {
  const sorted = [...events].sort((a, b) => a.ms - b.ms || a.order - b.order);
  const policy = xidPolicyFor(ctx.xidPolicy, xid);
  const known = policy.known;
  const entry = xid === 154 ? recoveryActionEntry(policy.entry, sorted) : policy.entry;
  if (entry.class !== cls) return [];
  const { kept, dropped } = dedupe(sorted, ctx.thresholds.xidDedupeWindowS * MS_PER_SECOND);
  const most = maxInWindow(kept, entry.window_s * MS_PER_SECOND);
  const met = most >= entry.count;
  const episodes = episodeStarts(kept, entry.burst_s * MS_PER_SECOND);
  const episodesInWindow =
    entry.replace_window_s === undefined ? 0 : maxInWindow(episodes, entry.replace_window_s * MS_PER_SECOND);
  const persists =
    entry.action === 'reset' && entry.replace_count !== undefined && episodesInWindow >= entry.replace_count;
  const result = outcome(entry, met, persists);
  if (result === undefined) return [];
  const first = kept[0] as TimedEvent;
  const last = kept[kept.length - 1] as TimedEvent;
  const detail = kept.find((k) => k.event.detail !== undefined)?.event.detail;
  const pids = distinct(kept.map((k) => k.event.pid));
  const names = distinct(kept.map((k) => k.event.process_name));
  const times = kept.length > 1 ? ` x${kept.length}` : '';
  const text = xid === 154 && detail !== undefined ? `: ${detail.slice(0, MAX_EVIDENCE_TEXT_CHARS)}` : '';
  const below = met ? '' : ` (below the ${entry.count}-in-${entry.window_s}s ${entry.action} threshold)`;
  const again = persists
    ? ` (came back: ${episodesInWindow} episodes within ${entry.replace_window_s} s, a reset did not clear it)`
    : '';
  return [
    {
      rule: RULE_OF_CLASS[cls],
      severity: result.severity,
      action: result.action,
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      ...ref,
      at: first.event.at,
      variant: `xid${xid}`,
      summary: `Xid ${xid} (${entry.meaning})${times} on ${describeGpu(ref)}${below}${again}${text}`,
      remedy: persists
        ? `The fault persists after a reset: ${REPLACE_REMEDY}`
        : met
          ? entry.remedy
          : `Watch for repeats: ${entry.count} within ${entry.window_s} s means: ${entry.remedy}`,
      evidence: {
        xid,
        mnemonic: entry.mnemonic,
        known_xid: known,
        count: kept.length,
        first_at: first.event.at,
        last_at: last.event.at,
        policy_action: entry.action,
        threshold: `${entry.count} in ${entry.window_s} s`,
        threshold_met: met,
        max_in_window: most,
        catalog_action: entry.immediate,
        xid_class: entry.class,
        ...(entry.replace_count === undefined
          ? {}
          : {
              episodes: episodes.length,
              replace_threshold: `${entry.replace_count} episodes in ${entry.replace_window_s} s`,
            }),
        sources: distinct(kept.map((k) => k.event.source)),
        ...(dropped > 0 ? { duplicates_dropped: dropped } : {}),
        ...(pids === '' ? {} : { pids }),
        ...(names === '' ? {} : { process_names: names }),
        ...(detail === undefined ? {} : { detail: detail.slice(0, MAX_EVIDENCE_TEXT_CHARS) }),
      },
    },
  ];
}

/**
 * The Xid rules (docs/design.md §6, docs/detection.md §2–3): XID events of one policy class judged by
 * the XID policy — `hardware` by `xid_fatal`, `application` by `xid_app`, `notice` by `xid_notice` —
 * grouped per (GPU, Xid code) so 629 Xid 13 make one finding with `evidence.count = 629`. Cross-source duplicates (NVML + kmsg within
 * `thresholds.xidDedupeWindowS`) count once.
 *
 * Per group: policy `ignore` → nothing; the count threshold met (at least `count` occurrences within
 * `window_s`) → the policy's action and severity (`replace` → critical/replace, `reset` → warning/reset,
 * `notify` → its severity/notify). A `reset` whose fault came back — `replace_count` episodes
 * (occurrences more than `burst_s` apart) within `replace_window_s` — is a `replace` at critical: the
 * catalog's "if it persists after a reset". A lone Xid 120, or one burst of them, asks for a reset. Not met: a `replace`/`reset` code gives a `notify` at `warning` (a
 * human should see a first NVLink error), a `notify` code gives nothing. The count is over this batch's
 * events only (the ingest path has no store query); repeats across batches arrive as separate findings.
 *
 * @param batch - a validated batch; reads `events` of kind `xid`
 * @param ctx - `xidPolicy` and `thresholds.xidDedupeWindowS`
 * @param cls - the policy class this rule judges
 * @returns one finding per (GPU, Xid code) of the class that deserves one, ordered by GPU then code; `at` = first occurrence
 */
function xidFindings(batch: Batch, ctx: RuleContext, cls: XidClass): Finding[] {
  const timed: (TimedEvent & { ref: GpuRef })[] = [];
  (batch.events ?? []).forEach((event, order) => {
    if (event.kind !== 'xid' || event.xid === undefined) return;
    timed.push({
      event,
      ms: Date.parse(event.at),
      order,
      ref: resolveGpuRef(batch, event.gpu_index, event.pci_bus_id),
    });
  });
  const findings: Finding[] = [];
  for (const group of groupByGpu(timed, (t) => t.ref)) {
    const byXid = new Map<number, TimedEvent[]>();
    for (const t of group.items) {
      const xid = t.event.xid as number;
      const list = byXid.get(xid);
      if (list) list.push(t);
      else byXid.set(xid, [t]);
    }
    for (const xid of [...byXid.keys()].sort((a, b) => a - b)) {
      findings.push(...xidFinding(batch, group.ref, xid, byXid.get(xid) ?? [], ctx, cls));
    }
  }
  return findings;
}

/** An Xid rule of one class as the registry runs it: always judges; its findings are {@link xidFindings}'s for that class. */
function xidRule<Id extends XidRuleId>(id: Id, cls: XidClass): PointRule<Id> {
  return {
    id,
    reads: 'batch',
    evaluate: (batch, ctx) => ({ judged: true, findings: xidFindings(batch, ctx, cls) }),
  };
}

/** Rule `xid_fatal`: the hardware-class Xids (memory, link, firmware, a GPU gone) — reset, or replace when it persists. */
export const xidFatalRule: PointRule<'xid_fatal'> = xidRule('xid_fatal', 'hardware');

/** Rule `xid_app`: application-class Xids (13, 31, 43, copy engines …): the job's owner hears; the hardware stays. */
export const xidAppRule: PointRule<'xid_app'> = xidRule('xid_app', 'application');

/** Rule `xid_notice`: notice-class Xids (driver, firmware, mechanicals, codes unused on Ampere+, 154, unknown codes). */
export const xidNoticeRule: PointRule<'xid_notice'> = xidRule('xid_notice', 'notice');
