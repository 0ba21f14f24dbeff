/**
 * DCGM's "blank" values: what DCGM stores in a field it could not read, and dcgm-exporter prints as
 * if it were a reading (older builds print them as they are; e.g. `DCGM_FI_DEV_MEMORY_TEMP … 9223372036854775794`
 * in the NVIDIA/gpu-monitoring-tools README, a board without a memory sensor). From `dcgm_structs.h`
 * (`DCGM_BLANK_VALUES`):
 *
 * - int64 fields: `DCGM_INT64_BLANK` = 0x7ffffffffffffff0, then `+1` not found, `+2` not supported,
 *   `+3` not permissioned: all within 16 of 2^63, one double (9223372036854775808) once parsed;
 * - double fields: `DCGM_FP64_BLANK` = 2^47 = 140737488355328.0, then `+1.0` … `+3.0` as above;
 * - strings (labels such as `modelName`, `GPU_I_PROFILE`): `<<<NULL>>>`, `<<<NOT_FOUND>>>`,
 *   `<<<NOT_SUPPORTED>>>`, `<<<NOT_PERM>>>`.
 *
 * A blank is never a reading: the field is absent, never 9.2e18 errors, bytes/s or µs. Pure.
 */

/**
 * `DCGM_INT64_BLANK` (0x7ffffffffffffff0 = 2^63 − 16) as it parses: the nearest double is 2^63, and
 * so is every int64 blank after it, whether printed as `9223372036854775794` or `9.223372036854776e+18`.
 */
export const DCGM_INT64_BLANK = 2 ** 63;

/** `DCGM_FP64_BLANK`: 2^47. */
export const DCGM_FP64_BLANK = 140_737_488_355_328;

/** What each offset from a blank base means (`dcgm_structs.h`). */
const FP64_MEANINGS = ['blank', 'not found', 'not supported', 'not permissioned'] as const;

/** `DCGM_STR_BLANK` and its siblings, as a label value. */
const STRING_BLANK_RE = /^<<<(NULL|NOT_FOUND|NOT_SUPPORTED|NOT_PERM)>>>$/;

/**
 * Why a sample value is one of DCGM's blank values, or `undefined` for a reading.
 *
 * @param value - a parsed sample value (finite)
 * @returns e.g. `DCGM int64 blank (no value: blank, not found, not supported or not permissioned)`,
 *   `DCGM fp64 blank (not supported)`; `undefined` when the value is a reading
 */
export function dcgmBlankReason(value: number): string | undefined {
  // Every int64 blank parses to the same double; a real int64 reading is never that large.
  if (value >= DCGM_INT64_BLANK)
    return 'DCGM int64 blank (no value: blank, not found, not supported or not permissioned)';
  const offset = value - DCGM_FP64_BLANK;
  if (Number.isInteger(offset) && offset >= 0 && offset < FP64_MEANINGS.length)
    return `DCGM fp64 blank (${FP64_MEANINGS[offset]})`;
  return undefined;
}

/**
 * True when a label value is one of DCGM's string blanks (`<<<NULL>>>` …): the exporter had no
 * value for it, e.g. `GPU_I_PROFILE="<<<NULL>>>"` on a MIG instance DCGM could not name.
 *
 * @param value - a label value
 */
export function isDcgmBlankLabel(value: string): boolean {
  return STRING_BLANK_RE.test(value);
}
