import koffi from 'koffi';
import { describe, expect, it } from 'vitest';
import {
  assertNvmlAbi,
  NVML_GPM_METRIC_MAX,
  NVML_STRUCT_LAYOUTS,
  NvmlAbiError,
  type NvmlStructLayout,
  nvmlDeviceAttributes,
  nvmlEventData,
  nvmlFieldValue,
  nvmlGpmMetric,
  nvmlGpmMetricsGet,
  nvmlGpmSupport,
  nvmlMemory,
  nvmlMemoryV2,
  nvmlPciInfo,
  nvmlProcessInfo,
  nvmlUtilization,
} from '../../../agent/sources/nvml';

// The x86-64 layouts of docs/nvml.md §4, written here independently of the
// table in structs.ts so a typo in either one fails.
const REFERENCE = [
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'busIdLegacy', offset: 0 },
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'domain', offset: 16 },
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'bus', offset: 20 },
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'device', offset: 24 },
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'pciDeviceId', offset: 28 },
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'pciSubSystemId', offset: 32 },
  { struct: 'nvmlPciInfo_t', type: nvmlPciInfo, size: 68, field: 'busId', offset: 36 },
  { struct: 'nvmlMemory_t', type: nvmlMemory, size: 24, field: 'total', offset: 0 },
  { struct: 'nvmlMemory_t', type: nvmlMemory, size: 24, field: 'free', offset: 8 },
  { struct: 'nvmlMemory_t', type: nvmlMemory, size: 24, field: 'used', offset: 16 },
  { struct: 'nvmlMemory_v2_t', type: nvmlMemoryV2, size: 40, field: 'version', offset: 0 },
  { struct: 'nvmlMemory_v2_t', type: nvmlMemoryV2, size: 40, field: 'total', offset: 8 },
  { struct: 'nvmlMemory_v2_t', type: nvmlMemoryV2, size: 40, field: 'reserved', offset: 16 },
  { struct: 'nvmlMemory_v2_t', type: nvmlMemoryV2, size: 40, field: 'free', offset: 24 },
  { struct: 'nvmlMemory_v2_t', type: nvmlMemoryV2, size: 40, field: 'used', offset: 32 },
  { struct: 'nvmlUtilization_t', type: nvmlUtilization, size: 8, field: 'gpu', offset: 0 },
  { struct: 'nvmlUtilization_t', type: nvmlUtilization, size: 8, field: 'memory', offset: 4 },
  { struct: 'nvmlProcessInfo_t', type: nvmlProcessInfo, size: 24, field: 'pid', offset: 0 },
  { struct: 'nvmlProcessInfo_t', type: nvmlProcessInfo, size: 24, field: 'usedGpuMemory', offset: 8 },
  { struct: 'nvmlProcessInfo_t', type: nvmlProcessInfo, size: 24, field: 'gpuInstanceId', offset: 16 },
  { struct: 'nvmlProcessInfo_t', type: nvmlProcessInfo, size: 24, field: 'computeInstanceId', offset: 20 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'fieldId', offset: 0 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'scopeId', offset: 4 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'timestamp', offset: 8 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'latencyUsec', offset: 16 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'valueType', offset: 24 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'nvmlReturn', offset: 28 },
  { struct: 'nvmlFieldValue_t', type: nvmlFieldValue, size: 40, field: 'value', offset: 32 },
  { struct: 'nvmlEventData_t', type: nvmlEventData, size: 32, field: 'device', offset: 0 },
  { struct: 'nvmlEventData_t', type: nvmlEventData, size: 32, field: 'eventType', offset: 8 },
  { struct: 'nvmlEventData_t', type: nvmlEventData, size: 32, field: 'eventData', offset: 16 },
  { struct: 'nvmlEventData_t', type: nvmlEventData, size: 32, field: 'gpuInstanceId', offset: 24 },
  { struct: 'nvmlEventData_t', type: nvmlEventData, size: 32, field: 'computeInstanceId', offset: 28 },
  { struct: 'nvmlGpmSupport_t', type: nvmlGpmSupport, size: 8, field: 'version', offset: 0 },
  { struct: 'nvmlGpmSupport_t', type: nvmlGpmSupport, size: 8, field: 'isSupportedDevice', offset: 4 },
  { struct: 'nvmlGpmMetric_t', type: nvmlGpmMetric, size: 40, field: 'metricId', offset: 0 },
  { struct: 'nvmlGpmMetric_t', type: nvmlGpmMetric, size: 40, field: 'nvmlReturn', offset: 4 },
  { struct: 'nvmlGpmMetric_t', type: nvmlGpmMetric, size: 40, field: 'value', offset: 8 },
  { struct: 'nvmlGpmMetric_t', type: nvmlGpmMetric, size: 40, field: 'metricInfo', offset: 16 },
  { struct: 'nvmlGpmMetricsGet_t', type: nvmlGpmMetricsGet, size: 13_344, field: 'version', offset: 0 },
  { struct: 'nvmlGpmMetricsGet_t', type: nvmlGpmMetricsGet, size: 13_344, field: 'numMetrics', offset: 4 },
  { struct: 'nvmlGpmMetricsGet_t', type: nvmlGpmMetricsGet, size: 13_344, field: 'sample1', offset: 8 },
  { struct: 'nvmlGpmMetricsGet_t', type: nvmlGpmMetricsGet, size: 13_344, field: 'sample2', offset: 16 },
  { struct: 'nvmlGpmMetricsGet_t', type: nvmlGpmMetricsGet, size: 13_344, field: 'metrics', offset: 24 },
  // MIG (mig-structs.ts): nvmlDeviceAttributes_t of nvml.h API 13
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'multiprocessorCount',
    offset: 0,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'sharedCopyEngineCount',
    offset: 4,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'sharedDecoderCount',
    offset: 8,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'sharedEncoderCount',
    offset: 12,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'sharedJpegCount',
    offset: 16,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'sharedOfaCount',
    offset: 20,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'gpuInstanceSliceCount',
    offset: 24,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'computeInstanceSliceCount',
    offset: 28,
  },
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    size: 40,
    field: 'memorySizeMB',
    offset: 32,
  },
];

