import * as v from 'valibot';
import {
  type FieldPattern,
  K8S_LABEL_RULE,
  K8S_POD_RULE,
  MAX_K8S_POD_CHARS,
} from '../../lambdas/contract/field-rules';

/** A string matching one of the contract's field patterns, with the contract's message. */
const matching = (rule: FieldPattern) => v.pipe(v.string(), v.regex(rule.pattern, rule.message));

/**
 * The contract's `k8s` workload (namespace, pod, container of a GPU) as the agent checks the
 * labels dcgm-exporter gives: the same rules as the API's zod `K8sWorkloadSchema`, read from the
 * contract's zod-free field-rules.ts, in valibot so the bundled agent loads no zod. A test holds
 * both schemas to the same verdicts.
 */
export const AgentK8sWorkloadSchema = v.strictObject({
  /** Kubernetes namespace (a DNS label, ≤ 63 chars). */
  namespace: matching(K8S_LABEL_RULE),
  /** Pod name (a DNS subdomain, ≤ 253 chars). */
  pod: v.pipe(
    v.string(),
    v.regex(K8S_POD_RULE.pattern, K8S_POD_RULE.message),
    v.maxLength(MAX_K8S_POD_CHARS),
  ),
  /** Container name within the pod (a DNS label), when the exporter gives it. */
  container: v.optional(matching(K8S_LABEL_RULE)),
});
