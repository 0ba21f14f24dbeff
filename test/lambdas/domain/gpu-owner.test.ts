import { describe, expect, it } from 'vitest';
import { gpuOwnerOf } from '../../../lambdas/domain';

const UID = '03f3f104-3215-44f2-9686-d4dd1f05a7ed';
const POD = { namespace: 'ml-train', pod: 'llama-7b-0' } as const;

describe('gpuOwnerOf: tags > dcgm-exporter pod labels > cgroup owners', () => {
  it.each([
    ['a Slurm job', [{ pid: 7, slurm_job_id: 4749 }], { job: 'slurm:4749', pod: undefined }],
    ['a pod UID', [{ pid: 7, k8s_pod_uid: UID }], { job: `uid:${UID}`, pod: `uid:${UID}` }],
    ['a systemd unit', [{ pid: 7, systemd_unit: 'train.service' }], { job: 'train.service', pod: undefined }],
    [
      'the first owned process, largest memory first',
      [{ pid: 1 }, { pid: 7, systemd_unit: 'a.service' }, { pid: 8, slurm_job_id: 9 }],
      { job: 'a.service', pod: undefined },
    ],
    ['no owner', [{ pid: 7 }], { job: undefined, pod: undefined }],
    ['no processes', undefined, { job: undefined, pod: undefined }],
  ])(
    'takes the job from %s when the host has no job tag and no exporter pod',
    (_name, processes, expected) => {
      // Prepare / Act / Assess
      expect(gpuOwnerOf({ processes }, undefined)).toEqual(expected);
    },
  );

  it('keeps the job tag over any process owner, and still names the pod by UID', () => {
    // Prepare / Act / Assess
    expect(gpuOwnerOf({ processes: [{ pid: 7, slurm_job_id: 4749 }] }, 'pretrain-7b')).toEqual({
      job: 'pretrain-7b',
      pod: undefined,
    });
    expect(gpuOwnerOf({ processes: [{ pid: 7, k8s_pod_uid: UID }] }, 'pretrain-7b')).toEqual({
      job: 'pretrain-7b',
      pod: `uid:${UID}`,
    });
  });

  it('keeps the exporter’s pod name over cgroup owners, and takes no job from them', () => {
    // Prepare / Act / Assess
    const processes = [{ pid: 7, k8s_pod_uid: UID, slurm_job_id: 5 }];
    expect(gpuOwnerOf({ k8s: POD, processes }, undefined)).toEqual({ job: undefined, pod: 'llama-7b-0' });
    expect(gpuOwnerOf({ k8s: POD, processes }, 'llm')).toEqual({ job: 'llm', pod: 'llama-7b-0' });
  });
});