describe('NVML struct layouts', () => {
  it.each(REFERENCE)('$struct is $size bytes with .$field at $offset', ({ type, size, field, offset }) => {
    // Prepare / Act
    const actualSize = koffi.sizeof(type);
    const actualOffset = koffi.offsetof(type, field);
    // Assess
    expect(actualSize).toBe(size);
    expect(actualOffset).toBe(offset);
  });

  it('declares the GPM metrics array with the 333 entries of the API 13 header', () => {
    // Prepare / Act
    const size = koffi.sizeof(nvmlGpmMetricsGet);
    // Assess
    expect(NVML_GPM_METRIC_MAX).toBe(333);
    expect(size).toBe(24 + 40 * 333);
  });

  it('checks the same sizes and offsets at startup as the reference lists', () => {
    // Prepare
    const fromTable = NVML_STRUCT_LAYOUTS.flatMap((l) =>
      Object.entries(l.offsetsBytes).map(
        ([field, offset]) => `${l.struct} ${l.sizeBytes} ${field}@${offset}`,
      ),
    );
    // Act
    const fromReference = REFERENCE.map((r) => `${r.struct} ${r.size} ${r.field}@${r.offset}`);
    // Assess
    expect(fromTable.sort()).toEqual(fromReference.sort());
    expect(() => assertNvmlAbi()).not.toThrow();
  });

  it.each<{
    case: string;
    layout: { sizeBytes: number; offsetsBytes: Record<string, number> };
    field: string;
    expected: number;
  }>([
    { case: 'a wrong size', layout: { sizeBytes: 44, offsetsBytes: {} }, field: '(size)', expected: 44 },
    {
      case: 'a wrong offset',
      layout: { sizeBytes: 40, offsetsBytes: { used: 24 } },
      field: 'used',
      expected: 24,
    },
  ])('throws NvmlAbiError naming the struct for $case', ({ layout, field, expected }) => {
    // Prepare
    const wrong: NvmlStructLayout[] = [{ struct: 'nvmlMemory_v2_t', type: nvmlMemoryV2, ...layout }];
    // Act
    let thrown: unknown;
    try {
      assertNvmlAbi(wrong);
    } catch (error) {
      thrown = error;
    }
    // Assess
    expect(thrown).toBeInstanceOf(NvmlAbiError);
    expect(thrown).toMatchObject({
      name: 'NvmlAbiError',
      struct: 'nvmlMemory_v2_t',
      field,
      expectedBytes: expected,
    });
    expect((thrown as Error).message).toContain('nvmlMemory_v2_t');
  });
});
