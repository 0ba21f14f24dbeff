import { afterEach, describe, expect, it } from 'vitest';
import {
  NVML_CALL_SLOT_NAMES,
  NVML_CALL_SLOTS,
  NVML_METRIC_ROWS,
  NvmlSource,
} from '../../../agent/sources/nvml';
import { sampleFromRow } from '../../../agent/window/gpu-row';
import { fakeNvmlCallCount, fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

const AT = new Date('2026-11-21T10:00:00Z');

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
});

describe('the NVML metric table', () => {
  it('has one unsupported slot per row and per reader, each named once', () => {
    // Assess
    expect(new Set(NVML_CALL_SLOT_NAMES).size).toBe(NVML_CALL_SLOT_NAMES.length);
    expect(NVML_CALL_SLOT_NAMES).toHaveLength(NVML_METRIC_ROWS.length + 3);
    expect(Object.values(NVML_CALL_SLOTS)).toEqual([0, 1, 2].map((i) => NVML_METRIC_ROWS.length + i));
  });

  it.each(NVML_METRIC_ROWS.map((row) => [row.id, row] as const))(
    'row %s fills its fields from the fake libnvidia-ml, in contract units',
    (_id, row) => {
      // Prepare: the fake answers page retirement only when told (NOT_SUPPORTED by default)
      setFakeNvmlEnv({ RETIRED_PAGES_PENDING: 0 });
      source = NvmlSource.open({ libraryPath: fakeNvmlPath() });

      // Act
      const { gpus, errors } = source.sample(AT);

      // Assess
      expect(errors).toEqual([]);
      for (const gpu of gpus) for (const field of row.fields) expect(gpu).toHaveProperty(field);
      expect(row.notSupported).not.toBe('');
    },
  );

  it('converts units once: percent to 0..1, mW to W', () => {
    // Prepare
    setFakeNvmlEnv({});
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });

    // Act
    const [gpu] = source.sample(AT).gpus;

    // Assess
    expect(gpu!.gpu_util).toBeGreaterThanOrEqual(0);
    expect(gpu!.gpu_util).toBeLessThanOrEqual(1);
    expect(gpu!.power_w).toBeLessThan(2000); // W, not mW
    expect(gpu!.power_limit_w).toBeLessThan(2000);
  });

  it('skips the edge-only rows on a poll inside a window and reads them at its edges', () => {
    // Prepare
    setFakeNvmlEnv({ RETIRED_PAGES_PENDING: 0 });
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const gpus = source.identity().length;
    const edgeFields = NVML_METRIC_ROWS.filter((r) => r.cadence === 'edge').flatMap((r) => r.fields);
    const pollFields = NVML_METRIC_ROWS.filter((r) => r.cadence === 'poll').flatMap((r) => r.fields);
    const ecc0 = fakeNvmlCallCount('nvmlDeviceGetTotalEccErrors');
    const power0 = fakeNvmlCallCount('nvmlDeviceGetPowerUsage');

    // Act
    const inside = source.sampleRows(AT, false).rows.map(sampleFromRow);
    const ecc1 = fakeNvmlCallCount('nvmlDeviceGetTotalEccErrors');
    const edge = source.sampleRows(AT, true).rows.map(sampleFromRow);

    // Assess
    expect(edgeFields).toEqual(
      expect.arrayContaining([
        'energy_mj_total',
        'ecc_dbe_volatile',
        'power_limit_w',
        'remapped_rows_failure',
      ]),
    );
    expect(pollFields).toEqual(
      expect.arrayContaining(['gpu_util', 'power_w', 'sm_clock_mhz', 'clocks_event_reasons']),
    );
    expect([ecc1 - ecc0, fakeNvmlCallCount('nvmlDeviceGetTotalEccErrors') - ecc1]).toEqual([0, 4 * gpus]);
    expect(fakeNvmlCallCount('nvmlDeviceGetPowerUsage') - power0).toBe(2 * gpus);
    for (const gpu of inside) {
      for (const field of edgeFields) expect(gpu).not.toHaveProperty(field);
      for (const field of pollFields) expect(gpu).toHaveProperty(field);
    }
    for (const gpu of edge)
      for (const field of [...edgeFields, ...pollFields]) expect(gpu).toHaveProperty(field);
  });

  it('makes each symbol call once per GPU and sample (two for the two clock rows, four for the ECC rows)', () => {
    // Prepare
    setFakeNvmlEnv({});
    source = NvmlSource.open({ libraryPath: fakeNvmlPath() });

    // Act
    source.sample(AT);

    // Assess
    expect(fakeNvmlCallCount('nvmlDeviceGetClockInfo')).toBe(8 * 2);
    expect(fakeNvmlCallCount('nvmlDeviceGetTotalEccErrors')).toBe(8 * 4);
    expect(fakeNvmlCallCount('nvmlDeviceGetPowerUsage')).toBe(8);
  });
});
