import { join } from 'node:path';
import {
  K8S_POD_UID_RULE,
  MAX_SLURM_JOB_ID,
  MAX_SYSTEMD_UNIT_CHARS,
  SYSTEMD_UNIT_RULE,
} from '../../lambdas/contract/field-rules';
import type { GpuProcess } from '../../lambdas/contract/schema';
import { readFile } from '../async-fs';

/**
 * Who owns a GPU process, as its cgroup names it: the fields of `GpuProcessSchema` the agent adds
 * to each process of a window. At most one is set: a Kubernetes pod wins over a Slurm job (a Slurm
 * job never runs inside a pod's cgroup, but a pod may run a Slurm daemon), a Slurm job over a
 * systemd unit (the job's cgroup sits under `slurmstepd.scope`). `{}` when the cgroup names none.
 */
export type ProcessOwner = Pick<GpuProcess, 'k8s_pod_uid' | 'slurm_job_id' | 'systemd_unit'>;

/**
 * A pod's cgroup, as the kubelet names it, anywhere under a `kubepods` cgroup: cgroupfs driver
 * `/kubepods/<qos>/pod<uid>/<container>` (dashes), systemd driver
 * `kubepods-<qos>-pod<uid with _>.slice` (also with a `kubelet-` prefix, and containerd's v1
 * `…slice:cri-containerd:<id>` form); a Guaranteed pod has no `<qos>` level; a static pod's UID is
 * 32 hex digits. Group 1: the UID as written.
 */
const K8S_POD_CGROUP =
  /kubepods.*?[/-]pod([0-9a-f]{8}([-_])[0-9a-f]{4}\2[0-9a-f]{4}\2[0-9a-f]{4}\2[0-9a-f]{12}|[0-9a-f]{32})(?=\.slice|\/|:|$)/;

/**
 * A Slurm job's cgroup: task/cgroup v1 `/slurm/uid_<uid>/job_<id>/step_<step>/task_<n>` (with
 * multiple slurmd, `/slurm_<node>/…`), cgroup/v2 `/system.slice/slurmstepd.scope/job_<id>/…` (with
 * multiple slurmd, `<node>_slurmstepd.scope`). Group 1: the job id.
 */
const SLURM_JOB_CGROUP = /slurm[^/]*\/(?:[^/]+\/)*?job_(\d{1,10})(?=\/|$)/;

/** A systemd unit that holds processes: a path segment ending in `.service` or `.scope`. */
const SYSTEMD_UNIT_SEGMENT = /\.(service|scope)$/;

/** A user's systemd manager (`user@1000.service`, systemd.special(7)): its units are the user's own. */
const USER_MANAGER_UNIT = /^user@\d+\.service$/;

/** One line of `/proc/<pid>/cgroup`: `hierarchy-ID:controller-list:cgroup-path` (cgroups(7)). */
interface CgroupLine {
  /** The controllers (`memory`, `cpu,cpuacct`, `name=systemd`); empty for the v2 line `0::`. */
  readonly controllers: string;
  /** The cgroup path, from the root of that hierarchy (`/kubepods/…`, `/system.slice/…`). */
  readonly path: string;
}

/**
 * Reads the owner of a process from the text of its `/proc/<pid>/cgroup` (cgroups(7)), cgroup v1,
 * v2 or both (hybrid): a Kubernetes pod UID (`kubepods…pod<uid>`, `_` turned into `-`), else a
 * Slurm job id (`job_<id>` under a `slurm…` cgroup), else the host systemd's service or scope that
 * holds it, the outermost one on its path (a user's unit under `user@<uid>.service`), read from
 * v1's `name=systemd` line, else the v2 line `0::`, else (v1 without `name=systemd`) any
 * controller's path. Pure.
 *
 * @param text - the file's text (lines `ID:controllers:path`); anything else yields `{}`
 * @returns the owner, at most one field set; `{}` when the cgroup names none (the root, a bare
 *   `system.slice`, a container runtime's own cgroup outside Kubernetes and systemd units)
 * @example
 * parseCgroupOwner('0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod03f3f104_3215_44f2_9686_d4dd1f05a7ed.slice/cri-containerd-09d1.scope\n');
 * // { k8s_pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed' }
 * parseCgroupOwner('0::/system.slice/slurmstepd.scope/job_4749/step_0/user/task_0\n'); // { slurm_job_id: 4749 }
 */
