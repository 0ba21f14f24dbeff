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
  'docker-v1-hybrid-unified-containerd.cgroup': {},
  'docker-v1-systemd-driver.cgroup': {
    systemd_unit: 'docker-b33dda97580e721a69fa81742190341f858ea809ec4a9d74a8cfd411b0ee7c26.scope',
  },
  'podman-v2-rootless-unshare.cgroup': { systemd_unit: 'podman-6696.scope' },
  'podman-v1-systemd-in-container.cgroup': {
    systemd_unit: 'libpod-2521e906f0a0c758c3a7dc4fd68c197e32e96abb4b36807d0b0ede6d014a7c24.scope',
  },
  'podman-v2-pod-container.cgroup': {
    systemd_unit: 'libpod-47a0d74f2b72850ef550607094d6642fa0632c1cab241eabbf5edb25269c2c53.scope',
  },
  'k8s-v2-systemd-guaranteed.cgroup': { k8s_pod_uid: 'dc430cd3-34b7-4ea6-be26-ddfd88d7ddff' },
  'k8s-v1-cgroupfs-besteffort.cgroup': { k8s_pod_uid: '9a18ffb8-8513-11e7-b26e-7e29fbe2a5a3' },
  'k8s-v2-cgroupfs-besteffort.cgroup': { k8s_pod_uid: '88bcf96e-7b92-4ce5-a3c0-2a6d098a1c33' },
  'slurm-v2-default-scope.cgroup': { slurm_job_id: 1392969 },
  'slurm-v1-interactive-step.cgroup': { slurm_job_id: 280678 },
  'systemd-v2-user-manager-app.cgroup': {
    systemd_unit: 'vte-spawn-12ed9380-2972-4c2b-843d-683d39022b48.scope',
  },
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
    {
      what: 'an ECS task container on cgroup v1 (`/ecs/<task id>/<container id>`): no unit, no pod',
      text: '4:memory:/ecs/bf1ddbfbbc8f45c9b1ac4f779368741e/38fac3e99302b3622be089dd41e7ccf38aff368a86cc339972075136ee2710ce\n',
      owner: {},
    },
    {
      what: 'an ECS task container on cgroup v2 (task slice, Docker scope)',
      text: '0::/ecstasks.slice/ecstasks-bf1ddbfbbc8f45c9b1ac4f779368741e.slice/docker-38fac3e99302b3622be089dd41e7ccf38aff368a86cc339972075136ee2710ce.scope\n',
      owner: {
        systemd_unit: 'docker-38fac3e99302b3622be089dd41e7ccf38aff368a86cc339972075136ee2710ce.scope',
      },
    },
    {
      what: 'a pod of a kind node seen from the host (the node is a Docker scope)',
      text: '0::/system.slice/docker-5f1c.scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod1e597579_417e_482f_bf65_5fe170c3aebd.slice/cri-containerd-a09b.scope\n',
      owner: { k8s_pod_uid: '1e597579-417e-482f-bf65-5fe170c3aebd' },
    },
    {
      what: 'a service inside a kind node seen from the host: the host’s unit, the node',
      text: '0::/system.slice/docker-5f1c.scope/system.slice/containerd.service\n',
      owner: { systemd_unit: 'docker-5f1c.scope' },
    },
    {
      what: 'a user’s manager itself',
      text: '0::/user.slice/user-1000.slice/user@1000.service/init.scope\n',
      owner: { systemd_unit: 'user@1000.service' },
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
