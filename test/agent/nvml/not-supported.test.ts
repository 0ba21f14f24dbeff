import { afterEach, describe, expect, it } from 'vitest';
import { NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';
import { recordingLogger } from './recording-logger';

const AT = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource with a metric NOT_SUPPORTED', () => {
  it.each([
    { call: 'nvmlDeviceGetTotalEnergyConsumption', absent: ['energy_mj_total'], callsPerGpu: 1 },
    {
      call: 'nvmlDeviceGetRemappedRows',
      absent: ['remapped_rows_pending', 'remapped_rows_failure'],
      callsPerGpu: 1,
    },
    { call: 'nvmlDeviceGetUtilizationRates', absent: ['gpu_util', 'mem_copy_util'], callsPerGpu: 1 },
    {
      call: 'nvmlDeviceGetTotalEccErrors',
      absent: ['ecc_sbe_volatile', 'ecc_dbe_volatile', 'ecc_sbe_aggregate', 'ecc_dbe_aggregate'],
      callsPerGpu: 4,
    },
    { call: 'nvmlDeviceGetClockInfo', absent: ['sm_clock_mhz', 'mem_clock_mhz'], callsPerGpu: 2 },
    { call: 'nvmlDeviceGetCurrentClocksEventReasons', absent: ['clocks_event_reasons'], callsPerGpu: 1 },
    { call: 'nvmlDeviceGetPcieReplayCounter', absent: ['pcie_replay_count'], callsPerGpu: 1 },
    { call: 'nvmlDeviceGetRetiredPagesPendingStatus', absent: ['retired_pages_pending'], callsPerGpu: 1 },
    {
      call: 'nvmlDeviceGetFieldValues',
      absent: ['mem_temp_c', 'pcie_tx_bytes_total', 'nvlink_tx_bytes_total', 'nvlink_crc_errors'],
      callsPerGpu: 1,
    },
    {
      call: 'nvmlDeviceGetComputeRunningProcesses_v3',
      absent: ['compute_processes', 'processes'],
      callsPerGpu: 1,
    },
  ])('leaves $call metrics absent and never polls it again', ({ call, absent, callsPerGpu }) => {
    // Prepare
    setFakeNvmlEnv({ NOT_SUPPORTED: [call] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const samples = [source.sample(AT), source.sample(AT), source.sample(AT)];
    // Assess
    for (const { gpus, errors } of samples) {
      expect(gpus).toHaveLength(8);
      expect(errors).toEqual([]);
      for (const gpu of gpus) {
        for (const field of absent) expect(gpu).not.toHaveProperty(field);
        expect(gpu.power_w).toBeGreaterThan(0);
      }
    }
    expect(fakeNvmlCallCount(call)).toBe(8 * callsPerGpu);
    expect(fakeNvmlCallCount('nvmlDeviceGetPowerUsage')).toBe(8 * 3);
    expect(source.stats).toEqual({ samples: 3, nvml_errors: 0 });
  });

  it('logs NOT_SUPPORTED once per GPU and metric, at info level', () => {
    // Prepare
    setFakeNvmlEnv({ NOT_SUPPORTED: ['nvmlDeviceGetTotalEnergyConsumption'] });
    const { logger, lines } = recordingLogger();
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });
    // Act
    for (let i = 0; i < 5; i++) source.sample(AT);
    // Assess
    const energy = lines.filter((l) => l.data.call === 'nvmlDeviceGetTotalEnergyConsumption');
    expect(energy).toHaveLength(8);
    expect(energy.every((l) => l.level === 'info')).toBe(true);
    expect(energy.map((l) => l.data.gpu_index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });

  it('leaves identity fields absent when NVML cannot give them', () => {
    // Prepare
    setFakeNvmlEnv({ NOT_SUPPORTED: ['nvmlDeviceGetSerial'] });
    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Assess
    expect(source.identity()[0]).toEqual({
      index: 0,
      name: 'NVIDIA H100 80GB HBM3',
      uuid: 'GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa',
      pci_bus_id: '0000:19:00.0',
    });
  });
});
