/**
 * One instant reading of one GPU, in contract units: converted once at the source boundary
 * (NVML % → 0..1, mW → W, bytes stay bytes, mJ kept as the driver's cumulative counter so the
 * window takes deltas). Every metric is optional: **absent** when the GPU or driver does not
 * support it (NVML NOT_SUPPORTED) or the call failed in this sample; never invented.
 * `aggregateWindow` turns a window of these into a contract `GpuWindow`.
 */
export interface GpuSample {
  /** NVML device index, 0..63 (`nvmlDeviceGetHandleByIndex_v2`). */
  readonly gpu_index: number;
  /** When the reading was taken, ms since the Unix epoch (the `now` given to `sample(now)`, from the injected clock). */
  readonly at_ms: number;
  /** Share of the last sample period in which any kernel ran, 0..1 (`nvmlDeviceGetUtilizationRates().gpu` / 100). Volatile. */
  readonly gpu_util?: number;
  /** Share of the period in which device memory was read or written, 0..1 (`nvmlDeviceGetUtilizationRates().memory` / 100). */
  readonly mem_copy_util?: number;
  /** Framebuffer memory used, bytes (`nvmlDeviceGetMemoryInfo_v2().used`, includes reserved; `nvmlDeviceGetMemoryInfo().used` on old drivers). */
  readonly fb_used_bytes?: number;
  /** Framebuffer memory total, bytes (`nvmlDeviceGetMemoryInfo_v2().total`). */
  readonly fb_total_bytes?: number;
  /** GPU core temperature, °C (`nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU = 0)`). */
  readonly gpu_temp_c?: number;
  /** Board power, W (`nvmlDeviceGetPowerUsage` mW / 1000; instantaneous on A100, 1 s average on H100). */
  readonly power_w?: number;
  /** Enforced power limit, W (`nvmlDeviceGetEnforcedPowerLimit` mW / 1000). */
  readonly power_limit_w?: number;
  /** Energy since the driver was loaded, mJ, cumulative (`nvmlDeviceGetTotalEnergyConsumption`; Volta+). Take deltas. */
  readonly energy_mj_total?: number;
  /** SM clock, MHz (`nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM = 1)`). */
  readonly sm_clock_mhz?: number;
  /** Memory clock, MHz (`nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM = 2)`). */
  readonly mem_clock_mhz?: number;
  /** Corrected ECC errors since driver load (`nvmlDeviceGetTotalEccErrors(CORRECTED = 0, VOLATILE = 0)`); absent when ECC is off. */
  readonly ecc_sbe_volatile?: number;
  /** Uncorrected ECC errors since driver load (`nvmlDeviceGetTotalEccErrors(UNCORRECTED = 1, VOLATILE = 0)`). */
  readonly ecc_dbe_volatile?: number;
  /** Corrected ECC errors over the board's life (`nvmlDeviceGetTotalEccErrors(CORRECTED = 0, AGGREGATE = 1)`). */
  readonly ecc_sbe_aggregate?: number;
  /** Uncorrected ECC errors over the board's life (`nvmlDeviceGetTotalEccErrors(UNCORRECTED = 1, AGGREGATE = 1)`). */
  readonly ecc_dbe_aggregate?: number;
  /** A row remap waits for the next GPU reset (`nvmlDeviceGetRemappedRows().isPending`; Ampere+). */
  readonly remapped_rows_pending?: boolean;
  /** A row remap failed at some point (`nvmlDeviceGetRemappedRows().failureOccurred`; Ampere+): RMA candidate. */
  readonly remapped_rows_failure?: boolean;
  /** Running compute processes (`nvmlDeviceGetComputeRunningProcesses_v3` count, probed with count 0). */
  readonly compute_processes?: number;
}
