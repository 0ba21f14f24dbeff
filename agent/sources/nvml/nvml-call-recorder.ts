import type { GpuEvent } from '../../../lambdas/contract';
import type { NvmlBinding } from './binding';
import { NvmlCallError } from './errors';
import type { NvmlGpuState } from './nvml-gpu-state';
import { nvmlOutcome } from './nvml-return';
import type { NvmlLogger, NvmlSourceStats } from './nvml-types';

const NO_EVENTS: readonly GpuEvent[] = Object.freeze([]);
const NO_ERRORS: readonly NvmlCallError[] = Object.freeze([]);

/**
 * Turns each NVML return code into meaning, in one place, through `nvmlOutcome`: NOT_SUPPORTED
 * marks the call's slot unsupported for that GPU (logged once, never called again); GPU_IS_LOST
 * or RESET_REQUIRED marks the GPU lost (one `gpu_lost` event per loss); any other code is an
 * {@link NvmlCallError} value (counted, logged once per GPU, call and code). Events and errors wait
 * here until the source takes them with its sample.
 */
export class NvmlCallRecorder {
  readonly #nvml: NvmlBinding;
  readonly #logger: NvmlLogger;
  readonly #slotNames: readonly string[];
  readonly #stats: NvmlSourceStats;
  #events: GpuEvent[] | undefined;
  #errors: NvmlCallError[] | undefined;

  /**
   * @param nvml - the binding (`errorString`)
   * @param logger - once-per-condition lines
   * @param slotNames - the name of each unsupported slot, for the log line
   * @param stats - the source's counters (`nvml_errors` grows here)
   */
  constructor(nvml: NvmlBinding, logger: NvmlLogger, slotNames: readonly string[], stats: NvmlSourceStats) {
    this.#nvml = nvml;
    this.#logger = logger;
    this.#slotNames = slotNames;
    this.#stats = stats;
  }

  /**
   * Judges one device call's return code and records what it means.
   *
   * @param gpu - the GPU called
   * @param slot - its unsupported slot; `undefined` for calls not remembered as unsupported
   * @param call - the NVML symbol, for events, errors and logs
   * @param code - the `nvmlReturn_t`
   * @param at - when, for a `gpu_lost` event
   * @returns true when the out-parameter holds a value
   */
  judge(gpu: NvmlGpuState, slot: number | undefined, call: string, code: number, at: Date): boolean {
    switch (nvmlOutcome(code)) {
      case 'value':
        if (gpu.lost) {
          gpu.lost = false;
          this.#logger.info(
            { gpu_index: gpu.index, call },
            `GPU ${gpu.index} answers NVML again after being lost`,
          );
        }
        return true;
      case 'absent':
        if (slot !== undefined) {
          gpu.unsupported[slot] = 1;
          this.#logger.info(
            { gpu_index: gpu.index, call, metric: this.#slotNames[slot] },
            `GPU ${gpu.index} does not support ${call}: its metric stays absent and is not polled again`,
          );
        }
        return false;
      case 'lost':
        if (!gpu.lost) {
          gpu.lost = true;
          const detail = `${call} returned ${code} (${this.#nvml.errorString(code)})`;
          const event: GpuEvent = {
            at: at.toISOString(),
            kind: 'gpu_lost',
            source: 'nvml',
            gpu_index: gpu.index,
            detail,
          };
          if (gpu.identity.pci_bus_id !== undefined) event.pci_bus_id = gpu.identity.pci_bus_id;
          if (this.#events === undefined) this.#events = [];
          this.#events.push(event);
          this.#logger.warn(
            { gpu_index: gpu.index, pci_bus_id: gpu.identity.pci_bus_id, call, code },
            `GPU ${gpu.index} is lost: ${detail}. Expected it to answer NVML; the host likely needs a GPU reset or replacement`,
          );
        }
        return false;
      default:
        this.error(gpu, call, code);
        return false;
    }
  }

  /**
   * Records a failed device call as an {@link NvmlCallError} (counted, logged once per GPU, call and
   * code), whatever the code: for calls whose failure is never a lost GPU, such as a call on a MIG
   * device handle of a GPU instance that a re-partition destroyed (docs/nvml.md §8).
   *
   * @param gpu - the GPU called
   * @param call - the NVML symbol
   * @param code - the `nvmlReturn_t`
   */
  error(gpu: NvmlGpuState, call: string, code: number): void {
    const error = new NvmlCallError({
      call,
      gpuIndex: gpu.index,
      code,
      nvmlMessage: this.#nvml.errorString(code),
    });
    this.#push(error);
    const key = `${call}:${code}`;
    if (!gpu.loggedErrors.has(key)) {
      gpu.loggedErrors.add(key);
      this.#logger.warn({ gpu_index: gpu.index, call, code, nvml_message: error.nvmlMessage }, error.message);
    }
  }

  /** Records a failed system-wide call (versions); NOT_SUPPORTED is silent. */
  systemError(call: string, code: number): void {
    if (nvmlOutcome(code) === 'absent') return;
    const error = new NvmlCallError({ call, code, nvmlMessage: this.#nvml.errorString(code) });
    this.#push(error);
    this.#logger.warn({ call, code, nvml_message: error.nvmlMessage }, error.message);
  }

  /** The events and errors recorded since the last call, and forgets them. */
  take(): { events: readonly GpuEvent[]; errors: readonly NvmlCallError[] } {
    const events = this.#events ?? NO_EVENTS;
    const errors = this.#errors ?? NO_ERRORS;
    this.#events = undefined;
    this.#errors = undefined;
    return { events, errors };
  }

  #push(error: NvmlCallError): void {
    this.#stats.nvml_errors++;
    if (this.#errors === undefined) this.#errors = [];
    this.#errors.push(error);
  }
}
