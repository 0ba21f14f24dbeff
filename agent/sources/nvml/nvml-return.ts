/**
 * The one place where NVML return codes (`nvmlReturn_t`, a 32-bit enum; docs/nvml.md §2)
 * are turned into meaning for the agent.
 */

/** The `nvmlReturn_t` values the agent acts on. Source: nvml.h (API 13) lines 1305–1336. */
export const NVML_RETURN = {
  SUCCESS: 0,
  ERROR_UNINITIALIZED: 1,
  ERROR_INVALID_ARGUMENT: 2,
  ERROR_NOT_SUPPORTED: 3,
  ERROR_NO_PERMISSION: 4,
  ERROR_NOT_FOUND: 6,
  ERROR_INSUFFICIENT_SIZE: 7,
  ERROR_DRIVER_NOT_LOADED: 9,
  ERROR_TIMEOUT: 10,
  ERROR_FUNCTION_NOT_FOUND: 13,
  ERROR_GPU_IS_LOST: 15,
  ERROR_RESET_REQUIRED: 16,
  ERROR_LIB_RM_VERSION_MISMATCH: 18,
  ERROR_ARGUMENT_VERSION_MISMATCH: 25,
  ERROR_UNKNOWN: 999,
} as const;

/** What one NVML answer means for the sampler. */
export const NVML_OUTCOMES = ['value', 'absent', 'lost', 'error'] as const;

/**
 * - `value`: the out-parameter holds a reading;
 * - `absent`: the GPU or driver cannot give this metric (NOT_SUPPORTED); remember it per GPU and
 *   metric and stop polling it;
 * - `lost`: the GPU fell off the bus or needs a reset (GPU_IS_LOST, RESET_REQUIRED); report a
 *   `gpu_lost` event once and stop reading it;
 * - `error`: anything else; the metric is absent from this sample and an `NvmlCallError` is counted.
 */
export type NvmlOutcome = (typeof NVML_OUTCOMES)[number];

/**
 * Classifies an NVML return code.
 *
 * @param code - the `nvmlReturn_t` a call answered (0..999)
 * @returns `value` for SUCCESS, `absent` for NOT_SUPPORTED, `lost` for GPU_IS_LOST and
 *   RESET_REQUIRED, `error` for every other code (including INSUFFICIENT_SIZE: calls that expect
 *   it, such as the process-count probe, check for it before asking this function)
 * @example
 * nvmlOutcome(3); // 'absent'
 */
export function nvmlOutcome(code: number): NvmlOutcome {
  switch (code) {
    case NVML_RETURN.SUCCESS:
      return 'value';
    case NVML_RETURN.ERROR_NOT_SUPPORTED:
      return 'absent';
    case NVML_RETURN.ERROR_GPU_IS_LOST:
    case NVML_RETURN.ERROR_RESET_REQUIRED:
      return 'lost';
    default:
      return 'error';
  }
}
