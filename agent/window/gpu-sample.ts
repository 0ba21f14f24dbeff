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
  /** The compute processes themselves (pid, GPU memory bytes when NVML knows it), at most 64, for attribution. */
  readonly processes?: ReadonlyArray<{ readonly pid: number; readonly fb_used_bytes?: number }>;
  /** HBM temperature, °C (field value 82 `NVML_FI_DEV_MEMORY_TEMP`). */
  readonly mem_temp_c?: number;
  /** Clocks-event (throttle) reasons bitmask at this instant (`nvmlDeviceGetCurrentClocksEventReasons`, fallback `…ThrottleReasons`). */
  readonly clocks_event_reasons?: number;
  /**
   * Time the clocks were held down by the power cap, µs, cumulative since driver load
   * (`nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER = 0).violationTime` ns / 1000, floored;
   * `DCGM_FI_DEV_POWER_VIOLATION` ns / 1000). Take deltas: Δ / Δ wall time is `power_throttle_ratio`.
   */
  readonly power_violation_us_total?: number;
  /**
   * Time the clocks were held down for heat, µs, cumulative (`DCGM_FI_DEV_THERMAL_VIOLATION` ns / 1000). The NVML
   * source leaves it absent: its `thermal_throttle_ratio` comes from the clocks-event reasons.
   */
  readonly thermal_violation_us_total?: number;
  /** PCIe bytes transmitted, cumulative, may wrap (field 197 `NVML_FI_DEV_PCIE_COUNT_TX_BYTES`). Take deltas. */
  readonly pcie_tx_bytes_total?: number;
  /** PCIe bytes received, cumulative, may wrap (field 198 `NVML_FI_DEV_PCIE_COUNT_RX_BYTES`). Take deltas. */
  readonly pcie_rx_bytes_total?: number;
  /** PCIe transmit rate, bytes/s, when only a rate is available (GPM `PCIE_TX_PER_SEC` × 2^20, or `nvmlDeviceGetPcieThroughput` KB/s × 1024). */
  readonly pcie_tx_bytes_per_s?: number;
  /** PCIe receive rate, bytes/s, when only a rate is available. */
  readonly pcie_rx_bytes_per_s?: number;
  /** PCIe replay counter (`nvmlDeviceGetPcieReplayCounter`). */
  readonly pcie_replay_count?: number;
  /** NVLink data bytes transmitted over all links, cumulative (field 138 `NVLINK_THROUGHPUT_DATA_TX`, KiB × 1024, scope UINT_MAX). */
  readonly nvlink_tx_bytes_total?: number;
  /** NVLink data bytes received over all links, cumulative (field 139, KiB × 1024). */
  readonly nvlink_rx_bytes_total?: number;
  /** NVLink CRC errors summed over links, cumulative (fields 38 + 45 `NVLINK_CRC_FLIT/DATA_ERROR_COUNT_TOTAL`). */
  readonly nvlink_crc_errors?: number;
  /** Retired pages waiting for a reboot (`nvmlDeviceGetRetiredPagesPendingStatus`; pre-Ampere, NOT_SUPPORTED on most A100/H100). */
  readonly retired_pages_pending?: boolean;
  /** Profiling counters over the interval since the previous sample, 0..1 (NVML GPM on Hopper+: SM_UTIL, SM_OCCUPANCY, ANY_TENSOR_UTIL, DRAM_BW_UTIL, FP16/32/64_UTIL / 100; or DCGM `DCGM_FI_PROF_*` from a local dcgm-exporter). Absent without a profiling source. */
  readonly sm_active?: number;
  readonly sm_occupancy?: number;
  readonly tensor_active?: number;
  readonly dram_active?: number;
  readonly fp16_active?: number;
  readonly fp32_active?: number;
  readonly fp64_active?: number;
}
