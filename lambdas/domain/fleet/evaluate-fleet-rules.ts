import { FLEET_RULES, type RuleId } from '../rule-registry';
import type { RuleContext } from '../rules/rule-context';
import type { FleetInput } from './fleet-input';
import type { FleetFinding } from './fleet-rule';

/** What the fleet rules said about the fleet. */
export interface FleetRulesResult {
  /** Every finding, in `FLEET_RULES` order. */
  readonly findings: readonly FleetFinding[];
  /** The rules that could judge: their firing alerts without a finding now resolve. */
  readonly judged: ReadonlySet<RuleId>;
}

/**
 * Runs every fleet rule (docs/design.md §6); without the running instances, only those that do not
 * need them. Pure and deterministic.
 *
 * @param input - running instances, last batch times, straggler means per node and job, team waste
 * @param ctx - thresholds
 * @param now - the evaluator's clock
 * @returns findings and the rules that judged
 * @example
 * const { findings, judged } = evaluateFleetRules(input, DEFAULT_RULE_CONTEXT, now);
 */
export function evaluateFleetRules(input: FleetInput, ctx: RuleContext, now: Date): FleetRulesResult {
  const findings: FleetFinding[] = [];
  const judged = new Set<RuleId>();
  for (const rule of FLEET_RULES) {
    if (rule.needsInstances && input.instances === undefined) continue;
    const verdict = rule.evaluate(input, ctx, now);
    if (verdict.judged) judged.add(rule.id);
    findings.push(...verdict.findings);
  }
  return { findings, judged };
}
