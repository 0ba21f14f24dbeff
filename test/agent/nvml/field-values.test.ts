import { afterEach, describe, expect, it } from 'vitest';
import { NVML_FIELD, NvmlSource } from '../../../agent/sources/nvml';
import { sampleFromRow } from '../../../agent/window/gpu-row';
import {
  type FakeNvmlVariant,
  fakeNvmlCallCount,
  fakeNvmlFieldRequests,
  fakeNvmlPath,
  setFakeNvmlEnv,
} from '../../setup/fake-nvml';

const AT = new Date('2026-11-21T10:00:00Z');
// Memory temperatures and PCIe replays of the real p5 capture (nvidia-smi -q, driver 535.161.08).
const P5_MEM_TEMP_C = [39, 38, 38, 38, 38, 39, 40, 38];
const P5_REPLAYS = [67, 63, 52, 43, 49, 53, 82, 67];

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('NvmlSource field values', () => {
  it.each(P5_MEM_TEMP_C.map((memTempC, index) => ({ index, memTempC, replays: P5_REPLAYS[index] })))(
    'reads GPU $index memory temperature, NVLink totals, CRC errors and PCIe replays',
    ({ index, memTempC, replays }) => {
      // Prepare
      setFakeNvmlEnv({ PRESET: 'p5' });
      source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
      // Act
      const { gpus, errors } = source.sample(AT);
      // Assess
      const gpu = gpus[index];
      expect(errors).toEqual([]);
      expect(gpu).toMatchObject({
        mem_temp_c: memTempC,
        pcie_replay_count: replays,
        nvlink_crc_errors: index + 1,
      });
      expect((gpu?.nvlink_tx_bytes_total ?? 0) % 1024).toBe(0);
      expect(gpu?.nvlink_tx_bytes_total).toBeGreaterThanOrEqual(4_000_000 * (index + 1) * 1024);
      expect(gpu?.nvlink_rx_bytes_total).toBeGreaterThan(gpu?.nvlink_tx_bytes_total ?? 0);
    },
  );

  it('reads cumulative PCIe byte counters that grow between samples', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UTIL_GPU: 50 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const before = source.sample(AT).gpus[0];
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Act
    const after = source.sample(AT).gpus[0];
    // Assess
    expect(after?.pcie_tx_bytes_total).toBeGreaterThan(
      before?.pcie_tx_bytes_total ?? Number.POSITIVE_INFINITY,
    );
    expect(after?.pcie_rx_bytes_total).toBeGreaterThan(
      before?.pcie_rx_bytes_total ?? Number.POSITIVE_INFINITY,
    );
    expect(after?.nvlink_tx_bytes_total).toBeGreaterThan(
      before?.nvlink_tx_bytes_total ?? Number.POSITIVE_INFINITY,
    );
  });

  it('makes a field NOT_SUPPORTED absent, requests it once per GPU, and keeps the others', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UNSUPPORTED_FIELDS: [NVML_FIELD.MEMORY_TEMP] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const samples = [source.sample(AT), source.sample(AT), source.sample(AT)];
    // Assess
    for (const { gpus, errors } of samples) {
      expect(errors).toEqual([]);
      for (const gpu of gpus) {
        expect(gpu).not.toHaveProperty('mem_temp_c');
        expect(gpu.pcie_tx_bytes_total).toBeGreaterThan(0);
      }
    }
    expect(fakeNvmlFieldRequests(NVML_FIELD.MEMORY_TEMP)).toBe(8);
    expect(fakeNvmlFieldRequests(NVML_FIELD.PCIE_COUNT_TX_BYTES)).toBe(8 * 3);
    expect(fakeNvmlCallCount('nvmlDeviceGetFieldValues')).toBe(8 * 3);
  });

  it('sums the CRC totals it has when the driver lacks one of the two', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UNSUPPORTED_FIELDS: [NVML_FIELD.NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const gpu = source.sample(AT).gpus[3];
    // Assess
    expect(gpu?.nvlink_crc_errors).toBe(1);
  });

  it('asks inside a window only for HBM temperature and PCIe RX bytes, for every field at its edge', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const requests = () => Object.values(NVML_FIELD).map((id) => fakeNvmlFieldRequests(id));
    const before = requests();

    // Act
    const inside = source.sampleRows(AT, false).rows.map(sampleFromRow);
    const afterInside = requests();
    const edge = source.sampleRows(AT, true).rows.map(sampleFromRow);

    // Assess: one call per GPU and poll either way
    const asked = (from: number[], to: number[]) =>
      Object.keys(NVML_FIELD).filter((_, i) => (to[i] ?? 0) - (from[i] ?? 0) === 8);
    expect(asked(before, afterInside)).toEqual(['MEMORY_TEMP', 'PCIE_COUNT_RX_BYTES']);
    expect(asked(afterInside, requests())).toEqual(Object.keys(NVML_FIELD));
    expect(fakeNvmlCallCount('nvmlDeviceGetFieldValues')).toBe(8 * 2);
    for (const gpu of inside) {
      expect(gpu).toHaveProperty('mem_temp_c');
      expect(gpu).toHaveProperty('pcie_rx_bytes_total');
      for (const field of [
        'pcie_tx_bytes_total',
        'nvlink_tx_bytes_total',
        'nvlink_rx_bytes_total',
        'nvlink_crc_errors',
      ])
        expect(gpu).not.toHaveProperty(field);
    }
    for (const gpu of edge) expect(gpu).toHaveProperty('nvlink_crc_errors');
  });

  it('drops a field a GPU lacks from both requests, found at a poll inside a window', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', UNSUPPORTED_FIELDS: [NVML_FIELD.PCIE_COUNT_RX_BYTES] });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const rx0 = fakeNvmlFieldRequests(NVML_FIELD.PCIE_COUNT_RX_BYTES);

    // Act
    source.sampleRows(AT, false);
    source.sampleRows(AT, true);
    const [gpu] = source.sample(AT).gpus;

    // Assess: asked once per GPU, at the first poll, and never again at an edge or inside a window
    expect(fakeNvmlFieldRequests(NVML_FIELD.PCIE_COUNT_RX_BYTES) - rx0).toBe(8);
    expect(gpu).not.toHaveProperty('pcie_rx_bytes_total');
    expect(gpu).toHaveProperty('pcie_tx_bytes_total');
  });
});

