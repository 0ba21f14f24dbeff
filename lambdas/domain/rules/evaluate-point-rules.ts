import type { Batch } from '../../contract';
import { POINT_RULES } from '../rule-registry';
import type { Finding } from '../types';
import type { RuleContext } from './rule-context';

/**
 * Runs every point rule (docs/design.md §6) over one batch: events and flush windows only (horizon windows are
 * for the window rules). Pure and deterministic.
 *
 * @param batch - a validated batch (`parseBatch`)
 * @param ctx - thresholds and XID policy; usually `DEFAULT_RULE_CONTEXT`
 * @param now - the server's clock, passed to the rules
 * @returns the findings, in `POINT_RULES` order, then by GPU, then by Xid code
 * @example
 * const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, now);
 */
export function evaluatePointRules(batch: Batch, ctx: RuleContext, now: Date): Finding[] {
  return POINT_RULES.flatMap((rule) => rule.evaluate(batch, ctx, now).findings);
}
