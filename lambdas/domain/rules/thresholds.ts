/**
 * Point-rule thresholds (DESIGN §6): data, overridable per deployment.
 */

/** Thresholds the point rules read. */
export interface Thresholds {
  /**
   * `max_gpu_temp_c` at or above which `thermal_critical` fires, °C.
   * @default 90 (DESIGN §6)
   */
  readonly thermalCriticalTempC: number;
  /**
   * Two XID events of the same GPU and code from *different* sources (NVML and kernel log) this close in
   * time are one occurrence, s (DESIGN §6: "deduplicated by GPU, code and time").
   * @default 1
   */
  readonly xidDedupeWindowS: number;
}

/** Default `thermal_critical` threshold, °C. Source: DESIGN §6. */
export const THERMAL_CRITICAL_TEMP_C = 90;

/** Default cross-source XID dedupe window, s. Source: this module; NVML and kmsg report the same Xid within milliseconds. */
export const XID_DEDUPE_WINDOW_S = 1;

/** The default thresholds. */
export const DEFAULT_THRESHOLDS: Thresholds = Object.freeze({
  thermalCriticalTempC: THERMAL_CRITICAL_TEMP_C,
  xidDedupeWindowS: XID_DEDUPE_WINDOW_S,
});
