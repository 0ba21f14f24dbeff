import type { GpuWindow } from '../contract';

/**
 * Whether something holds a GPU in a window, as far as the window tells (docs/design.md §5): a
 * compute process runs on it (`compute_processes > 0`, NVML `nvmlDeviceGetComputeRunningProcesses`),
 * or a Kubernetes pod has it allocated (`k8s`, dcgm-exporter's pod labels) — a pod that holds a GPU
 * and runs nothing still keeps it from everyone else, and its owner is known. An absent
 * `compute_processes` never counts as 0.
 *
 * @param window - a GPU window (flush or horizon); reads `metrics.compute_processes` and `k8s`
 * @returns `true` when a process or a pod holds the GPU; `false` when `compute_processes` is 0 and
 *   no pod holds it; `undefined` when neither is known (off Kubernetes, process count unsupported)
 * @example
 * isGpuHeld({ metrics: {}, k8s: { namespace: 'ml', pod: 'train-0' } }); // true
 * isGpuHeld({ metrics: { compute_processes: 0 } }); // false
 * isGpuHeld({ metrics: {} }); // undefined
 */
export function isGpuHeld(window: Pick<GpuWindow, 'metrics' | 'k8s'>): boolean | undefined {
  if (window.k8s !== undefined) return true;
  const processes = window.metrics.compute_processes;
  return processes === undefined ? undefined : processes > 0;
}
