import { COLUMN_INDEX } from '../../window/gpu-row';
import type { NvmlBinding } from './binding';
import { NVML_FIELD } from './field-values';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { NvmlGpuState } from './nvml-gpu-state';
import { NVML_CALL_SLOTS } from './nvml-metric-table';
import { NVML_RETURN } from './nvml-return';
import type { NvmlLogger } from './nvml-types';

const KIB = 1024;
/** Per-value answers of a driver that lacks a field id: the field is dropped and not requested again. */
const FIELD_LACKING = new Set<number>([NVML_RETURN.ERROR_NOT_SUPPORTED, NVML_RETURN.ERROR_INVALID_ARGUMENT]);

/** Field id → the row column (`COLUMN_INDEX`) it fills and its unit conversion. NVLink CRC counts are summed apart. */
const FIELD_TARGETS: ReadonlyMap<number, { column: number; scale: number }> = new Map([
  [NVML_FIELD.MEMORY_TEMP, { column: COLUMN_INDEX.mem_temp_c, scale: 1 }],
  [NVML_FIELD.PCIE_COUNT_TX_BYTES, { column: COLUMN_INDEX.pcie_tx_bytes_total, scale: 1 }],
  [NVML_FIELD.PCIE_COUNT_RX_BYTES, { column: COLUMN_INDEX.pcie_rx_bytes_total, scale: 1 }],
  // NVLink throughput is in KiB.
  [NVML_FIELD.NVLINK_THROUGHPUT_DATA_TX, { column: COLUMN_INDEX.nvlink_tx_bytes_total, scale: KIB }],
  [NVML_FIELD.NVLINK_THROUGHPUT_DATA_RX, { column: COLUMN_INDEX.nvlink_rx_bytes_total, scale: KIB }],
]);
const CRC_FIELDS = new Set<number>([
  NVML_FIELD.NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
  NVML_FIELD.NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
]);

/**
 * One `nvmlDeviceGetFieldValues` call per GPU and poll: at a window's edge (`full`) for every field
 * still requested (HBM temperature, PCIe byte counters, NVLink throughput and CRC errors), inside a
 * window only for the fields read at every poll (HBM temperature, PCIe RX bytes: `NVML_EDGE_FIELDS`
 * says why). A per-value NOT_SUPPORTED or
 * INVALID_ARGUMENT drops that field for good (logged once); other per-value codes are judged like
 * a call. A negative or non-finite value is left out.
 */
export class NvmlFieldReader {
  readonly #nvml: NvmlBinding;
  readonly #recorder: NvmlCallRecorder;
  readonly #logger: NvmlLogger;

  /** @param nvml - the binding; @param recorder - judges codes; @param logger - the once-per-GPU drop line */
  constructor(nvml: NvmlBinding, recorder: NvmlCallRecorder, logger: NvmlLogger) {
    this.#nvml = nvml;
    this.#recorder = recorder;
    this.#logger = logger;
  }

  /**
   * Reads the fields into `values` (a `GpuRow`'s columns).
   * @param full - true at a window's edge (every field), false inside a window (the poll fields). @default true
   * @returns false when the call or a value failed
   */
  read(gpu: NvmlGpuState, handle: bigint, values: Float64Array, at: Date, full = true): boolean {
    const fn = this.#nvml.fieldValues;
    const request = gpu.fields;
    if (fn === undefined) return false;
    request.prepare(full);
    const code = fn(handle, request.count, request.buffer);
    const call = this.#nvml.symbols.fieldValues ?? '';
    if (!this.#recorder.judge(gpu, NVML_CALL_SLOTS.fieldValues, call, code, at)) return false;
    let ok = true;
    let lacking: number[] | undefined;
    let crc: number | undefined;
    for (let i = 0; i < request.count; i++) {
      const fieldId = request.fieldIdAt(i);
      const rc = request.returnAt(i);
      if (rc !== NVML_RETURN.SUCCESS) {
        if (FIELD_LACKING.has(rc)) {
          if (lacking === undefined) lacking = [];
          lacking.push(fieldId);
        } else if (
          !this.#recorder.judge(gpu, undefined, `nvmlDeviceGetFieldValues(fieldId ${fieldId})`, rc, at)
        ) {
          ok = false;
          if (gpu.lost) return false;
        }
        continue;
      }
      const value = request.valueAt(i);
      if (value === undefined || !Number.isFinite(value) || value < 0) continue;
      const target = FIELD_TARGETS.get(fieldId);
      if (target !== undefined) values[target.column] = value * target.scale;
      else if (CRC_FIELDS.has(fieldId)) crc = (crc ?? 0) + value;
    }
    if (crc !== undefined) values[COLUMN_INDEX.nvlink_crc_errors] = crc;
    if (lacking !== undefined) {
      request.drop(lacking);
      this.#logger.info(
        { gpu_index: gpu.index, call: 'nvmlDeviceGetFieldValues', field_ids: lacking },
        `GPU ${gpu.index} lacks NVML field ids ${lacking.join(', ')}: their metrics stay absent and are not requested again`,
      );
    }
    return ok;
  }
}