export function parseCgroupOwner(text: string): ProcessOwner {
  const lines = parseCgroupLines(text);
  for (const { path } of lines) {
    const pod = K8S_POD_CGROUP.exec(path);
    if (pod?.[1] === undefined) continue;
    const uid = pod[1].replaceAll('_', '-');
    if (K8S_POD_UID_RULE.pattern.test(uid)) return { k8s_pod_uid: uid };
  }
  for (const { path } of lines) {
    const job = SLURM_JOB_CGROUP.exec(path);
    const id = job?.[1] === undefined ? Number.NaN : Number(job[1]);
    if (id >= 1 && id <= MAX_SLURM_JOB_ID) return { slurm_job_id: id };
  }
  // The hierarchy systemd tracks processes in speaks for the process alone: v1's `name=systemd`
  // (on a hybrid host a runtime with the cgroupfs driver moves the process there, as in every v1
  // controller, and leaves the `0::` line at the daemon that forked it: `containerd.service`), else
  // the v2 line `0::`. When neither names a cgroup below the root (v1 without `name=systemd`, or
  // both at `/`), any controller's path is read.
  const tracked =
    lines.find((l) => l.controllers === 'name=systemd' && l.path !== '/') ??
    lines.find((l) => l.controllers === '' && l.path !== '/');
  for (const line of tracked === undefined ? lines : [tracked]) {
    const unit = unitOf(line.path);
    if (unit !== undefined) return { systemd_unit: unit };
  }
  return {};
}

/** The lines of a `/proc/<pid>/cgroup` text that have the three fields; the rest is skipped. */
function parseCgroupLines(text: string): CgroupLine[] {
  const lines: CgroupLine[] = [];
  for (const raw of text.split('\n')) {
    const first = raw.indexOf(':');
    const second = first < 0 ? -1 : raw.indexOf(':', first + 1);
    if (second < 0) continue;
    const path = raw.slice(second + 1).trim();
    if (path.startsWith('/')) lines.push({ controllers: raw.slice(first + 1, second), path });
  }
  return lines;
}

/**
 * The unit of the host's systemd that holds a cgroup path: the first `.service` or `.scope` segment
 * from the root that is a valid unit name. What lies below it is delegated to someone else (a
 * container's own init: `libpod-<id>.scope/init.scope`; a service's own sub-cgroups:
 * `systemd-udevd.service/udev`), except below a user's manager `user@<uid>.service`, whose units
 * (`podman-6696.scope`, `app-….slice/vte-spawn-<id>.scope`) are the user's own and more telling
 * (its `init.scope` is the manager itself: `user@<uid>.service`).
 */
function unitOf(path: string): string | undefined {
  let found: string | undefined;
  for (const segment of path.split('/')) {
    if (!SYSTEMD_UNIT_SEGMENT.test(segment)) continue;
    if (segment.length > MAX_SYSTEMD_UNIT_CHARS || !SYSTEMD_UNIT_RULE.pattern.test(segment)) continue;
    // The user manager's own process sits in its `init.scope`: the owner is the manager.
    if (found !== undefined && segment === 'init.scope') return found;
    found = segment;
    if (!USER_MANAGER_UNIT.test(segment)) return found;
  }
  return found;
}

/** Options of {@link ProcessOwnerReader}. */
export interface ProcessOwnerReaderOptions {
  /**
   * The proc file system of the host PID namespace the GPU processes' pids belong to (NVML reports
   * host pids): `/proc` on a host; in a pod, the host's `/proc` with `hostPID: true`. Tests pass a
   * folder of `<pid>/cgroup` files. @default '/proc'
   */
  readonly procRoot?: string;
  /** Reads one file as UTF-8. @default `readFile` of `agent/async-fs.ts` (UTF-8) */
  readonly readText?: (path: string) => Promise<string>;
}

/**
 * Finds the owner of each GPU process from its cgroup (`<procRoot>/<pid>/cgroup`, see
 * {@link parseCgroupOwner}). Reads each pid once per call, when a window closes, and keeps
 * nothing between calls: a pid reused by another job is read afresh. A process that is gone, or
 * whose file cannot be read (another PID namespace, no permission), has no owner: `{}`, never an
 * error.
 */
export class ProcessOwnerReader {
  readonly #procRoot: string;
  readonly #readText: (path: string) => Promise<string>;

  /** @param options - the proc root and the file reader (tests) */
  constructor(options: ProcessOwnerReaderOptions = {}) {
    this.#procRoot = options.procRoot ?? '/proc';
    this.#readText = options.readText ?? ((path) => readFile(path, 'utf8'));
  }

  /**
   * The owner of each pid, read concurrently.
   *
   * @param pids - process ids (integers ≥ 0; repeats are read once)
   * @returns a map with every pid given: its owner, `{}` when unknown
   */
  async owners(pids: Iterable<number>): Promise<Map<number, ProcessOwner>> {
    const unique = [...new Set(pids)];
    const owners = await Promise.all(unique.map((pid) => this.#ownerOf(pid)));
    return new Map(unique.map((pid, i) => [pid, owners[i] ?? {}]));
  }

  async #ownerOf(pid: number): Promise<ProcessOwner> {
    if (!Number.isInteger(pid) || pid <= 0) return {};
    try {
      return parseCgroupOwner(await this.#readText(join(this.#procRoot, String(pid), 'cgroup')));
    } catch {
      return {};
    }
  }
}
