import { XidPolicyError } from './errors';
import { SEVERITIES, type Severity } from './types';
import { XID_CATALOG, type XidCatalogRow } from './xid-catalog';

/**
 * What gpu-sentinel does about each NVIDIA Xid code (docs/detection.md §2): NVIDIA's Xid catalog,
 * whole ({@link XID_CATALOG}, every code 1..172), each code's immediate-action bucket turned into an
 * action. Data, overridable per deployment (`withXidOverrides`; the rules file's `xid` key).
 *
 * - `IGNORE` → `ignore`; `RESTART_APP` → `notify` (the job's owner hears; hardware stays);
 * - `RESET_GPU`, `RESTART_VM` → `reset` (REMED's ladder reboots the instance: a reboot resets every
 *   GPU), escalating to `replace` when the fault comes back: {@link XID_RESET_REPLACE_COUNT} episodes
 *   within {@link XID_RESET_REPLACE_WINDOW_S}. The catalog: "a GPU reset or node power cycle may be
 *   needed if the error persists" (119/120), "reset the GPU, and if the problem persists, contact
 *   your hardware vendor" (140): only a fault that persists after a reset is hardware;
 * - `WORKFLOW_NVLINK_ERR` (74) → `reset`, `replace` when it repeats ("if this error is seen
 *   repeatedly and GPU reset or node reboot fails to clear the condition, contact your hardware vendor");
 * - `WORKFLOW_XID_48` (48, double-bit ECC) → `reset`, `replace` when it comes back: the catalog's
 *   workflow resets the GPU (a reset or reboot clears it; on A100/H100 the row remap the DBE
 *   recorded applies at that reset), and only a DBE that persists, or a remap that fails (Xid 64,
 *   the remapped-rows failure flag: their own rules replace), is an RMA case;
 * - `CONTACT_SUPPORT`, `CHECK_MECHANICALS`, `UPDATE_SWFW`, `WORKFLOW_NVLINK5_ERR` (Blackwell 144–150,
 *   whose action depends on sub-codes a human decodes), `XID_154`, and codes with no bucket →
 *   `notify` at `warning`;
 *
 * Deliberate deviations, each with its reason in the entry's `source`: 64 (remap failure) replaces
 * (an RMA candidate; the catalog's investigatory action is CONTACT_SUPPORT); 79 (fallen off the bus, `RESTART_BM`) replaces,
 * like the `gpu_lost` rule; 63 (row remap pending) notifies at `info` (the remap activates at the
 * next reset); 92 (high SBE rate) notifies at `warning` (it precedes DBEs); 94 (contained error) notifies
 * at `warning` (reset "when convenient"); 171/172 (detail of a 48) are ignored: the 48 acts.
 */

/** XID policy actions, weakest first. */
export const XID_ACTIONS = ['ignore', 'notify', 'reset', 'replace'] as const;
/** What to do about an Xid: nothing, tell someone, reset the GPU (reboot the instance), or replace the instance. */
export type XidAction = (typeof XID_ACTIONS)[number];

/**
 * What an Xid says about, which names the rule that judges it (docs/detection.md §3): `hardware`
 * (rule `xid_fatal`: memory, link, firmware, a GPU gone), `application` (rule `xid_app`: the job's
 * own fault, never the hardware), `notice` (rule `xid_notice`: driver, firmware, mechanicals, codes
 * unused on Ampere and newer, informational).
 */
export const XID_CLASSES = ['hardware', 'application', 'notice'] as const;
/** One of {@link XID_CLASSES}. */
export type XidClass = (typeof XID_CLASSES)[number];

/** The policy of one Xid code. */
export interface XidPolicyEntry {
  readonly action: XidAction;
  readonly severity: Severity;
  /** Occurrences (after dedupe) within `window_s` needed to act, integer ≥ 1. */
  readonly count: number;
  /** The span the `count` must fall within, s, > 0. */
  readonly window_s: number;
  /**
   * For a `reset`: episodes (see `burst_s`) within `replace_window_s` that turn the reset into a
   * `replace` (the fault persists), integer ≥ 2; absent: never escalates here.
   */
  readonly replace_count?: number;
  /** The span `replace_count` episodes must fall within, s, > 0. Present with `replace_count`. */
  readonly replace_window_s?: number;
  /** Occurrences closer than this, s, are one episode of one fault (a driver prints a burst), ≥ 0. */
  readonly burst_s: number;
  /** What the code says about; names the rule (see {@link XidClass}). */
  readonly class: XidClass;
  /** NVIDIA's mnemonic, e.g. `GPU_ECC_DBE`. */
  readonly mnemonic: string;
  /** Short human meaning, e.g. `double-bit ECC error`. */
  readonly meaning: string;
  /** What to do, for the alert. */
  readonly remedy: string;
  /** The catalog's immediate-action bucket, e.g. `RESET_GPU` (`NONE` where it gives none, `UNKNOWN` off the catalog). */
  readonly immediate: string;
  /** The catalog's investigatory-action bucket, e.g. `INVESTIGATE_SW`. */
  readonly investigatory: string;
  /** Where the entry comes from: the catalog, or the reason it deviates from it. */
  readonly source: string;
}

