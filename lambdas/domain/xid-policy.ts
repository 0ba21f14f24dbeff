import { XidPolicyError } from './errors';
import { SEVERITIES, type Severity } from './types';

/**
 * What gpu-sentinel does about each NVIDIA Xid code (docs/design.md §6). Data, overridable per deployment.
 * Defaults follow NVIDIA's Xid Catalog for Ampere and newer (docs/nvml.md §9, [XIDCAT]) and the
 * node-fatal set other operators use (§3.2). Application faults never replace hardware.
 *
 * Deviation from docs/design.md §6, on purpose: the first design listed 94 as replace-worthy; NVIDIA's catalog says
 * XID 94 is a *contained* memory error (RESTART_APP; "reset the GPU when convenient"), so the
 * default is `reset` at `warning`. The DBE that causes it arrives as XID 48, which does replace.
 */

/** XID policy actions, weakest first. */
export const XID_ACTIONS = ['ignore', 'notify', 'reset', 'replace'] as const;
/** What to do about an Xid: nothing, tell someone, have a human reset the GPU, or replace the instance. */
export type XidAction = (typeof XID_ACTIONS)[number];

/** The policy of one Xid code. */
export interface XidPolicyEntry {
  readonly action: XidAction;
  readonly severity: Severity;
  /** Occurrences (after dedupe) within `window_s` needed to act, integer ≥ 1. */
  readonly count: number;
  /** The span the `count` must fall within, s, > 0. */
  readonly window_s: number;
  /** NVIDIA's mnemonic, e.g. `GPU_ECC_DBE`. */
  readonly mnemonic: string;
  /** Short human meaning, e.g. `double-bit ECC error`. */
  readonly meaning: string;
  /** What to do, for the alert. */
  readonly remedy: string;
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

/** XID 74 (NVLink) occurrences per {@link XID_DEFAULT_WINDOW_S} before replacing: NVIDIA says a reset clears one; repeats are hardware. Source: docs/nvml.md §9, docs/design.md §6. */
export const XID_74_REPLACE_COUNT = 2;

const APP_REMEDY =
  'Application fault, not hardware: restart the job; if it repeats, debug the application (compute-sanitizer, cuda-gdb). The instance stays.';
const RESET_REMEDY =
  'Drain the GPU, then reset it when idle (nvidia-smi -r) or reboot the node; if it repeats after the reset, replace the instance.';
const REPLACE_REMEDY =
  'Hardware fault: checkpoint and move the job; the instance is replaced (Auto Scaling) or quarantined for a human.';

function e(
  action: XidAction,
  severity: Severity,
  mnemonic: string,
  meaning: string,
  remedy: string,
  count = 1,
  window_s = XID_DEFAULT_WINDOW_S,
): XidPolicyEntry {
  return { action, severity, count, window_s, mnemonic, meaning, remedy };
}

const app = (mnemonic: string, meaning: string): XidPolicyEntry =>
  e('notify', 'info', mnemonic, meaning, APP_REMEDY);
const copyEngine = (n: number): XidPolicyEntry => app(`CE${n}_ERROR`, 'copy engine error (application)');
const fatal = (mnemonic: string, meaning: string, extra = ''): XidPolicyEntry =>
  e('replace', 'critical', mnemonic, meaning, extra === '' ? REPLACE_REMEDY : `${REPLACE_REMEDY} ${extra}`);
const reset = (mnemonic: string, meaning: string): XidPolicyEntry =>
  e('reset', 'warning', mnemonic, meaning, RESET_REMEDY);

/**
 * The default policy. Source: NVIDIA Xid Catalog (docs/nvml.md §9) for every mnemonic and bucket;
 * docs/design.md §6 for which codes replace hardware.
 * - `notify`/`info` (the job owner hears; never replaces): 8, 13, 31, 32, 68, 69, 137, copy-engine 39–41, 70–72, 75–77;
 * - `ignore`: 38, 43, 45 (alone it follows another XID or a killed context), 121;
 * - `replace`/`critical`: 48 (DBE), 64 (remap failure), 74 (NVLink, {@link XID_74_REPLACE_COUNT} per hour),
 *   79 (fell off the bus), 95 (uncontained), 119/120 (GSP), 136, 140 (ECC escape), 143;
 * - `reset`/`warning` (a human resets the GPU when idle): 46, 62, 94 (contained ECC: NVIDIA says reset
 *   "when convenient"; the first design said replace), 109, 110, 158;
 * - `notify`: 63 `info` (row remap pending until reset), 54 and 92 `warning`, 154 `warning` with the driver's text;
 * - any other code: `notify` at `warning` ({@link XidPolicy.unknown}).
 */
export const DEFAULT_XID_POLICY: XidPolicy = {
  entries: {
    8: app('FIFO_ERROR_IDLE_TIMEOUT', 'GPU stopped processing (application)'),
    13: app('GR_EXCEPTION', 'graphics engine exception (application)'),
    31: app('FIFO_ERROR_MMU_ERR_FLT', 'GPU memory page fault (application)'),
    32: app('PBDMA_ERROR', 'corrupted push-buffer stream'),
    38: e('ignore', 'info', 'FECS_ERR_WATCHDOG_TIMEOUT', 'driver firmware error', 'None.'),
    39: copyEngine(0),
    40: copyEngine(1),
    41: copyEngine(2),
    43: e('ignore', 'info', 'RESETCHANNEL_VERIF_ERROR', 'application fault, GPU healthy', 'None.'),
    45: e(
      'ignore',
      'info',
      'PREEMPTIVE_REMOVAL',
      'driver tore down a context',
      'None alone; follow any other XID seen with it.',
    ),
    46: reset('GPU_TIMEOUT_ERROR', 'GPU stopped processing'),
    48: fatal('GPU_ECC_DBE', 'double-bit ECC error'),
    54: e(
      'notify',
      'warning',
      'PWR_REDUCED_CLOCKING',
      'aux power not connected',
      'Check the mechanicals (power cabling); open an AWS support case.',
    ),
    62: reset('PMU_HALT_ERROR', 'internal micro-controller halt'),
    63: e(
      'notify',
      'info',
      'INFOROM_DRAM_RETIREMENT_EVENT',
      'row remap pending until GPU reset',
      'Running work is safe; reset the GPU at the next convenient point to activate the remap.',
    ),
    64: fatal('INFOROM_DRAM_RETIREMENT_FAILURE', 'row remap / page retirement failure', 'RMA candidate.'),
    68: app('NVDEC0_ERROR', 'video decoder exception (application)'),
    69: app('GR_CLASS_ERROR', 'graphics engine class error (application)'),
    70: copyEngine(3),
    71: copyEngine(4),
    72: copyEngine(5),
    74: e(
      'replace',
      'critical',
      'NVLINK_ERROR',
      'NVLink error',
      `${REPLACE_REMEDY} A single one is cleared by a GPU reset; repeats point to hardware.`,
      XID_74_REPLACE_COUNT,
    ),
    75: copyEngine(6),
    76: copyEngine(7),
    77: copyEngine(8),
    79: fatal('GPU_HAS_FALLEN_OFF_THE_BUS', 'GPU fell off the bus'),
    92: e(
      'notify',
      'warning',
      'EXCESSIVE_SBE_INTERRUPTS',
      'high single-bit ECC rate',
      'Watch ECC counters; plan a GPU reset; replace if DBEs follow.',
    ),
    94: e(
      'reset',
      'warning',
      'CONTAINED_ERROR',
      'contained memory error',
      'Only one application was affected: restart it; reset the GPU when convenient (nvidia-smi -r).',
    ),
    95: fatal('UNCONTAINED_ERROR', 'uncontained memory error'),
    109: reset('CTXSW_TIMEOUT_ERROR', 'context-switch timeout'),
    110: reset('SEC_FAULT_ERROR', 'security fault'),
    119: fatal('GSP_RPC_TIMEOUT', 'GSP firmware RPC timeout'),
    120: fatal('GSP_ERROR', 'GSP firmware error'),
    121: e('ignore', 'info', 'C2C_ERROR', 'corrected C2C link errors (GB200 only)', 'None.'),
    136: fatal('ALI_TRAINING_FAIL', 'link training failed'),
    137: app('NVLINK_PRIV_ERR', 'illegal NVLink P2P access (application)'),
    140: fatal('UNRECOVERABLE_ECC_ERROR_ESCAPE', 'uncorrectable ECC error escaped remapping'),
    143: fatal('GPU_INIT_ERROR', 'GPU initialization error'),
    154: e(
      'notify',
      'warning',
      'GPU_RECOVERY_ACTION_CHANGED',
      'GPU recovery action changed',
      "Follow the recovery action in the driver's text (drain, GPU reset or node reboot).",
    ),
    158: reset('GPU_FATAL_TIMEOUT', 'GPU fatal timeout'),
  },
  unknown: e(
    'notify',
    'warning',
    'UNKNOWN',
    'Xid not in the policy table',
    "Look the code up in NVIDIA's Xid catalog and add it to the XID policy.",
  ),
};

Object.freeze(DEFAULT_XID_POLICY.entries);

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
 * @throws {XidPolicyError} when a merged entry has an unknown action or severity, a count that is not
 *   an integer ≥ 1, or a window that is not > 0 s
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
