import { describe, expect, it } from 'vitest';
import {
  eventRecord,
  gpuWindowRecord,
  TRUNCATION_MARK,
  timestreamRecordBytes,
  truncateUtf8,
} from '../../../lambdas/adapters/timestream-records';
import type { GpuMetrics } from '../../../lambdas/contract';
import {
  GPU_METRIC_NAMES,
  GPU_METRIC_TYPES,
  LEDGER_FIELD_NAMES,
} from '../../../lambdas/domain/measure-types';
import { eventRow, gpuRow, ledger } from '../rows';

const bytes = (s: string): number => new TextEncoder().encode(s).length;
/** True when `s` has no lone surrogate (it round-trips through UTF-8 unchanged). */
const wellFormed = (s: string): boolean => new TextDecoder().decode(new TextEncoder().encode(s)) === s;

describe('truncateUtf8', () => {
  it.each([
    { case: 'ASCII that fits', text: 'vision', max: 6, out: 'vision' },
    { case: 'ASCII cut', text: 'abcdefgh', max: 6, out: `abc${TRUNCATION_MARK}` },
    { case: '2-byte letters never split', text: 'éééé', max: 8, out: 'éééé' },
    { case: '2-byte letters cut on a boundary', text: 'ééééé', max: 8, out: `éé${TRUNCATION_MARK}` },
    {
      case: '3-byte CJK cut on a boundary',
      text: '日本語のチーム名',
      max: 10,
      out: `日本${TRUNCATION_MARK}`,
    },
    { case: 'emoji (surrogate pair) never split', text: '🎯🎯🎯', max: 9, out: `🎯${TRUNCATION_MARK}` },
  ])('keeps at most max UTF-8 bytes: $case', ({ text, max, out }) => {
    // Prepare / Act
    const cut = truncateUtf8(text, max);

    // Assess
    expect(cut).toBe(out);
    expect(bytes(cut)).toBeLessThanOrEqual(max);
    expect(wellFormed(cut)).toBe(true);
  });
});

describe('Timestream byte limits', () => {
  it('cuts a non-ASCII dimension value so name and value fit in 2 KB, at a character boundary', () => {
    // Prepare: 1,000 three-byte characters (3,000 bytes) pass a 2,048-character check
    const team = 'チ'.repeat(1000);

    // Act
    const record = gpuWindowRecord(gpuRow({ team }));

    // Assess
    const value = record.Dimensions?.find((d) => d.Name === 'team')?.Value ?? '';
    expect(bytes('team') + bytes(value)).toBeLessThanOrEqual(2048);
    expect(value.endsWith(TRUNCATION_MARK)).toBe(true);
    expect(value.startsWith('チチチ')).toBe(true);
    expect(wellFormed(value)).toBe(true);
  });

  it('cuts a long non-ASCII event detail so the whole record fits in 2 KB, keeping the other measures', () => {
    // Prepare
    const detail = `NVRM: Xid 79 ${'🔥'.repeat(1500)}`;

    // Act
    const record = eventRecord(eventRow({ detail, process_name: 'python3' }));

    // Assess
    expect(timestreamRecordBytes(record)).toBeLessThanOrEqual(2048);
    const cut = record.MeasureValues?.find((m) => m.Name === 'detail')?.Value ?? '';
    expect(cut.startsWith('NVRM: Xid 79 🔥')).toBe(true);
    expect(cut.endsWith(TRUNCATION_MARK)).toBe(true);
    expect(wellFormed(cut)).toBe(true);
    expect(record.MeasureValues?.find((m) => m.Name === 'process_name')?.Value).toBe('python3');
    expect(record.MeasureValues?.find((m) => m.Name === 'xid')?.Value).toBe('79');
  });

  it('leaves a record that fits unchanged', () => {
    // Prepare
    const row = eventRow({ detail: 'GPU has fallen off the bus.' });

    // Act
    const record = eventRecord(row);

    // Assess
    expect(record.MeasureValues?.find((m) => m.Name === 'detail')?.Value).toBe('GPU has fallen off the bus.');
  });

  it('fits a GPU window with every metric present in one record', () => {
    // Prepare
    const metrics = Object.fromEntries(
      GPU_METRIC_NAMES.map((n) => [n, GPU_METRIC_TYPES[n] === 'BOOLEAN' ? false : 1]),
    ) as unknown as GpuMetrics;

    // Act
    const record = gpuWindowRecord(gpuRow({ metrics, ledger: ledger({ diagnosis: 'compute_bound' }) }));

    // Assess
    expect(record.MeasureValues).toHaveLength(GPU_METRIC_NAMES.length + LEDGER_FIELD_NAMES.length);
    expect(timestreamRecordBytes(record)).toBeLessThanOrEqual(2048);
  });
});

describe('Timestream MIG slice dimensions', () => {
  it('makes a MIG slice its own series (gpu_instance_id, gpu_instance_profile dimensions), a whole GPU without them', () => {
    // Act
    const slice = gpuWindowRecord(gpuRow({ gpu_instance_id: 7, gpu_instance_profile: '1g.10gb' }));
    const whole = gpuWindowRecord(gpuRow());

    // Assess
    const dims = (r: typeof slice) => Object.fromEntries((r.Dimensions ?? []).map((d) => [d.Name, d.Value]));
    expect(dims(slice)).toMatchObject({
      gpu_index: '0',
      gpu_instance_id: '7',
      gpu_instance_profile: '1g.10gb',
    });
    expect(dims(whole).gpu_instance_id).toBeUndefined();
    expect(dims(whole).gpu_instance_profile).toBeUndefined();
  });
});
