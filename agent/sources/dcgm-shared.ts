import { DCGM_WORKLOAD_LABELS } from './dcgm-workload';

/**
 * A GPU (or MIG slice) that more than one pod shares. With GPU sharing (time-slicing or MPS) and
 * `--kubernetes-virtual-gpus`, dcgm-exporter writes each series of a GPU once per pod, labelled
 * `vgpu="0"`, `vgpu="1"`… (NVIDIA/dcgm-exporter pull request 432), with the same device value on every
 * copy (NVIDIA/dcgm-exporter issues 582 and 587: "all telemetry values are identical for all pods").
 * Merging the copies' labels would charge the whole GPU to whichever pod came last; here no pod is
 * charged and every pod is listed. Pure.
 */

/** Labels that name the pod of a series, in either of dcgm-exporter's spellings. */
const POD_KEY_LABELS: readonly string[] = [...DCGM_WORKLOAD_LABELS.namespace, ...DCGM_WORKLOAD_LABELS.pod];

/** Every label that belongs to one pod's copy of a series (dropped from a shared GPU's `labels`). */
const PER_POD_LABELS = new Set<string>([...Object.values(DCGM_WORKLOAD_LABELS).flat(), 'pod_uid', 'vgpu']);

/**
 * The pod a series names, as a key (`namespace/pod` in either spelling); `undefined` when it names none.
 *
 * @param labels - the series' non-identity labels
 */
export function podKeyOf(labels: Readonly<Record<string, string>>): string | undefined {
  if (DCGM_WORKLOAD_LABELS.pod.every((name) => labels[name] === undefined)) return undefined;
  return JSON.stringify(POD_KEY_LABELS.map((name) => labels[name] ?? ''));
}

/**
 * The labels to keep for a GPU or slice whose series named `pods`.
 *
 * @param merged - all its series' non-identity labels, merged
 * @param pods - each distinct pod's labels, by {@link podKeyOf}
 * @returns `{ labels }` unchanged when at most one pod is named; else `labels` without the per-pod
 *   labels (`namespace`, `pod`, `container`, their legacy names, `pod_uid`, `vgpu`) and `shared_by`,
 *   each pod's labels in the order first seen
 */
export function resolveSharedWorkloads(
  merged: Readonly<Record<string, string>>,
  pods: ReadonlyMap<string, Readonly<Record<string, string>>>,
): { labels: Record<string, string>; shared_by?: Record<string, string>[] } {
  if (pods.size <= 1) return { labels: { ...merged } };
  const pick = (labels: Readonly<Record<string, string>>, perPod: boolean): Record<string, string> =>
    Object.fromEntries(Object.entries(labels).filter(([name]) => PER_POD_LABELS.has(name) === perPod));
  return { labels: pick(merged, false), shared_by: [...pods.values()].map((labels) => pick(labels, true)) };
}
