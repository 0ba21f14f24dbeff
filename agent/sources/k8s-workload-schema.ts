import * as v from 'valibot';
import { K8S_LABEL_RULE, K8S_POD_RULE, MAX_K8S_POD_CHARS } from '../../lambdas/contract/field-rules';
import { matchingRule } from '../contract-rule-schema';

/**
 * The contract's `k8s` workload (namespace, pod, container of a GPU) as the agent checks the
 * labels dcgm-exporter gives: the same rules as the API's zod `K8sWorkloadSchema`, read from the
 * contract's zod-free field-rules.ts, in valibot so the bundled agent loads no zod. A test holds
 * both schemas to the same verdicts.
 */
export const AgentK8sWorkloadSchema = v.strictObject({
  /** Kubernetes namespace (a DNS label, ≤ 63 chars). */
  namespace: matchingRule(K8S_LABEL_RULE),
  /** Pod name (a DNS subdomain, ≤ 253 chars). */
  pod: v.pipe(matchingRule(K8S_POD_RULE), v.maxLength(MAX_K8S_POD_CHARS)),
  /** Container name within the pod (a DNS label), when the exporter gives it. */
  container: v.optional(matchingRule(K8S_LABEL_RULE)),
});
