import type { Finding } from '../types';
import type { HorizonInput } from './horizon-input';
import type { Rule, RuleVerdict } from './rule';

/**
 * What a window rule says about one instance: at most one finding (window alerts list their GPUs,
 * alert id `rule:instance_id`).
 */
export type WindowVerdict = RuleVerdict<Finding>;

/**
 * A window rule (docs/design.md §6): pure, deterministic, judges one batch's horizon windows (and EFA deltas)
 * with no store query. Efficiency rules are `notify` at `warning` or `info`, never `critical`, and never
 * ask for a remediation.
 *
 * @typeParam Id - the rule id
 */
export interface WindowRule<Id extends string = string> extends Rule<Id, 'horizons', HorizonInput, Finding> {
  /** `efficiency` (the job's owner is told) or `health` (the hardware or fabric). */
  readonly kind: 'efficiency' | 'health';
  /**
   * False for a rule judged from one flush window's counters (EFA deltas over 10 s), where a quiet window
   * says little: its alert is re-sent after the cooldown while it recurs but never resolved, so a flapping
   * counter cannot send a fire/resolve pair every batch. @default true (horizon rules resolve)
   */
  readonly resolves?: boolean;
}
