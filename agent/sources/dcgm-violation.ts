/**
 * DCGM's throttle-time counters in a dcgm-exporter scrape: `DCGM_FI_DEV_POWER_VIOLATION` (240) and
 * `DCGM_FI_DEV_THERMAL_VIOLATION` (241), cumulative **ns** (NVML's violation time; DCGM's field-id
 * documentation and `dcgm_fields.h`; older dcgm-exporter counter files print "(in us)" in their HELP
 * text, corrected in NVIDIA/dcgm-exporter pull request 589), kept as whole µs sample fields.
 */

/** The throttle-time counters of one GPU in one scrape, whole µs since the driver loaded (DCGM's ns / 1000, floored). */
export interface DcgmViolationCounters {
  /** `DCGM_FI_DEV_POWER_VIOLATION`: time held down by the power cap, µs. */
  readonly power_violation_us_total?: number;
  /** `DCGM_FI_DEV_THERMAL_VIOLATION`: time held down for heat, µs. */
  readonly thermal_violation_us_total?: number;
}

/** DCGM violation counter → the sample field it fills (`DcgmGpuReading.violation_us`). */
export const VIOLATION_FIELDS: Readonly<Record<string, keyof DcgmViolationCounters>> = {
  DCGM_FI_DEV_POWER_VIOLATION: 'power_violation_us_total',
  DCGM_FI_DEV_THERMAL_VIOLATION: 'thermal_violation_us_total',
};

/** The DCGM field names of {@link VIOLATION_FIELDS}: known to the parser, combined here rather than mapped to a metric. */
export const DCGM_VIOLATION_FIELD_NAMES: readonly string[] = Object.keys(VIOLATION_FIELDS);

/** DCGM's violation counters are ns; the sample fields are µs. */
const NS_PER_US = 1000;

/**
 * The violation counters of one GPU's series in a scrape: each ns value ≥ 0 as whole µs.
 *
 * @param values - the GPU's series by DCGM field name, with their 1-based line numbers
 * @param malformed - where a negative or unreadable counter is reported (its field left out)
 * @returns the counters, or `undefined` when the scrape has none for the GPU
 */
export function violationCounters(
  values: ReadonlyMap<string, { readonly value: number; readonly line: number }>,
  malformed: { line: number; reason: string }[],
): DcgmViolationCounters | undefined {
  const counters: Partial<Record<keyof DcgmViolationCounters, number>> = {};
  let any = false;
  for (const [field, key] of Object.entries(VIOLATION_FIELDS)) {
    const reading = values.get(field);
    if (reading === undefined) continue;
    const us = Math.floor(reading.value / NS_PER_US);
    if (reading.value >= 0 && Number.isSafeInteger(us)) {
      counters[key] = us;
      any = true;
    } else
      malformed.push({
        line: reading.line,
        reason: `expected ${field} to be a count of ns >= 0, got ${reading.value}; field left absent`,
      });
  }
  return any ? counters : undefined;
}