/** A whole policy: one entry per known code, and the entry for codes it does not know. */
export interface XidPolicy {
  readonly entries: Readonly<Record<number, XidPolicyEntry>>;
  readonly unknown: XidPolicyEntry;
}

/** Per-code overrides: a partial entry merges into the base entry of that code (or the unknown entry). */
export type XidPolicyOverrides = Readonly<Record<number, Partial<XidPolicyEntry>>>;

/** Default span of an Xid count threshold, s: one hour. Source: docs/design.md §6 (74: 2 per hour). */
export const XID_DEFAULT_WINDOW_S = 3600;

/**
 * Episodes of a reset-class Xid within {@link XID_RESET_REPLACE_WINDOW_S} that mean the fault persists
 * after a reset: 2 (the first asks for a reset; the next one, after a quiet span, is hardware).
 * Source: the catalog's "if it persists after reset" (119, 120, 140) and design §6's 74 "2 per hour".
 */
export const XID_RESET_REPLACE_COUNT = 2;

/** Span of {@link XID_RESET_REPLACE_COUNT}, s: one day, so a fault that comes back hours after its reset still counts. */
export const XID_RESET_REPLACE_WINDOW_S = 86_400;

/**
 * Occurrences of one code on one GPU less than this apart are one episode, s: 600. A GPU whose GSP
 * hangs and is not reset keeps printing: the real capture of test/fixtures/real (Xid 119 at
 * 16:24:18, :24, :30, 16:27:12, 16:30:13) is one fault, never reset, and must ask for a reset, not a
 * replacement. A reboot and a job restart take longer than 10 minutes on a p5, so a fault back after
 * a reset is a second episode.
 */
export const XID_BURST_S = 600;

/** Source of entries that follow the catalog. */
const CATALOG_SOURCE = 'NVIDIA Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)';

const APP_REMEDY =
  'Application fault, not hardware: restart the job; if it repeats, debug the application (compute-sanitizer, cuda-gdb). The instance stays.';
const RESET_REMEDY =
  'Reset the GPU (a reboot of the instance resets every GPU); if it comes back after the reset, replace the instance.';
const REPLACE_REMEDY =
  'Hardware fault: checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.';
const DBE_REMEDY =
  'Uncorrectable memory error: the job on this GPU is lost; reset the GPU (a reboot of the instance resets every GPU and applies the row remap the error recorded on A100/H100). If it comes back after the reset, or the remap fails (Xid 64, remapped-rows failure), replace the instance.';
const NOTICE_REMEDY = "Look the code up in NVIDIA's Xid catalog; contact support if it persists.";

/** Application-class codes the catalog says to ignore: the app faulted, the GPU is healthy. */
const APP_IGNORED = new Set([43, 108, 137]);

function base(row: XidCatalogRow, action: XidAction, severity: Severity, cls: XidClass, remedy: string) {
  return {
    action,
    severity,
    count: 1,
    window_s: XID_DEFAULT_WINDOW_S,
    burst_s: XID_BURST_S,
    class: cls,
    mnemonic: row.mnemonic,
    meaning: row.meaning,
    remedy,
    immediate: row.immediate,
    investigatory: row.investigatory,
    source: CATALOG_SOURCE,
  } satisfies XidPolicyEntry;
}

const RESET_ESCALATION = {
  replace_count: XID_RESET_REPLACE_COUNT,
  replace_window_s: XID_RESET_REPLACE_WINDOW_S,
} as const;

