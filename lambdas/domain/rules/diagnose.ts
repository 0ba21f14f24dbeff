import type { GpuMetrics, ProfilingSource } from '../../contract';
import type { Diagnosis } from '../types';
import type { Thresholds } from './thresholds';

/**
 * The efficiency diagnosis of one GPU horizon: the leaf of the efficiency decision tree (docs/design.md §6),
 * first match wins. An absent metric never counts as zero: a branch that needs it is not taken.
 *
 * 1. `sm_active` absent (no GPM / DCGM): `gpu_util` (an upper bound on SM activity) below
 *    `idleSmActiveBelow` → `idle` / `held_idle` as below; otherwise `unknown` (no leaf can be named).
 * 2. `sm_active < idleSmActiveBelow` and `gpu_util` below `kernelsRunningGpuUtilAtLeast` (or absent)
 *    → `held_idle` when `compute_processes > 0`, a Kubernetes pod holds the GPU (`heldByPod`), or —
 *    processes unknown — `fb_used_bytes` ≥ `heldFbUsedBytesAtLeast`; else `idle`. With kernels running
 *    (`gpu_util` at or above it) the GPU is not idle but launch-bound: the tree goes on (usually to
 *    `cpu_bound`: tiny kernels launched one at a time).
 * 3. `thermal_throttle_ratio ≥ thermalThrottleRatioAtLeast`, `power_throttle_ratio ≥
 *    powerThrottleRatioAtLeast` or `max_gpu_temp_c > thermalThrottleTempC` → `throttled` (the
 *    clocks, held down by heat or the power cap, not the job, hold it back).
 * 4. `gpu_util ≥ fakeLoadGpuUtilAtLeast` and `sm_active < underutilizedSmActiveBelow` → `fake_load`.
 * 5. `dram_active ≥ memoryBoundDramActiveAtLeast` → `memory_bound` (whether SM is high or low).
 * 6. `sm_active < underutilizedSmActiveBelow`: PCIe RX high (`pcie_rx_bytes_per_s ≥
 *    inputBoundPcieRxBytesPerS` or `max_pcie_rx_bytes_per_s ≥ inputBoundPcieRxBurstBytesPerS`) →
 *    `input_bound`; PCIe RX measured and low → `cpu_bound`; PCIe RX absent → `low_occupancy` when
 *    `sm_occupancy < lowOccupancyBelow` (small batches), else `unknown`.
 * 7. `sm_active < computeBoundSmActiveAtLeast`: `tensor_active < tensorIdleBelow` → `tensor_idle`.
 * 8. `sm_occupancy < lowOccupancyBelow` → `low_occupancy`.
 * 9. otherwise → `compute_bound` (working as intended).
 *
 * @param m - the horizon's metrics
 * @param profiling - the batch's `agent.profiling_source` (`none`: SM activity cannot be measured)
 * @param t - the thresholds
 * @param heldByPod - a Kubernetes pod has the GPU allocated (the window's `k8s`): idle is then
 *   `held_idle` whatever `compute_processes` says. @default false
 * @returns the leaf
 * @example
 * diagnoseHorizon({ gpu_util: 1, sm_active: 0.02 }, 'gpm', DEFAULT_THRESHOLDS); // 'fake_load'
 */
export function diagnoseHorizon(
  m: GpuMetrics,
  profiling: ProfilingSource,
  t: Thresholds,
  heldByPod = false,
): Diagnosis {
  // Processes unknown (dcgm-exporter): the framebuffer tells a held GPU from an idle one.
  const heldByMemory =
    m.compute_processes === undefined &&
    m.fb_used_bytes !== undefined &&
    m.fb_used_bytes >= t.heldFbUsedBytesAtLeast;
  const noProcess =
    !heldByPod && !heldByMemory && (m.compute_processes === undefined || m.compute_processes === 0);
  const sm = profiling === 'none' ? undefined : m.sm_active;
  if (sm === undefined) {
    if (m.gpu_util !== undefined && m.gpu_util < t.idleSmActiveBelow) return noProcess ? 'idle' : 'held_idle';
    return 'unknown';
  }
  const kernelsRunning = m.gpu_util !== undefined && m.gpu_util >= t.kernelsRunningGpuUtilAtLeast;
  if (sm < t.idleSmActiveBelow && !kernelsRunning) return noProcess ? 'idle' : 'held_idle';
  if (
    (m.thermal_throttle_ratio ?? 0) >= t.thermalThrottleRatioAtLeast ||
    (m.power_throttle_ratio ?? 0) >= t.powerThrottleRatioAtLeast ||
    (m.max_gpu_temp_c ?? Number.NEGATIVE_INFINITY) > t.thermalThrottleTempC
  )
    return 'throttled';
  if (m.gpu_util !== undefined && m.gpu_util >= t.fakeLoadGpuUtilAtLeast && sm < t.underutilizedSmActiveBelow)
    return 'fake_load';
  if (m.dram_active !== undefined && m.dram_active >= t.memoryBoundDramActiveAtLeast) return 'memory_bound';
  const lowOccupancy = m.sm_occupancy !== undefined && m.sm_occupancy < t.lowOccupancyBelow;
  if (sm < t.underutilizedSmActiveBelow) {
    const rx = m.pcie_rx_bytes_per_s;
    const burst = m.max_pcie_rx_bytes_per_s;
    if (
      (rx !== undefined && rx >= t.inputBoundPcieRxBytesPerS) ||
      (burst !== undefined && burst >= t.inputBoundPcieRxBurstBytesPerS)
    )
      return 'input_bound';
    if (rx !== undefined) return 'cpu_bound';
    return lowOccupancy ? 'low_occupancy' : 'unknown';
  }
  if (
    sm < t.computeBoundSmActiveAtLeast &&
    m.tensor_active !== undefined &&
    m.tensor_active < t.tensorIdleBelow
  )
    return 'tensor_idle';
  if (lowOccupancy) return 'low_occupancy';
  return 'compute_bound';
}
