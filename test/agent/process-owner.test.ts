import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentLoop } from '../../agent/agent-loop';
import { BatchBuilder } from '../../agent/send/batcher';
import { MemorySink } from '../../agent/send/memory-sink';
import { type ProcessOwner, ProcessOwnerReader, parseCgroupOwner } from '../../agent/sources/process-owner';
import { type GpuIdentity, GpuProcessSchema, parseBatch } from '../../lambdas/contract';
import { fakeGpuSource, openSources } from './fixtures/agent-sources';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'cgroup');

/** The owner each real capture names (test/fixtures/cgroup/README.md says where each comes from). */
const EXPECTED: Readonly<Record<string, ProcessOwner>> = {
  'k8s-v1-cgroupfs-docker.cgroup': { k8s_pod_uid: '7de2905f-d523-45a3-8dd9-8365a286a434' },
  'k8s-v1-cgroupfs-rdma.cgroup': { k8s_pod_uid: 'd7874f44-eee0-423c-83c9-f246075bdde1' },
  'k8s-v1-systemd-containerd-burstable.cgroup': { k8s_pod_uid: 'b96a7488-3ee1-4bdc-9c98-155cc887b417' },
  'k8s-v1-systemd-containerd-besteffort.cgroup': { k8s_pod_uid: '0125ec2f-b64a-4868-8f5b-94b56cbab864' },
  'k8s-v1-systemd-crio.cgroup': { k8s_pod_uid: 'a5c1f8d5-1919-434d-add7-4afaafdaef89' },
  'k8s-v2-systemd-containerd.cgroup': { k8s_pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed' },
  'k8s-v2-static-pod.cgroup': { k8s_pod_uid: '187bff14cccb94f179e943eacce55bb3' },
  'k8s-v2-kind-kubelet-slice.cgroup': { k8s_pod_uid: '1e597579-417e-482f-bf65-5fe170c3aebd' },
  'slurm-v2-slurmstepd-scope.cgroup': { slurm_job_id: 4749 },
  'slurm-v1-task-cgroup.cgroup': { slurm_job_id: 13759490 },
  'slurm-v1-no-task-cgroup.cgroup': { systemd_unit: 'slurmd.service' },
  'systemd-hybrid-session.cgroup': { systemd_unit: 'session-1.scope' },
  'systemd-hybrid-init.cgroup': { systemd_unit: 'init.scope' },
  'systemd-v1-named-session.cgroup': { systemd_unit: 'session-1.scope' },
  'systemd-v2-service-subgroup.cgroup': { systemd_unit: 'systemd-udevd.service' },
  'kubelet-system-slice.cgroup': {},
  'host-root.cgroup': {},
  'docker-v1-outside-k8s.cgroup': {},
};

const captures = readdirSync(FIXTURES).filter((f) => f.endsWith('.cgroup'));

describe('parseCgroupOwner on real /proc/<pid>/cgroup captures', () => {
  it('has an expected owner for every capture of the folder', () => {
    // Prepare / Act
    const missing = captures.filter((f) => !(f in EXPECTED));

    // Assess
    expect(missing).toEqual([]);
    expect(captures.length).toBe(Object.keys(EXPECTED).length);
  });

  it.each(captures)('reads the owner of %s', (file) => {
    // Prepare
    const text = readFileSync(join(FIXTURES, file), 'utf8');

    // Act
    const owner = parseCgroupOwner(text);

    // Assess: the owner, and a process carrying it is valid on the wire
    expect(owner).toEqual(EXPECTED[file]);
    expect(GpuProcessSchema.safeParse({ pid: 4242, ...owner }).success).toBe(true);
  });
});

describe('parseCgroupOwner', () => {
  it.each([
    {
      what: 'a Guaranteed pod (no QoS level), systemd driver',
      text: '0::/kubepods.slice/kubepods-pod03f3f104_3215_44f2_9686_d4dd1f05a7ed.slice/cri-containerd-09d1.scope\n',
      owner: { k8s_pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed' },
    },
    {
      what: 'a Guaranteed pod, cgroupfs driver',
      text: '0::/kubepods/pod7de2905f-d523-45a3-8dd9-8365a286a434/610228a7\n',
      owner: { k8s_pod_uid: '7de2905f-d523-45a3-8dd9-8365a286a434' },
    },
    {
      what: 'a pod UID with mixed separators (not the kubelet’s)',
      text: '0::/kubepods.slice/kubepods-pod03f3f104-3215_44f2_9686_d4dd1f05a7ed.slice/x.scope\n',
      owner: { systemd_unit: 'x.scope' },
    },
    {
      what: 'a pod-like segment outside kubepods',
      text: '0::/system.slice/pod7de2905f-d523-45a3-8dd9-8365a286a434.service\n',
      owner: { systemd_unit: 'pod7de2905f-d523-45a3-8dd9-8365a286a434.service' },
    },
    {
      what: 'a job_ segment outside Slurm',
      text: '0::/system.slice/batch.service/job_12\n',
      owner: { systemd_unit: 'batch.service' },
    },
    {
      what: 'Slurm job 0 (never a job id)',
      text: '0::/system.slice/slurmstepd.scope/job_0/step_0\n',
      owner: { systemd_unit: 'slurmstepd.scope' },
    },
    {
      what: 'a Slurm job id past 32 bits',
      text: '0::/system.slice/slurmstepd.scope/job_99999999999/step_0\n',
      owner: { systemd_unit: 'slurmstepd.scope' },
    },
    { what: 'an empty file', text: '', owner: {} },
    { what: 'text that is not a cgroup file', text: 'no such thing\n::\n', owner: {} },
  ])('reads $what', ({ text, owner }) => {
    // Prepare / Act
    const result = parseCgroupOwner(text);

    // Assess
    expect(result).toEqual(owner);
  });
});

describe('ProcessOwnerReader', () => {
  let proc: string;
  beforeAll(() => {
    proc = mkdtempSync(join(tmpdir(), 'gpu-sentinel-proc-'));
    for (const [pid, file] of [
      [101, 'k8s-v2-systemd-containerd.cgroup'],
      [202, 'slurm-v2-slurmstepd-scope.cgroup'],
      [303, 'systemd-hybrid-session.cgroup'],
    ] as const) {
      mkdirSync(join(proc, String(pid)));
      copyFileSync(join(FIXTURES, file), join(proc, String(pid), 'cgroup'));
    }
  });
  afterAll(() => rmSync(proc, { recursive: true, force: true }));

  it('reads each pid under its proc root once, and gives a gone or bad pid no owner', async () => {
    // Prepare
    const read: string[] = [];
    const reader = new ProcessOwnerReader({
      procRoot: proc,
      readText: async (path) => {
        read.push(path);
        return readFileSync(path, 'utf8');
      },
    });

    // Act
    const owners = await reader.owners([101, 202, 101, 303, 999, 0, -1]);

    // Assess
    expect(Object.fromEntries(owners)).toEqual({
      101: { k8s_pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed' },
      202: { slurm_job_id: 4749 },
      303: { systemd_unit: 'session-1.scope' },
      999: {},
      0: {},
      [-1]: {},
    });
    expect(read.sort()).toEqual([101, 202, 303, 999].map((pid) => join(proc, String(pid), 'cgroup')).sort());
  });

  it('adds each process’s owner to the flush window the loop closes, valid on the wire', async () => {
    // Prepare
    const gpus: GpuIdentity[] = [{ index: 0, uuid: 'GPU-aaaa', pci_bus_id: '0000:53:00.0' }];
    let t = Date.parse('2026-11-21T10:00:00.000Z');
    const clock = () => new Date(t);
    const source = fakeGpuSource({
      gpus,
      read: (now) => ({
        gpus: [
          {
            gpu_index: 0,
            at_ms: now.getTime(),
            compute_processes: 3,
            processes: [
              { pid: 101, fb_used_bytes: 3e9 },
              { pid: 202, fb_used_bytes: 2e9 },
              { pid: 999, fb_used_bytes: 1e9 },
            ],
          },
        ],
      }),
    });
    const loop = new AgentLoop({
      sources: await openSources([source], clock),
      host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      builder: new BatchBuilder({ clock }),
      delivery: new MemorySink(),
      clock,
      processOwners: new ProcessOwnerReader({ procRoot: proc }),
    });
    loop.poll();
    t += 1000;

    // Act
    const [batch] = await loop.flush();

    // Assess
    const [window] = parseBatch(JSON.parse(JSON.stringify(batch)), clock()).windows;
    expect(window?.processes).toEqual([
      { pid: 101, fb_used_bytes: 3e9, k8s_pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed' },
      { pid: 202, fb_used_bytes: 2e9, slurm_job_id: 4749 },
      { pid: 999, fb_used_bytes: 1e9 },
    ]);
  });
});
