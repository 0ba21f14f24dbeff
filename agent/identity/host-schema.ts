import * as v from 'valibot';
import { MAX_TAGS } from '../../lambdas/contract/constants';
import {
  AMI_ID_RULE,
  AZ_RULE,
  INSTANCE_ID_RULE,
  INSTANCE_TYPE_RULE,
  MAX_ASG_NAME_CHARS,
  MAX_TAG_KEY_CHARS,
  MAX_TAG_VALUE_CHARS,
  REGION_RULE,
} from '../../lambdas/contract/field-rules';
import type { Host } from '../../lambdas/contract/schema';
import { matchingRule } from '../contract-rule-schema';

/**
 * The contract's `host` (EC2 identity and placement) as the agent checks it before it sends
 * anything: the same rules as the API's zod `HostSchema`, read from the contract's zod-free
 * field-rules.ts, in valibot so the bundled agent loads no zod. A test holds both schemas to the
 * same verdicts.
 */
export const AgentHostSchema = v.strictObject({
  instance_id: matchingRule(INSTANCE_ID_RULE),
  instance_type: matchingRule(INSTANCE_TYPE_RULE),
  region: matchingRule(REGION_RULE),
  az: v.optional(matchingRule(AZ_RULE)),
  lifecycle: v.optional(v.picklist(['on-demand', 'spot'])),
  asg_name: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_ASG_NAME_CHARS))),
  ami_id: v.optional(matchingRule(AMI_ID_RULE)),
  tags: v.optional(
    v.pipe(
      v.record(
        v.pipe(v.string(), v.minLength(1), v.maxLength(MAX_TAG_KEY_CHARS)),
        v.pipe(v.string(), v.maxLength(MAX_TAG_VALUE_CHARS)),
      ),
      v.check((t) => Object.keys(t).length <= MAX_TAGS, `expected at most ${MAX_TAGS} tags`),
    ),
  ),
});

/** The first thing wrong with a host, or the host itself when it is valid. */
export type HostCheck =
  | { readonly success: true; readonly host: Host }
  | {
      readonly success: false;
      readonly field: string;
      readonly message: string;
      readonly cause: v.ValiError<typeof AgentHostSchema>;
    };

/**
 * Checks a host identity against the contract's rules.
 *
 * @param host - the identity assembled from IMDS and overrides
 * @returns the host, typed, or the first bad field in dot notation (`tags`, `instance_id`) and its message
 */
export function checkHost(host: unknown): HostCheck {
  const result = v.safeParse(AgentHostSchema, host);
  if (result.success) return { success: true, host: result.output };
  const issue = result.issues[0];
  return {
    success: false,
    field: v.getDotPath(issue) ?? '?',
    message: issue.message,
    cause: new v.ValiError(result.issues),
  };
}
