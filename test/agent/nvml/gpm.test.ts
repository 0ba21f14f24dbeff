import { afterEach, describe, expect, it } from 'vitest';
import { type GpmMetricRequest, gpmValue, NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const AT = new Date('2026-11-21T10:00:00Z');
const LATER = new Date(AT.getTime() + 1000);
const PROFILING_FIELDS = [
  'sm_active',
  'sm_occupancy',
  'tensor_active',
  'dram_active',
  'fp16_active',
  'fp32_active',
  'fp64_active',
] as const;

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource GPM on the p5 preset (H100)', () => {
  it('fills the profiling ratios from the second sample on, none on the first', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UTIL_GPU: 50, SM_ACTIVE: 40, TENSOR_ACTIVE: 24 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const first = source.sample(AT);
    const second = source.sample(LATER);
    // Assess
    for (const gpu of first.gpus) for (const field of PROFILING_FIELDS) expect(gpu).not.toHaveProperty(field);
    expect(second.errors).toEqual([]);
    expect(second.gpus).toHaveLength(8);
    for (const gpu of second.gpus) {
      expect(gpu).toMatchObject({
        gpu_util: 0.5,
        sm_active: 0.4,
        sm_occupancy: 0.2,
        tensor_active: 0.24,
        dram_active: 0.25,
        fp16_active: 0.03,
        fp32_active: 0.1,
        fp64_active: 0,
      });
    }
    expect(source.profilingSource()).toBe('gpm');
  });

  it('shows a tiny kernel as busy by utilization and nearly idle by SM activity', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UTIL_GPU: 100, SM_ACTIVE: 2 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    source.sample(AT);
    const gpu = source.sample(LATER).gpus[0];
    // Assess
    expect(gpu?.gpu_util).toBe(1);
    expect(gpu?.sm_active).toBe(0.02);
  });

  it('keeps the older GPM sample when the next call comes within 100 ms', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', SM_ACTIVE: 40 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    source.sample(AT);
    const soon = source.sample(new Date(AT.getTime() + 50));
    const late = source.sample(new Date(AT.getTime() + 150));
    // Assess
    expect(soon.gpus[0]).not.toHaveProperty('sm_active');
    expect(late.gpus[0]?.sm_active).toBe(0.4);
    expect(fakeNvmlCallCount('nvmlGpmSampleGet')).toBe(8 * 2);
    expect(fakeNvmlCallCount('nvmlGpmMetricsGet')).toBe(8);
  });

  it('leaves the profiling ratios absent on the one GPU whose GPM query fails', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', SM_ACTIVE: 40, GPM_FAIL_GPU: 2 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const first = source.sample(AT);
    const { gpus } = source.sample(LATER);
    // Assess
    expect(first.errors).toMatchObject([{ call: 'nvmlGpmQueryDeviceSupport', gpuIndex: 2, code: 999 }]);
    expect(gpus.filter((g) => g.sm_active === 0.4).map((g) => g.gpu_index)).toEqual([0, 1, 3, 4, 5, 6, 7]);
    expect(gpus[2]).not.toHaveProperty('sm_active');
    expect(gpus[2]?.power_w).toBeGreaterThan(0);
    expect(source.profilingSource()).toBe('gpm');
  });

  it('reads the PCIe rates from GPM only where the PCIe byte counters are absent', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UNSUPPORTED_FIELDS: [197, 198] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    source.sample(AT);
    const gpu = source.sample(LATER).gpus[0];
    // Assess
    expect(gpu).not.toHaveProperty('pcie_tx_bytes_total');
    expect(gpu).not.toHaveProperty('pcie_rx_bytes_total');
    expect(gpu).toMatchObject({ pcie_tx_bytes_per_s: 3875 * 1024, pcie_rx_bytes_per_s: 574 * 1024 });
  });

  it('does not ask GPM for PCIe rates while the PCIe byte counters answer', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    source.sample(AT);
    const gpu = source.sample(LATER).gpus[0];
    // Assess
    expect(gpu?.pcie_tx_bytes_total).toBeGreaterThan(0);
    expect(gpu).not.toHaveProperty('pcie_tx_bytes_per_s');
    expect(gpu).not.toHaveProperty('pcie_rx_bytes_per_s');
  });

  it('frees both GPM samples of every GPU at close', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    source.sample(AT);
    // Act
    source.close();
    // Assess
    expect(fakeNvmlCallCount('nvmlGpmSampleAlloc')).toBe(16);
    expect(fakeNvmlCallCount('nvmlGpmSampleFree')).toBe(16);
  });
});

describe('NvmlSource GPM on the p4d preset (A100)', () => {
  it('leaves every profiling ratio absent even at full utilization, and reports no profiling source', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p4d', UTIL_GPU: 100, SM_ACTIVE: 40 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const samples = [source.sample(AT), source.sample(LATER)];
    // Assess
    for (const { gpus, errors } of samples) {
      expect(errors).toEqual([]);
      for (const gpu of gpus) {
        expect(gpu.gpu_util).toBe(1);
        for (const field of PROFILING_FIELDS) expect(gpu).not.toHaveProperty(field);
      }
    }
    expect(source.profilingSource()).toBe('none');
    expect(fakeNvmlCallCount('nvmlGpmSampleAlloc')).toBe(0);
    expect(fakeNvmlCallCount('nvmlGpmSampleGet')).toBe(0);
  });
});

describe('gpmValue', () => {
  it.each<{ value: number; unit: GpmMetricRequest['unit']; want: number | undefined }>([
    { value: 2, unit: 'percent', want: 0.02 },
    { value: 100, unit: 'percent', want: 1 },
    { value: 100.05, unit: 'percent', want: 1 },
    { value: -0.05, unit: 'percent', want: 0 },
    { value: 101, unit: 'percent', want: undefined },
    { value: -5, unit: 'percent', want: undefined },
    { value: Number.NaN, unit: 'percent', want: undefined },
    { value: 1, unit: 'mib_per_s', want: 1_048_576 },
    { value: -1, unit: 'mib_per_s', want: undefined },
  ])('turns $value ($unit) into $want', ({ value, unit, want }) => {
    // Prepare / Act
    const got = gpmValue(value, unit);
    // Assess
    expect(got).toBe(want);
  });
});
