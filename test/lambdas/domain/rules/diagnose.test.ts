import { describe, expect, it } from 'vitest';
import type { GpuMetrics, ProfilingSource } from '../../../../lambdas/contract';
import { DEFAULT_THRESHOLDS, type Diagnosis, diagnoseHorizon } from '../../../../lambdas/domain';
import { COMPUTE_BOUND } from './horizons';

const m = (over: GpuMetrics): GpuMetrics => ({ ...COMPUTE_BOUND, ...over });
const noSm: GpuMetrics = Object.fromEntries(
  Object.entries(COMPUTE_BOUND).filter(([k]) => !k.includes('sm_active')),
) as GpuMetrics;

describe('diagnoseHorizon', () => {
  it.each<[string, GpuMetrics, ProfilingSource, Diagnosis]>([
    ['idle: no process, SM 0', m({ gpu_util: 0, sm_active: 0, compute_processes: 0 }), 'gpm', 'idle'],
    [
      'held idle: a process, SM 0',
      m({ gpu_util: 0, sm_active: 0.001, compute_processes: 2 }),
      'gpm',
      'held_idle',
    ],
    [
      'held idle: a process, SM 0, kernels in under 5 % of the sample periods',
      m({ gpu_util: 0.04, sm_active: 0, compute_processes: 1 }),
      'gpm',
      'held_idle',
    ],
    [
      // The H200 capture's tiny phase: one synchronised 1-element kernel at a time, GPU util 11 %.
      'launch bound, not idle: SM 0 with kernels running 11 % of the time, PCIe quiet',
      m({ gpu_util: 0.11, sm_active: 0.0004, compute_processes: 1, pcie_rx_bytes_per_s: 1.5e7 }),
      'gpm',
      'cpu_bound',
    ],
    [
      'fake load, not idle: GPU util 98 %, SM 0',
      m({ sm_active: 0, compute_processes: 1 }),
      'gpm',
      'fake_load',
    ],
    [
      'idle from GPU util alone when SM is not measured',
      { ...noSm, gpu_util: 0, compute_processes: 0 },
      'none',
      'idle',
    ],
    ['unknown: no profiling, GPU util 98 %', noSm, 'none', 'unknown'],
    ['unknown: profiling none even when a value came', COMPUTE_BOUND, 'none', 'unknown'],
    ['throttled: 30 % of samples throttled', m({ thermal_throttle_ratio: 0.3 }), 'gpm', 'throttled'],
    [
      'throttled: the power cap held the clocks 30 % of the horizon',
      m({ power_throttle_ratio: 0.3 }),
      'gpm',
      'throttled',
    ],
    ['not throttled: power-capped 10 %', m({ power_throttle_ratio: 0.1 }), 'gpm', 'compute_bound'],
    ['fake load: GPU util 100 %, SM 2 %', m({ gpu_util: 1, sm_active: 0.02 }), 'gpm', 'fake_load'],
    ['memory bound: SM high, DRAM 85 %', m({ dram_active: 0.85 }), 'gpm', 'memory_bound'],
    [
      'memory bound: SM low, DRAM 85 %',
      m({ gpu_util: 0.4, sm_active: 0.2, dram_active: 0.85 }),
      'gpm',
      'memory_bound',
    ],
    [
      'input bound: SM 20 %, PCIe RX 2 GB/s',
      m({ gpu_util: 0.5, sm_active: 0.2, pcie_rx_bytes_per_s: 2e9 }),
      'gpm',
      'input_bound',
    ],
    [
      'cpu bound: SM 20 %, PCIe RX 10 MB/s',
      m({ gpu_util: 0.5, sm_active: 0.2, pcie_rx_bytes_per_s: 1e7 }),
      'dcgm',
      'cpu_bound',
    ],
    ['tensor idle: SM 50 %, tensor 0', m({ sm_active: 0.5, tensor_active: 0 }), 'gpm', 'tensor_idle'],
    ['low occupancy: SM 80 %, occupancy 10 %', m({ sm_occupancy: 0.1 }), 'gpm', 'low_occupancy'],
    ['compute bound: SM 85 %, DRAM 40 %', COMPUTE_BOUND, 'gpm', 'compute_bound'],
    [
      'compute bound: SM 50 % with tensor active absent (never zero)',
      m({ sm_active: 0.5, tensor_active: undefined }),
      'gpm',
      'compute_bound',
    ],
  ])('%s', (_case, metrics, profiling, expected) => {
    // Act / Assess
    expect(diagnoseHorizon(metrics, profiling, DEFAULT_THRESHOLDS)).toBe(expected);
  });

  it.each<[string, GpuMetrics, ProfilingSource, Diagnosis]>([
    [
      'held idle: a pod, no process, SM 0',
      m({ gpu_util: 0, sm_active: 0, compute_processes: 0 }),
      'gpm',
      'held_idle',
    ],
    [
      'held idle: a pod, process count unknown',
      m({ gpu_util: 0, sm_active: 0, compute_processes: undefined }),
      'gpm',
      'held_idle',
    ],
    ['held idle: a pod, GPU util 0 without profiling', { ...noSm, gpu_util: 0 }, 'none', 'held_idle'],
    ['compute bound: a pod working', COMPUTE_BOUND, 'gpm', 'compute_bound'],
  ])('%s (held by a Kubernetes pod)', (_case, metrics, profiling, expected) => {
    // Act / Assess
    expect(diagnoseHorizon(metrics, profiling, DEFAULT_THRESHOLDS, true)).toBe(expected);
  });
});
