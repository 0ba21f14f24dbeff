/**
 * The physical GPU's own fields on a MIG GPU. In MIG mode dcgm-exporter writes one series per GPU
 * instance and often none for the GPU itself (NVIDIA/dcgm-exporter issue 561: "only the metric labels
 * of the MIG instances are exposed"), so fields of the whole board — temperatures, power, clocks,
 * ECC and PCIe/NVLink error counters, row remapping, throttle reasons and violation counters — come
 * labelled `GPU_I_ID`, the same value repeated on every instance (real scrapes: an A30 with
 * `DCGM_FI_DEV_GPU_TEMP` only on its `1g.6gb` instances, `test/fixtures/real/dcgm/`). Those are
 * read back as the GPU's. Fields DCGM measures per instance stay per instance: `DCGM_FI_PROF_*`
 * (profiling), `DCGM_FI_DEV_FB_*` (framebuffer of the MIG device), and `DCGM_FI_DEV_GPU_UTIL` /
 * `DCGM_FI_DEV_MEM_COPY_UTIL`, which DCGM does not measure per instance. Pure.
 */

/** One series value of a scrape, with its 1-based line number. */
export interface DcgmSeriesValue {
  /** The sample value. */
  readonly value: number;
  /** 1-based line of the scrape that gave it. */
  readonly line: number;
}

/** Fields DCGM measures per MIG instance (or not at all there): never read as the whole GPU's. */
const PER_INSTANCE_FIELD_RE = /^DCGM_FI_(PROF_|DEV_FB_|DEV_GPU_UTIL$|DEV_MEM_COPY_UTIL$)/;

/**
 * True for a field of the physical board, which dcgm-exporter repeats on each MIG instance's series.
 *
 * @param field - a DCGM field name, upper case (`DCGM_FI_DEV_GPU_TEMP`)
 */
export function isGpuScopedField(field: string): boolean {
  return !PER_INSTANCE_FIELD_RE.test(field);
}

/**
 * Gives a MIG GPU the board fields its instances carry, where the GPU has no series of its own for
 * them: when every instance that has the field agrees, that value becomes the GPU's (line of the
 * first); when they disagree the field is left absent and reported, never averaged or guessed.
 *
 * @param gpuValues - the GPU's own series by field name; written in place
 * @param instances - each instance's series by field name
 * @param gpuIndex - the GPU's index (label `gpu`), for the report
 * @param malformed - where a disagreement is reported (1-based line, reason)
 */
export function liftMigDeviceFields(
  gpuValues: Map<string, DcgmSeriesValue>,
  instances: Iterable<ReadonlyMap<string, DcgmSeriesValue>>,
  gpuIndex: number,
  malformed: { line: number; reason: string }[],
): void {
  const seen = new Map<string, DcgmSeriesValue[]>();
  for (const values of instances)
    for (const [field, reading] of values) {
      if (gpuValues.has(field) || !isGpuScopedField(field)) continue;
      const list = seen.get(field);
      if (list) list.push(reading);
      else seen.set(field, [reading]);
    }
  for (const [field, readings] of seen) {
    const [first] = readings;
    if (first === undefined) continue;
    if (readings.every((r) => r.value === first.value)) gpuValues.set(field, first);
    else
      malformed.push({
        line: first.line,
        reason: `${field} differs across the MIG instances of GPU ${gpuIndex} (${[...new Set(readings.map((r) => r.value))].join(', ')}); a board field has one value, so it is left absent`,
      });
  }
}
