import type { GpuWindow } from '../contract';

/**
 * Framebuffer used from which a GPU whose processes are unknown counts as held, bytes: 256 MiB. An
 * idle GPU with no context shows 0–12 MiB used (real captures: H100 0 MiB, A10 4 MiB, A100 MIG
 * 12 MiB, `test/fixtures/real/`); a CUDA context alone takes several hundred MiB, and a loaded model
 * gigabytes, so a held GPU is far above. Used where dcgm-exporter gives no process count.
 */
export const HELD_FB_USED_BYTES_AT_LEAST = 256 * 1024 * 1024;

/**
 * Whether something holds a GPU in a window, as far as the window tells (docs/design.md §5,
 * docs/detection.md §5): a compute process runs on it (`compute_processes > 0`, NVML
 * `nvmlDeviceGetComputeRunningProcesses`), or a Kubernetes pod has it allocated (`k8s`,
 * dcgm-exporter's pod labels) — a pod that holds a GPU and runs nothing still keeps it from everyone
 * else, and its owner is known. Where the process count is unknown (dcgm-exporter gives none), the
 * framebuffer decides: `fb_used_bytes` ≥ `fbHeldAtLeast` is a context holding memory. An absent
 * `compute_processes` never counts as 0.
 *
 * @param window - a GPU window (flush or horizon); reads `metrics.compute_processes`, `metrics.fb_used_bytes` and `k8s`
 * @param fbHeldAtLeast - framebuffer used that means held, bytes. @default {@link HELD_FB_USED_BYTES_AT_LEAST}
 * @returns `true` when a process, a pod or held memory holds the GPU; `false` when `compute_processes`
 *   is 0 (or, unknown, the framebuffer is below `fbHeldAtLeast`) and no pod holds it; `undefined` when
 *   none of the three is known
 * @example
 * isGpuHeld({ metrics: {}, k8s: { namespace: 'ml', pod: 'train-0' } }); // true
 * isGpuHeld({ metrics: { compute_processes: 0 } }); // false
 * isGpuHeld({ metrics: { fb_used_bytes: 40 * 2 ** 30 } }); // true
 * isGpuHeld({ metrics: {} }); // undefined
 */
export function isGpuHeld(
  window: Pick<GpuWindow, 'metrics' | 'k8s'>,
  fbHeldAtLeast: number = HELD_FB_USED_BYTES_AT_LEAST,
): boolean | undefined {
  if (window.k8s !== undefined) return true;
  const processes = window.metrics.compute_processes;
  if (processes !== undefined) return processes > 0;
  const fb = window.metrics.fb_used_bytes;
  return fb === undefined ? undefined : fb >= fbHeldAtLeast;
}
