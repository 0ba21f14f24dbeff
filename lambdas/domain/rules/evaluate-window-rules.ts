import { type RuleId, WINDOW_RULES } from '../rule-registry';
import type { Finding } from '../types';
import type { HorizonInput } from './horizon-input';
import type { RuleContext } from './rule-context';

/** Ids of the window rules whose alerts resolve (see `WindowRule.resolves`). */
export const RESOLVING_WINDOW_RULES: ReadonlySet<RuleId> = new Set<RuleId>(
  WINDOW_RULES.filter((r) => r.resolves !== false).map((r) => r.id),
);

/** What the window rules said about one batch. */
export interface WindowRulesResult {
  /** Every finding, in `WINDOW_RULES` order; at most one per rule (alert id `rule:instance_id`). */
  readonly findings: readonly Finding[];
  /** The rules that could judge this batch: a firing alert of such a rule with no finding now is resolved. */
  readonly judged: ReadonlySet<RuleId>;
}

/**
 * Runs every window rule over one batch's judged horizons (docs/design.md §6). Pure and deterministic.
 *
 * @param input - see `judgedHorizons` and `nextIdleSince`
 * @param ctx - thresholds
 * @param now - the server's clock (`idle_billed` measures idle time against it)
 * @returns findings and the set of rules that judged
 * @example
 * const { findings, judged } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, now);
 */
export function evaluateWindowRules(input: HorizonInput, ctx: RuleContext, now: Date): WindowRulesResult {
  const findings: Finding[] = [];
  const judged = new Set<RuleId>();
  for (const rule of WINDOW_RULES) {
    const verdict = rule.evaluate(input, ctx, now);
    if (verdict.judged) judged.add(rule.id);
    findings.push(...verdict.findings);
  }
  return { findings, judged };
}
