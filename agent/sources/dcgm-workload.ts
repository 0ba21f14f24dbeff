import * as v from 'valibot';
import type { GpuIdentity, K8sWorkload } from '../../lambdas/contract/schema';
import type { DcgmGpuReading } from './dcgm-exporter';
import { AgentK8sWorkloadSchema } from './k8s-workload-schema';

/**
 * The Kubernetes pod holding each GPU, from dcgm-exporter's pod-resources mapping: run with
 * `--kubernetes` (the default of its DaemonSet), dcgm-exporter asks the kubelet which pod holds each
 * GPU and labels that GPU's series `namespace`, `pod` and `container`; with
 * `--kubernetes-use-old-namespace` the labels are `pod_namespace`, `pod_name` and `container_name`.
 * A GPU no pod holds has none of them. Pure: no I/O.
 */

/** Label names dcgm-exporter uses for the workload, current first, then the legacy ones. */
export const DCGM_WORKLOAD_LABELS = {
  namespace: ['namespace', 'pod_namespace'],
  pod: ['pod', 'pod_name'],
  container: ['container', 'container_name'],
} as const satisfies Record<keyof K8sWorkload, readonly string[]>;

/** One label value left out because the contract would refuse it. */
export interface DroppedWorkloadLabel {
  /** The GPU whose series carried it. */
  readonly gpu: GpuIdentity;
  /** The label name as the exporter wrote it. */
  readonly label: string;
  /** Why it was left out (the contract's message). */
  readonly reason: string;
}

/** What {@link workloadsFromDcgm} found. */
export interface DcgmWorkloads {
  /** One entry per GPU held by a pod, with the exporter's identity of that GPU (index, UUID). */
  readonly held: readonly { readonly gpu: GpuIdentity; readonly k8s: K8sWorkload }[];
  /** Label values outside the contract: never sent, each counted by the caller. */
  readonly dropped: readonly DroppedWorkloadLabel[];
}

const FIELDS = Object.keys(DCGM_WORKLOAD_LABELS) as (keyof K8sWorkload)[];

/**
 * Maps each GPU's workload labels into a contract `K8sWorkload`, validated field by field against
 * the contract's rules ({@link AgentK8sWorkloadSchema}): a bad `container` is dropped alone; a bad or missing `namespace` or `pod`
 * drops the workload (both are required; half a workload would charge the wrong pod). Label
 * values are never trimmed or lower-cased: what the contract refuses is dropped, not repaired.
 *
 * @param gpus - the readings of one scrape (`parseDcgmExporterText(...).gpus`)
 * @returns `{ held, dropped }`; a GPU with no workload label is in neither
 * @example
 * const { held } = workloadsFromDcgm(parseDcgmExporterText(body).gpus);
 * // [{ gpu: { index: 0, uuid: 'GPU-…' }, k8s: { namespace: 'ml', pod: 'train-0', container: 'main' } }]
 */
export function workloadsFromDcgm(gpus: readonly DcgmGpuReading[]): DcgmWorkloads {
  const held: { gpu: GpuIdentity; k8s: K8sWorkload }[] = [];
  const dropped: DroppedWorkloadLabel[] = [];
  for (const { gpu, labels } of gpus) {
    const k8s: Partial<Record<keyof K8sWorkload, string>> = {};
    let any = false;
    for (const field of FIELDS) {
      const label = DCGM_WORKLOAD_LABELS[field].find((name) => labels[name] !== undefined);
      if (label === undefined) continue;
      any = true;
      const check = v.safeParse(AgentK8sWorkloadSchema.entries[field], labels[label]);
      if (check.success && check.output !== undefined) k8s[field] = check.output;
      else dropped.push({ gpu, label, reason: check.issues?.[0]?.message ?? 'invalid' });
    }
    if (!any) continue;
    const workload = v.safeParse(AgentK8sWorkloadSchema, k8s);
    if (workload.success) held.push({ gpu, k8s: workload.output });
    else if (k8s.namespace !== undefined || k8s.pod !== undefined)
      // Only one of namespace/pod came valid: the other is missing (a bad one is already counted).
      for (const field of ['namespace', 'pod'] as const)
        if (k8s[field] === undefined && !dropped.some((d) => d.gpu === gpu && isLabelOf(field, d.label)))
          dropped.push({ gpu, label: DCGM_WORKLOAD_LABELS[field][0], reason: 'missing' });
  }
  return { held, dropped };
}

function isLabelOf(field: keyof K8sWorkload, label: string): boolean {
  return (DCGM_WORKLOAD_LABELS[field] as readonly string[]).includes(label);
}
