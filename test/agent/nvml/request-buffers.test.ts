import fc from 'fast-check';
import koffi from 'koffi';
import { describe, expect, it } from 'vitest';
import { NVML_FIELD, NvmlFieldValueRequest } from '../../../agent/sources/nvml/field-values';
import { GPM_REQUESTS, GpmMetricsRequest } from '../../../agent/sources/nvml/gpm-metrics';
import { nvmlFieldValue, nvmlGpmMetric, nvmlGpmMetricsGet } from '../../../agent/sources/nvml/structs';

const FIELD_STRIDE = koffi.sizeof(nvmlFieldValue);
const field = (member: string): number => koffi.offsetof(nvmlFieldValue, member);
const METRIC_STRIDE = koffi.sizeof(nvmlGpmMetric);
const METRICS = koffi.offsetof(nvmlGpmMetricsGet, 'metrics');

describe('the NVML request buffers, read and written through typed-array views', () => {
  it('decode every nvmlValue_t type as the little-endian Buffer reads of nvml.h do', () => {
    // Prepare: NVML's answer written byte by byte, as the driver leaves it.
    const request = new NvmlFieldValueRequest();
    const b = request.buffer;
    const i = 2;
    const at = i * FIELD_STRIDE + field('value');
    const reference = (type: number): number | undefined => {
      switch (type) {
        case 0:
          return b.readDoubleLE(at);
        case 1:
          return b.readUInt32LE(at);
        case 2:
        case 3:
          return b.readUInt32LE(at) + b.readUInt32LE(at + 4) * 2 ** 32;
        case 4:
          return b.readUInt32LE(at) + b.readInt32LE(at + 4) * 2 ** 32;
        case 5:
          return b.readInt32LE(at);
        case 6:
          return b.readUInt16LE(at);
        default:
          return undefined;
      }
    };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 8 }),
        fc.uint8Array({ minLength: 8, maxLength: 8 }),
        (type, bytes) => {
          b.writeUInt32LE(type, i * FIELD_STRIDE + field('valueType'));
          b.set(bytes, at);
          b.writeUInt32LE(15, i * FIELD_STRIDE + field('nvmlReturn'));
          // Act / Assess
          expect(Object.is(request.valueAt(i), reference(type))).toBe(true);
          expect(request.returnAt(i)).toBe(15);
        },
      ),
    );
  });

  it('write the field ids, their scope and the unanswered mark where nvml.h puts them', () => {
    // Prepare
    const request = new NvmlFieldValueRequest();
    const b = request.buffer;
    // Act
    request.prepare(true);
    // Assess
    for (let i = 0; i < request.count; i++) {
      const id = request.fieldIdAt(i);
      expect(b.readUInt32LE(i * FIELD_STRIDE + field('fieldId'))).toBe(id);
      const allLinks =
        id === NVML_FIELD.NVLINK_THROUGHPUT_DATA_TX || id === NVML_FIELD.NVLINK_THROUGHPUT_DATA_RX;
      expect(b.readUInt32LE(i * FIELD_STRIDE + field('scopeId'))).toBe(allLinks ? 0xffff_ffff : 0);
      expect(request.returnAt(i)).toBe(999);
    }
  });

  it('write the GPM sample handles, the metric ids and cleared answers, and read the answers back', () => {
    // Prepare: a request left with the answers of an earlier call.
    const request = new GpmMetricsRequest();
    const b = request.buffer;
    b.fill(0xab, METRICS);
    const older = 0x7f12_3456_789a_bcden;
    const newer = 0xffff_ffff_ffff_fff0n;
    // Act
    request.prepare(older, newer, 7);
    // Assess
    expect(b.readUInt32LE(koffi.offsetof(nvmlGpmMetricsGet, 'numMetrics'))).toBe(7);
    expect(b.readBigUInt64LE(koffi.offsetof(nvmlGpmMetricsGet, 'sample1'))).toBe(older);
    expect(b.readBigUInt64LE(koffi.offsetof(nvmlGpmMetricsGet, 'sample2'))).toBe(newer);
    for (let i = 0; i < 7; i++) {
      const at = METRICS + i * METRIC_STRIDE;
      expect(b.readUInt32LE(at)).toBe(GPM_REQUESTS[i]?.metricId);
      expect(b.subarray(at + 4, at + METRIC_STRIDE).every((byte) => byte === 0)).toBe(true);
    }
    // The eighth entry was not asked for: left as it was.
    expect(b.readUInt32LE(METRICS + 7 * METRIC_STRIDE)).toBe(0xabab_abab);
    b.writeUInt32LE(3, METRICS + 4 * METRIC_STRIDE + koffi.offsetof(nvmlGpmMetric, 'nvmlReturn'));
    b.writeDoubleLE(42.5, METRICS + 4 * METRIC_STRIDE + koffi.offsetof(nvmlGpmMetric, 'value'));
    expect(request.returnAt(4)).toBe(3);
    expect(request.valueAt(4)).toBe(42.5);
  });
});