/** A catalog row's entry, by its immediate-action bucket. */
function fromCatalog(row: XidCatalogRow): XidPolicyEntry {
  switch (row.immediate) {
    case 'IGNORE':
    case 'WORKFLOW_XID_45':
      return base(row, 'ignore', 'info', APP_IGNORED.has(row.xid) ? 'application' : 'notice', 'None.');
    case 'RESTART_APP':
      return base(row, 'notify', 'info', 'application', APP_REMEDY);
    case 'RESET_GPU':
    case 'RESTART_VM':
    case 'WORKFLOW_NVLINK_ERR':
      return { ...base(row, 'reset', 'warning', 'hardware', RESET_REMEDY), ...RESET_ESCALATION };
    case 'WORKFLOW_XID_48':
      return { ...base(row, 'reset', 'warning', 'hardware', DBE_REMEDY), ...RESET_ESCALATION };
    case 'RESTART_BM':
      return base(row, 'replace', 'critical', 'hardware', REPLACE_REMEDY);
    case 'CHECK_UVM':
      return base(
        row,
        'notify',
        'info',
        'notice',
        'Reset the GPU only where UVM or vGPU is in use; otherwise none.',
      );
    case 'XID_154':
      return base(
        row,
        'notify',
        'warning',
        'notice',
        "Follow the recovery action in the driver's text (drain, GPU reset or node reboot).",
      );
    default:
      return base(row, 'notify', 'warning', 'notice', NOTICE_REMEDY);
  }
}

/** Codes whose entry deviates from the catalog's bucket, each with the reason (in `source`). */
const DEVIATIONS: Readonly<Record<number, Partial<XidPolicyEntry>>> = {
  48: { meaning: 'double-bit ECC error' },
  54: {
    remedy: 'Check the mechanicals (power cabling); open an AWS support case.',
  },
  63: {
    action: 'notify',
    severity: 'info',
    class: 'hardware',
    meaning: 'row remap pending until GPU reset',
    remedy: 'Running work is safe; reset the GPU at the next convenient point to activate the remap.',
    source: 'deviation: catalog IGNORE; a pending remap is worth telling (it activates at the next reset)',
  },
  64: {
    action: 'replace',
    severity: 'critical',
    remedy: `${REPLACE_REMEDY} RMA candidate.`,
    source:
      'deviation: catalog RESET_GPU + CONTACT_SUPPORT; a failed row remap is an RMA candidate (remapped-rows failure flag)',
  },
  74: {
    replace_window_s: 3600,
    remedy:
      'Reset the GPU (a reboot resets every GPU); a single one is cleared by a reset, repeats point to hardware and replace.',
  },
  79: {
    remedy: 'The GPU is gone until the node reboots: checkpoint and move the job; the instance is replaced.',
    source:
      'deviation: catalog RESTART_BM; on EC2 a reboot keeps the host, so a GPU off the bus replaces, as rule gpu_lost does',
  },
  92: {
    action: 'notify',
    severity: 'warning',
    class: 'hardware',
    remedy: 'Watch ECC counters; plan a GPU reset; replace if DBEs follow.',
    source: 'deviation: catalog IGNORE; a high single-bit ECC rate precedes double-bit errors',
  },
  94: {
    severity: 'warning',
    class: 'hardware',
    remedy: 'Only one application was affected: restart it; reset the GPU when convenient (nvidia-smi -r).',
    source: 'catalog RESTART_APP; a contained memory error is a memory (hardware) event, told at warning',
  },
  171: { action: 'ignore', severity: 'info', class: 'hardware', remedy: 'None: the Xid 48 it details acts.' },
  172: { action: 'ignore', severity: 'info', class: 'hardware', remedy: 'None: the Xid 48 it details acts.' },
};

function defaultEntries(): Record<number, XidPolicyEntry> {
  const out: Record<number, XidPolicyEntry> = {};
  for (const row of Object.values(XID_CATALOG)) {
    out[row.xid] = Object.freeze({ ...fromCatalog(row), ...DEVIATIONS[row.xid] });
  }
  return out;
}

/**
 * The default policy: every code of NVIDIA's Xid catalog ({@link XID_CATALOG}), its immediate-action
 * bucket turned into an action (see the file's comment), and `unknown` for a code the catalog does not
 * list (`notify` at `warning`).
 */
export const DEFAULT_XID_POLICY: XidPolicy = {
  entries: Object.freeze(defaultEntries()),
  unknown: Object.freeze({
    action: 'notify',
    severity: 'warning',
    count: 1,
    window_s: XID_DEFAULT_WINDOW_S,
    burst_s: XID_BURST_S,
    class: 'notice',
    mnemonic: 'UNKNOWN',
    meaning: 'Xid not in the catalog',
    remedy: "Look the code up in NVIDIA's Xid catalog and add it to the XID policy.",
    immediate: 'UNKNOWN',
    investigatory: 'UNKNOWN',
    source: 'not in the catalog',
  }),
};

/**
 * The policy entry for one Xid code: the table's, else the policy's `unknown` entry.
 *
 * @param policy - the policy
 * @param xid - NVIDIA Xid code, 1..999
 * @returns the entry, and whether the code was known
 */
