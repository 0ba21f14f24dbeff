import type { Batch } from '../../contract';
import type { Finding } from '../types';
import { eccDbeRule } from './ecc-dbe';
import { gpuLostRule } from './gpu-lost';
import { rowRemapFailureRule } from './row-remap-failure';
import type { PointRule, RuleContext } from './rule-context';
import { spotInterruptionRule } from './spot-interruption';
import { thermalCriticalRule } from './thermal-critical';
import { xidFatalRule } from './xid-fatal';

/** The point rules, in the order their findings come out. */
export const POINT_RULES: readonly PointRule[] = Object.freeze([
  gpuLostRule,
  eccDbeRule,
  xidFatalRule,
  rowRemapFailureRule,
  thermalCriticalRule,
  spotInterruptionRule,
]);

/**
 * Runs every point rule (docs/design.md §6) over one batch: events and flush windows only (horizon windows are
 * for the window rules). Pure and deterministic.
 *
 * @param batch - a validated batch (`parseBatch`)
 * @param ctx - thresholds and XID policy; usually `DEFAULT_RULE_CONTEXT`
 * @param now - the server's clock, passed to the rules
 * @returns the findings, in {@link POINT_RULES} order, then by GPU, then by Xid code
 * @example
 * const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, now);
 */
export function evaluatePointRules(batch: Batch, ctx: RuleContext, now: Date): Finding[] {
  return POINT_RULES.flatMap((rule) => rule(batch, ctx, now));
}
