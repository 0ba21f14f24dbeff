import type { GpuWindow } from '../contract';

/** The `job` and `pod` a GPU window's row is attributed to (`gpu_windows.job`, `gpu_windows.pod`). */
export interface GpuOwner {
  /** The job: the instance's `job` tag, else the process owner's job (see {@link gpuOwnerOf}); absent when unknown. */
  readonly job?: string;
  /** The pod: dcgm-exporter's pod name, else `uid:<pod UID>` from a process's cgroup; absent when unknown. */
  readonly pod?: string;
}

/**
 * Who a GPU window belongs to, for the reports' `--by job` / `--by pod` (docs/finance.md,
 * "Who a GPU's cost goes to"). Precedence, first known wins:
 * 1. the instance's `job` tag (EC2 tag or the agent's IMDS tag, `host.tags.job`);
 * 2. dcgm-exporter's pod labels (`window.k8s`): the pod name; the job then stays the tag's (absent
 *    without one), since a pod name is not a job;
 * 3. the owner of the GPU's compute processes, from their cgroups (`window.processes`, largest
 *    framebuffer first, the first that has an owner): a Slurm job id → job `slurm:<id>`; a pod
 *    UID → pod `uid:<uid>` and job `uid:<uid>`; a systemd unit → job `<unit>` (`train.service`).
 *
 * So plain EC2, Slurm and EKS hosts without tags or dcgm-exporter still group by job and pod.
 *
 * @param window - a flush window; reads `k8s` and `processes`
 * @param tagJob - the instance's `job` tag, `undefined` when it has none
 * @returns the job and pod; each absent when nothing names it
 * @example
 * gpuOwnerOf({ processes: [{ pid: 7, slurm_job_id: 4749 }] }, undefined); // { job: 'slurm:4749' }
 * gpuOwnerOf({ k8s: { namespace: 'ml', pod: 'train-0' } }, 'llm-7b'); // { job: 'llm-7b', pod: 'train-0' }
 */
export function gpuOwnerOf(
  window: Pick<GpuWindow, 'k8s' | 'processes'>,
  tagJob: string | undefined,
): GpuOwner {
  if (window.k8s !== undefined) return { job: tagJob, pod: window.k8s.pod };
  const owner = (window.processes ?? []).find(
    (p) => p.slurm_job_id !== undefined || p.k8s_pod_uid !== undefined || p.systemd_unit !== undefined,
  );
  const pod = owner?.k8s_pod_uid !== undefined ? `uid:${owner.k8s_pod_uid}` : undefined;
  if (tagJob !== undefined) return { job: tagJob, pod };
  if (owner?.slurm_job_id !== undefined) return { job: `slurm:${owner.slurm_job_id}`, pod };
  if (pod !== undefined) return { job: pod, pod };
  return { job: owner?.systemd_unit, pod };
}
