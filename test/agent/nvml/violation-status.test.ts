import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const AT = new Date('2026-11-21T10:00:00Z');
/** The fake's violation counter starts at pct/100 × one hour (in µs) and grows with real time since init. */
const HOUR_US = 3600e6;

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource power-cap violation time (nvmlDeviceGetViolationStatus, NVML_PERF_POLICY_POWER)', () => {
  it('reads violationTime ns as whole µs into power_violation_us_total on every GPU', () => {
    // Prepare: capped 40 % of the time
    setFakeNvmlEnv({ POWER_VIOLATION_PCT: 40 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const { gpus, errors } = source.sample(AT);
    // Assess: 0.4 × (1 h + the few ms since init), in µs, an integer
    expect(errors).toEqual([]);
    expect(gpus).toHaveLength(8);
    for (const gpu of gpus) {
      expect(Number.isInteger(gpu.power_violation_us_total)).toBe(true);
      expect(gpu.power_violation_us_total).toBeGreaterThanOrEqual(0.4 * HOUR_US);
      expect(gpu.power_violation_us_total).toBeLessThan(0.4 * (HOUR_US + 60e6));
    }
    expect(fakeNvmlCallCount('nvmlDeviceGetViolationStatus')).toBe(8);
  });

  it('gives a counter that grows by the capped share of the time between two readings', async () => {
    // Prepare
    setFakeNvmlEnv({ POWER_VIOLATION_PCT: 50 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // The fake reads its clock inside each call: the time between its two readings lies within
    // [end of the first call, start of the second] and [start of the first, end of the second].
    const t0 = performance.now();
    const first = source.sample(AT).gpus[0]?.power_violation_us_total ?? Number.NaN;
    const t1 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 120));
    // Act
    const t2 = performance.now();
    const second = source.sample(AT).gpus[0]?.power_violation_us_total ?? Number.NaN;
    const t3 = performance.now();
    // Assess: half of the time between the readings (1 ms of slack for the two clocks' rounding)
    expect(second - first).toBeGreaterThanOrEqual(0.5 * (t2 - t1) * 1000 - 1000);
    expect(second - first).toBeLessThanOrEqual(0.5 * (t3 - t0) * 1000 + 1000);
    expect(second - first).toBeGreaterThan(0.5 * 100_000);
  });

  it('leaves the field absent, and never calls again, where the driver answers NOT_SUPPORTED', () => {
    // Prepare
    setFakeNvmlEnv({ POWER_VIOLATION_PCT: 40, NOT_SUPPORTED: ['nvmlDeviceGetViolationStatus'] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const samples = [source.sample(AT), source.sample(AT), source.sample(AT)];
    // Assess
    for (const { gpus, errors } of samples) {
      expect(errors).toEqual([]);
      for (const gpu of gpus) {
        expect(gpu).not.toHaveProperty('power_violation_us_total');
        expect(gpu.clocks_event_reasons).toBe(0x88);
      }
    }
    expect(fakeNvmlCallCount('nvmlDeviceGetViolationStatus')).toBe(8);
  });
});
