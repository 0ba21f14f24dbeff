import type { GpuSample } from './gpu-sample';
import { COLUMN_CHECK_CODES, COLUMN_FIELDS, type ColumnField, FIELD_CHECK_CODE } from './sample-columns';

/** Number of scalar columns of a reading (the fields of {@link COLUMN_FIELDS}, 37). */
export const COLUMN_COUNT = COLUMN_FIELDS.length;

/** Column of each scalar `GpuSample` field in a {@link GpuRow} and in `SampleColumns` (the order of `COLUMN_CHECKS`). */
export const COLUMN_INDEX: { readonly [F in ColumnField]: number } = Object.freeze(
  Object.fromEntries(COLUMN_FIELDS.map((field, i) => [field, i])) as { [F in ColumnField]: number },
);

const FLAG = FIELD_CHECK_CODE.flag;

/** Process entries a row keeps, as `GpuSample.processes`: sorted by memory, at most 64. */
type ProcessReading = NonNullable<GpuSample['processes']>[number];

/**
 * One GPU's instant reading as a preallocated row: the hot-path form of {@link GpuSample}. A source
 * owns one row per GPU and overwrites it at every poll, so a reading allocates nothing but its
 * process list; the row is valid until the source's next poll. `values` holds the raw reading in
 * contract units, one `Float64Array` slot per column of {@link COLUMN_INDEX}: `NaN` = absent (not
 * supported, failed, not read), flags 1 (true) / 0 (false). Range checks happen when the row enters
 * a ring (`SampleRing.pushRow`), exactly as for sample objects.
 */
export class GpuRow {
  /** GPU index, 0..63. */
  gpuIndex: number;
  /** Reading time, ms since the Unix epoch (`NaN` before the first reading). */
  atMs = Number.NaN;
  /** Raw values by column (see {@link COLUMN_INDEX}); `NaN` = absent. */
  readonly values = new Float64Array(COLUMN_COUNT);
  /** The compute processes read at this poll (`GpuSample.processes`); `undefined` when not read. */
  processes: readonly ProcessReading[] | undefined;

  /** @param gpuIndex - the GPU's index, 0..63 */
  constructor(gpuIndex: number) {
    this.gpuIndex = gpuIndex;
    this.values.fill(Number.NaN);
  }

  /** Starts a new reading at `atMs`: every value absent, no process list. */
  reset(atMs: number): void {
    this.atMs = atMs;
    this.values.fill(Number.NaN);
    this.processes = undefined;
  }
}

/**
 * The row value of a sample field's value in column `column`: a flag column's boolean as 1/0, any
 * other column's number as it is, anything else (absent, wrong type) `NaN`.
 */
export function rowValue(column: number, value: unknown): number {
  if (COLUMN_CHECK_CODES[column] === FLAG) return typeof value === 'boolean' ? (value ? 1 : 0) : Number.NaN;
  return typeof value === 'number' ? value : Number.NaN;
}

/**
 * Writes a sample object into `into` (reset first), each field as {@link rowValue} encodes it; the
 * first 64 processes are kept.
 *
 * @returns `into`
 */
export function rowFromSample(sample: GpuSample, into: GpuRow): GpuRow {
  into.gpuIndex = sample.gpu_index;
  into.reset(sample.at_ms);
  const values = into.values;
  for (let c = 0; c < COLUMN_COUNT; c++) values[c] = rowValue(c, sample[COLUMN_FIELDS[c] as ColumnField]);
  into.processes = sample.processes;
  return into;
}

/**
 * The sample object of a row: the fields whose value is not `NaN`, in column order, flags as
 * booleans, and the process list when it was read. The inverse of {@link rowFromSample} for
 * what a source writes.
 */
export function sampleFromRow(row: GpuRow): GpuSample {
  const sample: Record<string, unknown> = { gpu_index: row.gpuIndex, at_ms: row.atMs };
  const values = row.values;
  for (let c = 0; c < COLUMN_COUNT; c++) {
    const value = values[c] as number;
    if (Number.isNaN(value)) continue;
    sample[COLUMN_FIELDS[c] as ColumnField] = COLUMN_CHECK_CODES[c] === FLAG ? value !== 0 : value;
  }
  if (row.processes !== undefined) sample.processes = row.processes;
  return sample as unknown as GpuSample;
}
