import { afterEach, describe, expect, it } from 'vitest';
import { NvmlCallError, type NvmlLogger, NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const AT = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource with a failing call', () => {
  it.each([
    { call: 'nvmlDeviceGetPowerUsage', field: 'power_w' },
    { call: 'nvmlDeviceGetMemoryInfo_v2', field: 'fb_used_bytes' },
    { call: 'nvmlDeviceGetTemperature', field: 'gpu_temp_c' },
    { call: 'nvmlDeviceGetComputeRunningProcesses_v3', field: 'compute_processes' },
  ])('returns an NvmlCallError per GPU naming $call and keeps sampling the rest', ({ call, field }) => {
    // Prepare
    setFakeNvmlEnv({ FAIL_CALL: [call] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const { gpus, errors, events } = source.sample(AT);
    // Assess
    expect(gpus).toHaveLength(8);
    for (const gpu of gpus) {
      expect(gpu).not.toHaveProperty(field);
      expect(gpu.sm_clock_mhz).toBe(86);
    }
    expect(events).toEqual([]);
    expect(errors).toHaveLength(8);
    expect(errors[2]).toBeInstanceOf(NvmlCallError);
    expect(errors[2]).toMatchObject({
      name: 'NvmlCallError',
      call,
      gpuIndex: 2,
      code: 999,
      nvmlMessage: 'Unknown Error',
    });
    expect(errors[2]?.message).toContain(`${call} on GPU 2`);
    expect(source.stats.nvml_errors).toBe(8);
  });

  it('counts every failure but logs each GPU and call once', () => {
    // Prepare
    setFakeNvmlEnv({ FAIL_CALL: ['nvmlDeviceGetPowerUsage'], GPU_COUNT: 2 });
    const warnings: string[] = [];
    const logger: NvmlLogger = { info: () => {}, warn: (_data, message) => warnings.push(message) };
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    // Act
    const results = [source.sample(AT), source.sample(AT), source.sample(AT)];
    // Assess
    expect(results.map((r) => r.errors.length)).toEqual([2, 2, 2]);
    expect(source.stats).toEqual({ samples: 3, nvml_errors: 6 });
    expect(warnings).toHaveLength(2);
  });

  it('reports a failed identity call with the first sample', () => {
    // Prepare
    setFakeNvmlEnv({ FAIL_CALL: ['nvmlDeviceGetUUID'], GPU_COUNT: 1 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const first = source.sample(AT);
    const second = source.sample(AT);
    // Assess
    expect(source.identity()[0]).not.toHaveProperty('uuid');
    expect(first.errors.map((e) => e.call)).toEqual(['nvmlDeviceGetUUID']);
    expect(second.errors).toEqual([]);
    expect(source.stats.nvml_errors).toBe(1);
  });

  it('leaves a version absent when its call fails', () => {
    // Prepare
    setFakeNvmlEnv({ FAIL_CALL: ['nvmlSystemGetDriverVersion'] });
    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Assess
    expect(source.versions()).toEqual({ nvml_version: '12.535.161.08', cuda_version: '12.2' });
    expect(source.sample(AT).errors.map((e) => e.call)).toEqual(['nvmlSystemGetDriverVersion']);
  });
});