export function xidPolicyFor(policy: XidPolicy, xid: number): { entry: XidPolicyEntry; known: boolean } {
  const entry = Object.hasOwn(policy.entries, xid) ? policy.entries[xid] : undefined;
  return entry === undefined ? { entry: policy.unknown, known: false } : { entry, known: true };
}

function checkEntry(xid: number, entry: XidPolicyEntry): void {
  if (!(XID_ACTIONS as readonly string[]).includes(entry.action)) {
    throw new XidPolicyError(
      xid,
      'action',
      entry.action,
      `Expected XID ${xid} action to be one of ${XID_ACTIONS.join(', ')}, got \`${String(entry.action)}\`.`,
    );
  }
  if (!(SEVERITIES as readonly string[]).includes(entry.severity)) {
    throw new XidPolicyError(
      xid,
      'severity',
      entry.severity,
      `Expected XID ${xid} severity to be one of ${SEVERITIES.join(', ')}, got \`${String(entry.severity)}\`.`,
    );
  }
  if (!Number.isInteger(entry.count) || entry.count < 1) {
    throw new XidPolicyError(
      xid,
      'count',
      entry.count,
      `Expected XID ${xid} count to be an integer >= 1, got \`${entry.count}\`.`,
    );
  }
  if (!(XID_CLASSES as readonly string[]).includes(entry.class)) {
    throw new XidPolicyError(
      xid,
      'class',
      entry.class,
      `Expected XID ${xid} class to be one of ${XID_CLASSES.join(', ')}, got \`${String(entry.class)}\`.`,
    );
  }
  if (!Number.isFinite(entry.burst_s) || entry.burst_s < 0) {
    throw new XidPolicyError(
      xid,
      'burst_s',
      entry.burst_s,
      `Expected XID ${xid} burst_s to be a number of seconds >= 0, got \`${entry.burst_s}\`.`,
    );
  }
  if (
    entry.replace_count !== undefined &&
    (!Number.isInteger(entry.replace_count) || entry.replace_count < 2)
  ) {
    throw new XidPolicyError(
      xid,
      'replace_count',
      entry.replace_count,
      `Expected XID ${xid} replace_count to be an integer >= 2, got \`${entry.replace_count}\`.`,
    );
  }
  if (
    entry.replace_count !== undefined &&
    (entry.replace_window_s === undefined ||
      !Number.isFinite(entry.replace_window_s) ||
      entry.replace_window_s <= 0)
  ) {
    throw new XidPolicyError(
      xid,
      'replace_window_s',
      entry.replace_window_s,
      `Expected XID ${xid} replace_window_s to be a number of seconds > 0 with replace_count, got \`${entry.replace_window_s}\`.`,
    );
  }
  if (!Number.isFinite(entry.window_s) || entry.window_s <= 0) {
    throw new XidPolicyError(
      xid,
      'window_s',
      entry.window_s,
      `Expected XID ${xid} window_s to be a number of seconds > 0, got \`${entry.window_s}\`.`,
    );
  }
}

/**
 * Returns a new policy with per-code overrides merged in; the base is not changed. A code the base does
 * not know starts from the base's `unknown` entry.
 *
 * @param base - the policy to start from, usually {@link DEFAULT_XID_POLICY}
 * @param overrides - partial entries by Xid code (e.g. `{ 13: { action: 'ignore' } }`)
 * @returns the merged policy
 * @throws {XidPolicyError} when a merged entry has an unknown action, severity or class, a count that
 *   is not an integer ≥ 1, a window that is not > 0 s, a `burst_s` < 0, a `replace_count` that is not
 *   an integer ≥ 2, or a `replace_count` without a `replace_window_s` > 0
 * @example
 * withXidOverrides(DEFAULT_XID_POLICY, { 94: { action: 'replace', severity: 'critical' } });
 */
export function withXidOverrides(base: XidPolicy, overrides: XidPolicyOverrides): XidPolicy {
  const entries: Record<number, XidPolicyEntry> = { ...base.entries };
  for (const [code, patch] of Object.entries(overrides)) {
    const xid = Number(code);
    if (!Number.isInteger(xid) || xid < 1 || xid > 999) {
      throw new XidPolicyError(
        xid,
        'xid',
        code,
        `Expected an Xid code 1..999 as override key, got \`${code}\`.`,
      );
    }
    const merged = { ...xidPolicyFor(base, xid).entry, ...patch };
    checkEntry(xid, merged);
    entries[xid] = merged;
  }
  return { entries: Object.freeze(entries), unknown: base.unknown };
}
