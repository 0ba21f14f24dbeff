import type { Finding, RuleId } from '../types';
import type { HorizonInput } from './horizon-input';
import type { RuleContext } from './rule-context';

/**
 * What a window rule says about one instance: whether it could judge (enough covered span and the
 * metrics it needs), and its findings. A rule that judged and found nothing resolves its firing alert;
 * a rule that could not judge leaves it as it is.
 */
export interface WindowVerdict {
  /** True when the rule had what it needs to judge this instance (absent metrics judge nothing). */
  readonly judged: boolean;
  /** At most one finding per instance: window alerts list their GPUs (`rule:instance_id`). */
  readonly findings: readonly Finding[];
}

/**
 * A window rule (docs/design.md §6): pure, deterministic, judges one batch's horizon windows (and EFA deltas)
 * with no store query. Efficiency rules are `notify` at `warning` or `info`, never `critical`, and never
 * ask for a remediation.
 */
export interface WindowRule {
  /** The rule id, also the first part of its alert id. */
  readonly id: RuleId;
  /** `efficiency` (the job's owner is told) or `health` (the hardware or fabric). */
  readonly kind: 'efficiency' | 'health';
  /**
   * False for a rule judged from one flush window's counters (EFA deltas over 10 s), where a quiet window
   * says little: its alert is re-sent after the cooldown while it recurs but never resolved, so a flapping
   * counter cannot send a fire/resolve pair every batch. @default true (horizon rules resolve)
   */
  readonly resolves?: boolean;
  /**
   * @param input - the judged horizons, price, idle marks and the batch
   * @param ctx - thresholds
   * @param now - the server's clock
   */
  readonly judge: (input: HorizonInput, ctx: RuleContext, now: Date) => WindowVerdict;
}

/** The verdict of a rule that could not judge. */
export const NOT_JUDGED: WindowVerdict = Object.freeze({ judged: false, findings: [] });
