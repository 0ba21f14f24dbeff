import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COLUMN_COUNT,
  COLUMN_INDEX,
  GpuRow,
  rowFromSample,
  sampleFromRow,
} from '../../../agent/window/gpu-row';
import type { GpuSample } from '../../../agent/window/gpu-sample';
import {
  COLUMN_CHECKS,
  COLUMN_FIELDS,
  type ColumnField,
  checkColumnValue,
  columnsFromSamples,
  encodeField,
  FIELD_CHECK_CODE,
} from '../../../agent/window/sample-columns';
import { ColumnScratch, SampleRing } from '../../../agent/window/sample-ring';

const T0 = Date.parse('2026-11-23T18:00:00Z');
/** Any value a broken source might put in a field: out of range, not finite, wrong type. */
const anyValue = fc.oneof(
  fc.double(),
  fc.integer({ min: -50, max: 6000 }),
  fc.double({ min: 0, max: 1.01, noNaN: true }),
  fc.constant(2 ** 53),
  fc.boolean(),
  fc.constant(undefined),
);
const anySample = fc
  .tuple(
    fc.array(anyValue, { minLength: COLUMN_COUNT, maxLength: COLUMN_COUNT }),
    fc.option(
      fc.array(
        fc.record({
          pid: fc.oneof(fc.integer(), fc.double()).map((pid) => pid + 0), // -0 is pid 0 in a Uint32Array
          fb_used_bytes: fc.option(fc.double(), { nil: undefined }),
        }),
        { maxLength: 70 },
      ),
      { nil: undefined },
    ),
    fc.integer({ min: 0, max: 59 }),
  )
  .map(([values, processes, second]) => {
    const sample: Record<string, unknown> = { gpu_index: 3, at_ms: T0 + second * 1000 };
    COLUMN_FIELDS.forEach((field, i) => {
      if (values[i] !== undefined) sample[field] = values[i];
    });
    if (processes !== undefined) sample.processes = processes;
    return sample as unknown as GpuSample;
  });

describe('GpuRow', () => {
  it('numbers every scalar field in the order of COLUMN_CHECKS', () => {
    // Prepare / Act / Assess
    expect(Object.keys(COLUMN_INDEX)).toEqual(Object.keys(COLUMN_CHECKS));
    expect(COLUMN_FIELDS.map((f) => COLUMN_INDEX[f])).toEqual([...Array(COLUMN_COUNT).keys()]);
  });

  it('turns a source reading into a row and back into the same sample object', () => {
    // Prepare
    const sample: GpuSample = {
      gpu_index: 2,
      at_ms: T0,
      gpu_util: 0.97,
      sm_active: 0.41,
      fb_used_bytes: 42 * 2 ** 30,
      power_w: 612.5,
      retired_pages_pending: false,
      remapped_rows_failure: true,
      compute_processes: 1,
      processes: [{ pid: 4242, fb_used_bytes: 40 * 2 ** 30 }],
    };

    // Act
    const row = rowFromSample(sample, new GpuRow(0));
    const back = sampleFromRow(row);

    // Assess
    expect(back).toEqual(sample);
    expect(Object.keys(back).sort()).toEqual(Object.keys(sample).sort());
    expect(row.values[COLUMN_INDEX.remapped_rows_failure]).toBe(1);
    expect(Number.isNaN(row.values[COLUMN_INDEX.tensor_active])).toBe(true);
  });

  it('starts every reading empty: reset forgets the last one', () => {
    // Prepare
    const row = rowFromSample({ gpu_index: 1, at_ms: T0, power_w: 300, processes: [] }, new GpuRow(1));

    // Act
    row.reset(T0 + 1000);

    // Assess
    expect(sampleFromRow(row)).toEqual({ gpu_index: 1, at_ms: T0 + 1000 });
  });
});

describe('checkColumnValue', () => {
  it('checks a number exactly as encodeField checks the same field value', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(fc.constantFrom(...COLUMN_FIELDS), anyValue, (field: ColumnField, value) => {
        const check = COLUMN_CHECKS[field];
        const viaRow = rowFromSample({ gpu_index: 0, at_ms: T0, [field]: value } as GpuSample, new GpuRow(0))
          .values[COLUMN_INDEX[field]] as number;
        expect(checkColumnValue(FIELD_CHECK_CODE[check], viaRow)).toBe(
          encodeField(check, value as number | boolean | undefined),
        );
      }),
    );
  });
});

