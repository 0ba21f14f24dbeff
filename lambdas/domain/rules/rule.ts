import type { RuleContext } from './rule-context';

/**
 * What a rule reads, and so where it runs (docs/design.md §6):
 * - `batch`: one batch's events and flush windows (point rules, at ingest);
 * - `horizons`: one batch's judged horizon windows and EFA deltas (window rules, at ingest);
 * - `fleet`: EC2's running instances and the store (fleet rules, in the scheduled evaluator).
 */
export const RULE_READS = ['batch', 'horizons', 'fleet'] as const;
/** One of {@link RULE_READS}. */
export type RuleReads = (typeof RULE_READS)[number];

/**
 * What a rule says about its input: whether it could judge (it had what it needs), and its
 * findings. A rule that judged and found nothing resolves its firing alerts; a rule that could not
 * judge leaves them as they are.
 *
 * @typeParam F - the finding type (`Finding`; `FleetFinding` for fleet rules, which also name their subject)
 */
export interface RuleVerdict<F> {
  /** True when the rule had what it needs to judge (absent metrics judge nothing). */
  readonly judged: boolean;
  /** The conditions found, in a stable order. */
  readonly findings: readonly F[];
}

/**
 * A rule: an id, what it reads, and a pure, deterministic evaluation (no store, no clock but `now`,
 * no I/O). Every rule has this shape; `PointRule`, `WindowRule` and `FleetRule` fix what it reads
 * and add what their evaluator needs. The registry (`rule-registry.ts`) lists every rule and
 * derives the rule ids from them.
 *
 * @typeParam Id - the rule id, also the first part of its alert ids (published in SNS attributes and stored)
 * @typeParam Reads - what it reads
 * @typeParam Input - the input of that kind
 * @typeParam F - the finding type
 */
export interface Rule<Id extends string, Reads extends RuleReads, Input, F> {
  /** The rule id, also the first part of its alert ids. */
  readonly id: Id;
  /** What it reads, and so where it runs. */
  readonly reads: Reads;
  /**
   * @param input - what the rule reads
   * @param ctx - thresholds and XID policy
   * @param now - the server's (or evaluator's) clock; rules that need no clock ignore it
   * @returns whether it judged, and its findings
   */
  readonly evaluate: (input: Input, ctx: RuleContext, now: Date) => RuleVerdict<F>;
}

/** The verdict of a rule that could not judge. */
export const NOT_JUDGED: RuleVerdict<never> = Object.freeze({ judged: false, findings: [] });
