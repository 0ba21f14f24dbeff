import { MAX_COMPUTE_PROCESSES } from '../../lambdas/contract/constants';
import { isFiniteNumber } from './absent';
import type { GpuSample } from './gpu-sample';

/**
 * Tolerance above 1 for a ratio: NVML percentages are integers, but a source that divides or
 * averages may give 100.0001 % by rounding. Such values are clamped to 1; anything larger is a
 * broken reading and is left out (absent), never clamped into a fake 100 %.
 */
export const RATIO_ROUNDING_TOLERANCE = 1e-3;

/** Most processes kept from one sample (the source reads at most 64; `GpuWindowSchema.processes` holds 64). */
export const MAX_PROCESSES_PER_SAMPLE = 64;

/**
 * How a sample field is checked before it enters a column. A value that fails its check is
 * stored as absent (`NaN`), exactly like a field the sample did not have:
 * - `ratio`: finite, 0..1 + {@link RATIO_ROUNDING_TOLERANCE};
 * - `celsius`: −40..150 °C (contract `celsius`);
 * - `watts`: 0..5000 W (contract `watts`; NVML's 0xFFFFFFFF mW "not available" lands above);
 * - `mhz`: 0..10,000 MHz (contract `mhz`);
 * - `count`: a safe integer ≥ 0 (counters, byte totals, bitmasks);
 * - `processCount`: a `count` ≤ `MAX_COMPUTE_PROCESSES` (4096);
 * - `rate`: finite ≥ 0 (bytes/s);
 * - `flag`: a boolean, stored as 1 (true) or 0 (false).
 */
export type FieldCheck = 'ratio' | 'celsius' | 'watts' | 'mhz' | 'count' | 'processCount' | 'rate' | 'flag';

/** A scalar `GpuSample` field: everything but the GPU index, the time and the process list. */
export type ColumnField = Exclude<keyof GpuSample, 'gpu_index' | 'at_ms' | 'processes'>;

/**
 * Every scalar `GpuSample` field and the check its values pass before they are stored (the
 * compiler refuses this table when a `GpuSample` field is missing from it). The order is the
 * column order of {@link SampleColumns}.
 */
export const COLUMN_CHECKS = {
  gpu_util: 'ratio',
  mem_copy_util: 'ratio',
  sm_active: 'ratio',
  sm_occupancy: 'ratio',
  tensor_active: 'ratio',
  dram_active: 'ratio',
  fp16_active: 'ratio',
  fp32_active: 'ratio',
  fp64_active: 'ratio',
  pcie_tx_bytes_total: 'count',
  pcie_rx_bytes_total: 'count',
  pcie_tx_bytes_per_s: 'rate',
  pcie_rx_bytes_per_s: 'rate',
  nvlink_tx_bytes_total: 'count',
  nvlink_rx_bytes_total: 'count',
  fb_used_bytes: 'count',
  fb_total_bytes: 'count',
  gpu_temp_c: 'celsius',
  mem_temp_c: 'celsius',
  power_w: 'watts',
  power_limit_w: 'watts',
  energy_mj_total: 'count',
  sm_clock_mhz: 'mhz',
  mem_clock_mhz: 'mhz',
  clocks_event_reasons: 'count',
  power_violation_us_total: 'count',
  thermal_violation_us_total: 'count',
  ecc_sbe_volatile: 'count',
  ecc_dbe_volatile: 'count',
  ecc_sbe_aggregate: 'count',
  ecc_dbe_aggregate: 'count',
  retired_pages_pending: 'flag',
  remapped_rows_pending: 'flag',
  remapped_rows_failure: 'flag',
  pcie_replay_count: 'count',
  nvlink_crc_errors: 'count',
  compute_processes: 'processCount',
} as const satisfies Record<ColumnField, FieldCheck>;

/** The scalar fields in column order (37 fields). */
export const COLUMN_FIELDS = Object.keys(COLUMN_CHECKS) as readonly ColumnField[];

/**
 * One GPU's samples of a window in columns: one `Float64Array` per field, `NaN` where a sample
 * lacked the field or its value failed the field's {@link FieldCheck}; booleans as 1/0. The
 * processes of all samples are flattened, oldest sample first, into two parallel arrays. This is
 * the one input of every window statistic, whether the samples came as objects
 * (`aggregateWindow`) or from a horizon's ring of typed arrays (`HorizonTracker`).
 */
export interface SampleColumns {
  /** Number of samples, ≥ 0. */
  readonly length: number;
  /** Sample times, ms since the Unix epoch, ascending. */
  readonly atMs: Float64Array;
  /** Field values, one array of `length` per field. */
  readonly fields: { readonly [F in ColumnField]: Float64Array };
  /** Pids of the processes of all samples, flattened (integers 0..2^32 − 1). */
  readonly processPids: Float64Array;
  /** GPU memory of each flattened process, bytes; `NaN` when NVML did not know it. */
  readonly processFbUsedBytes: Float64Array;
  /** Whether any sample had the `processes` field (an empty list counts). */
  readonly processesSeen: boolean;
}

/** Numeric code of each {@link FieldCheck}, so a per-value check is a switch on a small integer. */
export const FIELD_CHECK_CODE: { readonly [C in FieldCheck]: number } = {
  ratio: 0,
  celsius: 1,
  watts: 2,
  mhz: 3,
  count: 4,
  processCount: 5,
  rate: 6,
  flag: 7,
};

/** The {@link FIELD_CHECK_CODE} of every column, in column order. */
export const COLUMN_CHECK_CODES: Uint8Array = Uint8Array.from(
  COLUMN_FIELDS,
  (field) => FIELD_CHECK_CODE[COLUMN_CHECKS[field]],
);