describe('SampleRing.pushRow', () => {
  it('stores what columnsFromSamples makes of the same sample objects, however broken their values', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(fc.array(anySample, { minLength: 1, maxLength: 8 }), (samples) => {
        const sorted = [...samples].sort((a, b) => a.at_ms - b.at_ms);
        const ring = new SampleRing(16);
        const row = new GpuRow(0);
        for (const s of sorted) ring.pushRow(rowFromSample(s, row));
        expect(ring.columns(0, ring.length, new ColumnScratch())).toEqual(columnsFromSamples(sorted));
      }),
    );
  });

  it('reads every value back exactly while columns widen from nothing to 32 to 64 bits, across growth and wrap-around', () => {
    // Prepare: values 32 bits hold (small integers, halves, MiB counts), values they do not, absent ones
    const mixed = fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: 0, max: 2000 }),
      fc.integer({ min: 0, max: 80_000 }).map((mib) => mib * 2 ** 20),
      fc.double({ min: 0, max: 1, noNaN: true }),
      fc.integer({ min: 0, max: 2 ** 40 }),
    );
    const sampleAt = (second: number, values: readonly (number | undefined)[]): GpuSample => {
      const sample: Record<string, unknown> = { gpu_index: 0, at_ms: T0 + second * 1000 };
      COLUMN_FIELDS.forEach((field, i) => {
        if (values[i] !== undefined) sample[field] = values[i];
      });
      return sample as unknown as GpuSample;
    };
    fc.assert(
      fc.property(
        fc.array(fc.array(mixed, { minLength: COLUMN_COUNT, maxLength: COLUMN_COUNT }), {
          minLength: 1,
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 12 }),
        (rows, keep) => {
          const samples = rows.map((values, second) => sampleAt(second, values));
          const ring = new SampleRing(keep, 1);
          const row = new GpuRow(0);

          // Act
          for (const s of samples) ring.pushRow(rowFromSample(s, row));

          // Assess: the kept rows read as columnsFromSamples reads them (copies of the exact values)
          const kept = samples.slice(-keep);
          expect(ring.columns(0, ring.length, new ColumnScratch())).toEqual(columnsFromSamples(kept));
        },
      ),
    );
  });

  it('stores a column in 0, 4 or 8 bytes a row by the values it has held', () => {
    // Prepare
    const ring = new SampleRing(900, 900);
    const row = new GpuRow(0);

    // Act
    for (let s = 0; s < 10; s++)
      ring.pushRow(
        rowFromSample(
          { gpu_index: 0, at_ms: T0 + s * 1000, gpu_temp_c: 40 + s, gpu_util: s / 10, power_w: 700 },
          row,
        ),
      );
    const before = ring.columnWidths;
    ring.pushRow(rowFromSample({ gpu_index: 0, at_ms: T0 + 10_000, power_w: 612.3456 }, row));

    // Assess: integer °C and a 700 W reading fit 32 bits, 0.1 does not, sm_active never came
    expect(before[COLUMN_INDEX.gpu_temp_c]).toBe(4);
    expect(before[COLUMN_INDEX.power_w]).toBe(4);
    expect(before[COLUMN_INDEX.gpu_util]).toBe(8);
    expect(before[COLUMN_INDEX.sm_active]).toBe(0);
    expect(ring.columnWidths[COLUMN_INDEX.power_w]).toBe(8);
    expect(ring.bytes).toBe(900 * (8 + 8 + 1) + 900 * (4 + 8 + 8));
    const columns = ring.columns(0, ring.length, new ColumnScratch());
    expect([...columns.fields.power_w]).toEqual([...Array(10).fill(700), 612.3456]);
    expect([...columns.fields.gpu_temp_c]).toEqual([40, 41, 42, 43, 44, 45, 46, 47, 48, 49, Number.NaN]);
    expect(columns.fields.sm_active.every(Number.isNaN)).toBe(true);
  });
});