describe('NvmlSource clocks-event reasons', () => {
  it.each<{ variant: FakeNvmlVariant; reasons?: number; want: number; symbol: string; absent: string }>([
    {
      variant: 'current',
      want: 0x88,
      symbol: 'nvmlDeviceGetCurrentClocksEventReasons',
      absent: 'nvmlDeviceGetCurrentClocksThrottleReasons',
    },
    {
      variant: 'current',
      reasons: 0x24,
      want: 0x24,
      symbol: 'nvmlDeviceGetCurrentClocksEventReasons',
      absent: 'nvmlDeviceGetCurrentClocksThrottleReasons',
    },
    {
      variant: 'legacy',
      reasons: 0x1,
      want: 0x1,
      symbol: 'nvmlDeviceGetCurrentClocksThrottleReasons',
      absent: 'nvmlDeviceGetCurrentClocksEventReasons',
    },
  ])('reads $want through $symbol on the $variant library', ({ variant, reasons, want, symbol, absent }) => {
    // Prepare
    setFakeNvmlEnv(
      reasons === undefined ? { PRESET: 'p5' } : { PRESET: 'p5', CLOCKS_EVENT_REASONS: reasons },
    );
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(variant) });
    // Act
    const { gpus } = source.sample(AT);
    // Assess
    expect(gpus.map((g) => g.clocks_event_reasons)).toEqual(Array(8).fill(want));
    expect(fakeNvmlCallCount(symbol, variant)).toBe(8);
    expect(fakeNvmlCallCount(absent, variant)).toBe(0);
  });
});

describe('NvmlSource retired pages', () => {
  it.each<{ pending?: 0 | 1; want: boolean | undefined }>([
    { want: undefined },
    { pending: 0, want: false },
    { pending: 1, want: true },
  ])('reads retired_pages_pending $want when the driver answers $pending', ({ pending, want }) => {
    // Prepare
    setFakeNvmlEnv(pending === undefined ? {} : { RETIRED_PAGES_PENDING: pending });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    const gpu = source.sample(AT).gpus[0];
    // Assess
    expect(gpu?.retired_pages_pending).toBe(want);
  });
});