/**
 * The {@link FieldCheck} ranges as tables by {@link FIELD_CHECK_CODE}, the one home of the numbers:
 * lowest and highest value kept (ratio 0..1 + {@link RATIO_ROUNDING_TOLERANCE}, °C −40..150, W
 * 0..5000, MHz 0..10,000, counts 0..2^53 − 1, process counts 0..`MAX_COMPUTE_PROCESSES`, rates ≥ 0,
 * flags 0..1) and whether the value must be whole (counts, process counts, flags). Tables rather than
 * a function, so the ring's push checks a value without a call (a number passed to a call Maglev does
 * not inline is boxed: a heap allocation per value).
 */
export const CHECK_MIN: Float64Array = Float64Array.from([0, -40, 0, 0, 0, 0, 0, 0]);
/** See {@link CHECK_MIN}. */
export const CHECK_MAX: Float64Array = Float64Array.from([
  1 + RATIO_ROUNDING_TOLERANCE,
  150,
  5000,
  10_000,
  Number.MAX_SAFE_INTEGER,
  MAX_COMPUTE_PROCESSES,
  Number.POSITIVE_INFINITY,
  1,
]);
/** See {@link CHECK_MIN}: 1 where the value must be a whole number. */
export const CHECK_WHOLE: Uint8Array = Uint8Array.from([0, 0, 0, 0, 1, 1, 0, 1]);

/**
 * Checks one field value and encodes it for a column.
 *
 * @param check - the field's check
 * @param value - the sample's value, or `undefined` when absent
 * @returns the value as a number (flags 1/0), or `NaN` when absent or failing the check
 */
export function encodeField(check: FieldCheck, value: number | boolean | undefined): number {
  if (value === undefined) return Number.NaN;
  if (check === 'flag') return typeof value === 'boolean' ? (value ? 1 : 0) : Number.NaN;
  if (typeof value !== 'number') return Number.NaN;
  return checkColumnValue(FIELD_CHECK_CODE[check], value);
}

/**
 * Checks a number for a column (the {@link FieldCheck} ranges in one place): ratio finite
 * 0..1 + {@link RATIO_ROUNDING_TOLERANCE}, °C −40..150, W 0..5000, MHz 0..10,000, counts safe
 * integers ≥ 0 (process counts ≤ `MAX_COMPUTE_PROCESSES`), rates finite ≥ 0, flags exactly 1 or 0.
 *
 * @param code - the column's {@link FIELD_CHECK_CODE} (see {@link COLUMN_CHECK_CODES})
 * @param value - a raw reading; `NaN` = absent
 * @returns the value, or `NaN` when absent or failing the check
 */
export function checkColumnValue(code: number, value: number): number {
  return isColumnValue(code, value) ? value : Number.NaN;
}

/**
 * Whether {@link checkColumnValue} keeps `value` (it returns the value itself or `NaN`, nothing
 * else): finite, within its check's range ({@link CHECK_MIN}..{@link CHECK_MAX}), and a whole
 * number where the check wants one ({@link CHECK_WHOLE}: counts, process counts, flags 0/1).
 *
 * @param code - the column's {@link FIELD_CHECK_CODE}
 * @param value - a raw reading; `NaN` = absent (false)
 */
export function isColumnValue(code: number, value: number): boolean {
  return (
    isFiniteNumber(value) &&
    value >= (CHECK_MIN[code] as number) &&
    value <= (CHECK_MAX[code] as number) &&
    (CHECK_WHOLE[code] === 0 || Math.floor(value) === value)
  );
}

/**
 * Checks one process entry: a pid must be an integer 0..2^32 − 1 (else the entry is dropped,
 * `undefined`); its memory a safe integer ≥ 0 (else `NaN`, unknown).
 *
 * @returns `[pid, fbUsedBytes]`, or `undefined` for an entry without a valid pid
 */
export function encodeProcess(process: {
  readonly pid: number;
  readonly fb_used_bytes?: number;
}): readonly [number, number] | undefined {
  if (!Number.isSafeInteger(process.pid) || process.pid < 0 || process.pid > 0xffff_ffff) return undefined;
  return [process.pid, encodeField('count', process.fb_used_bytes)];
}

/**
 * Turns sample objects into {@link SampleColumns} (copies; the samples are not kept).
 *
 * @param samples - one GPU's samples, oldest first
 * @returns columns of `samples.length` rows; processes beyond {@link MAX_PROCESSES_PER_SAMPLE} per sample are dropped
 */
export function columnsFromSamples(samples: readonly GpuSample[]): SampleColumns {
  const length = samples.length;
  const atMs = new Float64Array(length);
  const fields = {} as Record<ColumnField, Float64Array>;
  for (const field of COLUMN_FIELDS) fields[field] = new Float64Array(length);
  const pids: number[] = [];
  const memories: number[] = [];
  let processesSeen = false;
  samples.forEach((sample, row) => {
    atMs[row] = sample.at_ms;
    for (const field of COLUMN_FIELDS) fields[field][row] = encodeField(COLUMN_CHECKS[field], sample[field]);
    if (sample.processes === undefined) return;
    processesSeen = true;
    for (const process of sample.processes.slice(0, MAX_PROCESSES_PER_SAMPLE)) {
      const entry = encodeProcess(process);
      if (entry === undefined) continue;
      pids.push(entry[0]);
      memories.push(entry[1]);
    }
  });
  return {
    length,
    atMs,
    fields,
    processPids: Float64Array.from(pids),
    processFbUsedBytes: Float64Array.from(memories),
    processesSeen,
  };
}
