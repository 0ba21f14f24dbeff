import { closeSync, constants, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { PROFILING_METRIC_NAMES } from '../../lambdas/contract/constants';
import type { Clock } from '../clock';
import { scrapeDcgmExporter } from '../sources/dcgm-exporter';
import { NvmlUnavailableError } from '../sources/nvml/errors';
import { NvmlSource } from '../sources/nvml/nvml-source';
import type { DoctorCheckResult } from './doctor-check';

/**
 * The host checks of `gpu-sentinel doctor`: NVML, the profiling counters, the kernel log and EFA.
 * Each reads the same paths and calls the agent uses (so a pass means the agent will read it too),
 * returns a result and never throws.
 */

/** What the NVML check learnt, for the checks after it. */
export interface NvmlFindings {
  /** The check's result. */
  readonly result: DoctorCheckResult;
  /** GPM (`gpm`) or none, from NVML; absent when NVML did not load. */
  readonly profiling?: 'gpm' | 'dcgm' | 'none';
  /** GPUs NVML reports. */
  readonly gpuCount?: number;
}

/**
 * NVML loads and initialises (`nvmlInit_v2`), with the driver, NVML and CUDA versions and the GPU
 * count, exactly as the agent opens it (`NvmlSource.open`), then shuts down.
 *
 * @param libraryPath - the agent's `nvmlLibraryPath`
 * @param clock - the clock of the open
 * @returns the result, and the profiling source and GPU count when NVML loaded
 */
export function checkNvml(libraryPath: string, clock: Clock): NvmlFindings {
  let nvml: NvmlSource | undefined;
  try {
    nvml = NvmlSource.open({ libraryPath, clock });
    const v = nvml.versions();
    const gpuCount = nvml.identity().length;
    const profiling = nvml.profilingSource();
    const detail = `driver ${v.driver_version ?? 'unknown'}, NVML ${v.nvml_version ?? 'unknown'}, CUDA ${v.cuda_version ?? 'unknown'}, ${gpuCount} GPUs`;
    if (gpuCount === 0) {
      return {
        result: {
          id: 'nvml',
          status: 'fail',
          detail: `${detail}: NVML sees no GPU`,
          fix: 'Check `nvidia-smi -L`; on a GPU instance reinstall or reload the NVIDIA driver (`modprobe nvidia`), and check dmesg for Xid 79 / "fallen off the bus".',
        },
        profiling,
        gpuCount,
      };
    }
    return { result: { id: 'nvml', status: 'pass', detail }, profiling, gpuCount };
  } catch (err) {
    const step = err instanceof NvmlUnavailableError ? err.step : undefined;
    const fix =
      step === 'init'
        ? 'The library loaded but nvmlInit_v2 failed: the NVIDIA kernel driver is not loaded or does not match the library (`nvidia-smi` says which); reboot after a driver upgrade, and check the service user is in the group owning /dev/nvidia*.'
        : `Install the NVIDIA driver (it ships libnvidia-ml.so.1), or point \`nvmlLibraryPath\` (--nvml-lib, GPU_SENTINEL_NVML_LIB) at it; tried ${libraryPath}.`;
    return { result: { id: 'nvml', status: 'fail', detail: (err as Error).message, fix } };
  } finally {
    nvml?.close();
  }
}

/**
 * The profiling counters (`sm_active`, …) are readable: NVML GPM (Hopper and newer), or else a
 * local dcgm-exporter that answers and exports at least one `DCGM_FI_PROF_*` ratio.
 *
 * @param nvmlProfiling - NVML's profiling source (from {@link checkNvml}), absent when NVML did not load
 * @param dcgmExporterUrl - the agent's `dcgmExporterUrl`, or `off`
 * @param fetchFn - the fetch for the scrape @default the agent's
 * @returns the result
 */
export async function checkProfiling(
  nvmlProfiling: 'gpm' | 'dcgm' | 'none' | undefined,
  dcgmExporterUrl: string,
  fetchFn?: typeof fetch,
): Promise<DoctorCheckResult> {
  if (nvmlProfiling === 'gpm')
    return { id: 'profiling', status: 'pass', detail: 'NVML GPM (no DCGM needed)' };
  const noGpm = nvmlProfiling === undefined ? 'NVML did not load' : 'no NVML GPM on these GPUs';
  const install =
    'Install dcgm-exporter with the profiling counters (agent/packaging/install-dcgm-exporter.sh, counters agent/packaging/dcgm-counters.csv), or set `dcgmExporterUrl` to where it listens; without it sm_active and the efficiency rules stay absent and waste falls back to gpu_util.';
  if (dcgmExporterUrl === 'off') {
    return {
      id: 'profiling',
      status: 'fail',
      detail: `${noGpm}, and dcgmExporterUrl is off`,
      fix: install,
    };
  }
  try {
    const parse = await scrapeDcgmExporter(dcgmExporterUrl, fetchFn ? { fetch: fetchFn } : {});
    const profiled = parse.gpus.filter((g) =>
      PROFILING_METRIC_NAMES.some((name) => g.metrics[name] !== undefined),
    ).length;
    if (profiled > 0) {
      return {
        id: 'profiling',
        status: 'pass',
        detail: `dcgm-exporter at ${dcgmExporterUrl}: profiling ratios for ${profiled} GPUs`,
      };
    }
    return {
      id: 'profiling',
      status: 'fail',
      detail: `${noGpm}; dcgm-exporter at ${dcgmExporterUrl} answers with ${parse.gpus.length} GPUs but no DCGM_FI_PROF_* field`,
      fix: 'Start dcgm-exporter with a counters file that lists DCGM_FI_PROF_SM_ACTIVE and the other profiling fields (-f agent/packaging/dcgm-counters.csv).',
    };
  } catch (err) {
    return {
      id: 'profiling',
      status: 'fail',
      detail: `${noGpm}; ${(err as Error).message}`,
      fix: install,
    };
  }
}

/** Options of {@link checkKmsg}. */
export interface KmsgCheckOptions {
  /** The agent's `kmsgPath`, or `off`. */
  readonly path: string;
  /** The user this process runs as (the doctor should run as the service user). */
  readonly uid: number;
  /** `kernel.dmesg_restrict`'s file. @default '/proc/sys/kernel/dmesg_restrict' */
  readonly dmesgRestrictPath?: string;
}

/**
 * The kernel log (`/dev/kmsg`, for NVRM Xid lines NVML cannot report, e.g. 79 and 119) opens and
 * reads (non-blocking, one read of at most 8 KiB; "no record yet" counts as readable), as the
 * agent's kmsg source opens it. Run as root, a pass says little about the service user, which reads
 * it through `CAP_SYSLOG` (gpu-sentinel-agent.service); the detail says so.
 *
 * @param options - path, uid, dmesg_restrict path
 * @returns the result
 */
export function checkKmsg(options: KmsgCheckOptions): DoctorCheckResult {
  if (options.path === 'off')
    return {
      id: 'kmsg',
      status: 'skip',
      detail: 'kmsgPath is off: Xids only from NVML (79 and 119 are missed)',
      fix: 'Set `kmsgPath` to /dev/kmsg.',
    };
  const restrict = readTrimmed(options.dmesgRestrictPath ?? '/proc/sys/kernel/dmesg_restrict');
  const who = options.uid === 0 ? 'as root' : `as uid ${options.uid}`;
  let fd: number | undefined;
  try {
    fd = openSync(options.path, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      readSync(fd, Buffer.alloc(8192), 0, 8192, null);
    } catch (err) {
      // EAGAIN: no record yet (a quiet kernel log); EPIPE: records overwritten since open. Both read fine.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EPIPE') throw err;
    }
    const note =
      options.uid === 0
        ? '; the service user reads it through CAP_SYSLOG (AmbientCapabilities in gpu-sentinel-agent.service)'
        : '';
    return {
      id: 'kmsg',
      status: 'pass',
      detail: `${options.path} readable ${who}${restrict !== undefined ? `, kernel.dmesg_restrict=${restrict}` : ''}${note}`,
    };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const denied = code === 'EACCES' || code === 'EPERM';
    return {
      id: 'kmsg',
      status: 'fail',
      detail: `${options.path} not readable ${who}: ${code ?? (err as Error).message}${restrict !== undefined ? `, kernel.dmesg_restrict=${restrict}` : ''}`,
      fix: denied
        ? 'The service reads the kernel log with CAP_SYSLOG (AmbientCapabilities=CAP_SYSLOG in gpu-sentinel-agent.service, DeviceAllow=/dev/kmsg r); keep both in any drop-in, and do not set ProtectKernelLogs. To check as the service does: sudo systemd-run --pty --uid=gpu-sentinel -p AmbientCapabilities=CAP_SYSLOG gpu-sentinel-agent doctor.'
        : `Set \`kmsgPath\` to the kernel log device (/dev/kmsg); ${options.path} does not open.`,
    };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Instance type families with EFA, where its counters must be readable (p4d/p4de, p5/p5e/p5en, p6, trn). */
const EFA_FAMILIES = /^(p4d|p4de|p5|p5e|p5en|p6|p6e|trn1|trn1n|trn2)\./;

/**
 * EFA counters are in sysfs: at least one RDMA device under the agent's `efaRoot` with a
 * `hw_counters` folder (per port or per device), as the agent's EFA source reads them.
 *
 * @param root - the agent's `efaRoot`, or `off`
 * @param instanceType - the instance type (IMDS or the override), to tell "no EFA here" from "EFA missing"
 * @returns the result: pass, fail on an EFA instance type with none, skip elsewhere
 */
export function checkEfa(root: string, instanceType: string | undefined): DoctorCheckResult {
  const expected = instanceType !== undefined && EFA_FAMILIES.test(instanceType);
  if (root === 'off')
    return {
      id: 'efa',
      status: expected ? 'fail' : 'skip',
      detail: 'efaRoot is off',
      fix: 'Set `efaRoot` to /sys/class/infiniband.',
    };
  const withCounters: string[] = [];
  for (const device of list(root)) {
    const dir = join(root, device);
    const ports = list(join(dir, 'ports'));
    if (
      list(join(dir, 'hw_counters')).length > 0 ||
      ports.some((p) => list(join(dir, 'ports', p, 'hw_counters')).length > 0)
    )
      withCounters.push(device);
  }
  if (withCounters.length > 0)
    return {
      id: 'efa',
      status: 'pass',
      detail: `${withCounters.length} devices with hw_counters under ${root} (${withCounters.slice(0, 4).join(', ')}${withCounters.length > 4 ? ', …' : ''})`,
    };
  const detail = `no RDMA device with hw_counters under ${root}`;
  if (!expected)
    return {
      id: 'efa',
      status: 'skip',
      detail: `${detail}; ${instanceType ?? 'this instance type'} has no EFA`,
    };
  return {
    id: 'efa',
    status: 'fail',
    detail: `${detail}, but ${instanceType} has EFA`,
    fix: 'Install the EFA driver (aws-efa-installer; `lsmod | grep efa`, `fi_info -p efa`), launch with the EFA interfaces attached, and keep ReadOnlyPaths=-/sys/class/infiniband in the unit.',
  };
}

function list(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function readTrimmed(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}
