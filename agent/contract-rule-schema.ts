import * as v from 'valibot';
import type { FieldPattern } from '../lambdas/contract/field-rules';

/**
 * A valibot string schema of one of the contract's field patterns (`lambdas/contract/field-rules.ts`),
 * failing with the contract's own message: the agent's side of a rule the API checks with zod.
 *
 * @param rule - the pattern and its message, e.g. `INSTANCE_ID_RULE`
 * @returns a schema that accepts a string matching `rule.pattern`
 * @example
 * v.safeParse(matchingRule(REGION_RULE), 'us-east-1').success; // true
 */
export function matchingRule(rule: FieldPattern) {
  return v.pipe(v.string(), v.regex(rule.pattern, rule.message));
}
