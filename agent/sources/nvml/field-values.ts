import koffi from 'koffi';
import { nvmlFieldValue } from './structs';

/**
 * The `nvmlDeviceGetFieldValues` field ids the source reads (docs/nvml.md §6; nvml.h API 13
 * `NVML_FI_DEV_*`). Each one a driver lacks answers a per-value error and stays absent.
 */
export const NVML_FIELD = {
  /** `NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL`: NVLink flit CRC errors over all links, cumulative. */
  NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: 38,
  /** `NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL`: NVLink data CRC errors over all links, cumulative. */
  NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: 45,
  /** `NVML_FI_DEV_MEMORY_TEMP`: HBM temperature, °C. */
  MEMORY_TEMP: 82,
  /** `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`: NVLink payload KiB sent, cumulative (scope = link or all). */
  NVLINK_THROUGHPUT_DATA_TX: 138,
  /** `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX`: NVLink payload KiB received, cumulative. */
  NVLINK_THROUGHPUT_DATA_RX: 139,
  /** `NVML_FI_DEV_PCIE_COUNT_TX_BYTES`: PCIe bytes sent, cumulative, may wrap. */
  PCIE_COUNT_TX_BYTES: 197,
  /** `NVML_FI_DEV_PCIE_COUNT_RX_BYTES`: PCIe bytes received, cumulative, may wrap. */
  PCIE_COUNT_RX_BYTES: 198,
} as const;

/** One of the field ids in `NVML_FIELD`. */
export type NvmlFieldId = (typeof NVML_FIELD)[keyof typeof NVML_FIELD];

/** `scopeId` = `UINT_MAX`: the NVLink throughput fields sum every link. */
export const NVML_FIELD_SCOPE_ALL_LINKS = 0xffff_ffff;

/** Every field id the source asks for, in request order. */
export const NVML_SAMPLED_FIELDS: readonly NvmlFieldId[] = Object.values(NVML_FIELD);

const STRIDE = koffi.sizeof(nvmlFieldValue);
const OFFSET_FIELD_ID = koffi.offsetof(nvmlFieldValue, 'fieldId');
const OFFSET_SCOPE_ID = koffi.offsetof(nvmlFieldValue, 'scopeId');
const OFFSET_VALUE_TYPE = koffi.offsetof(nvmlFieldValue, 'valueType');
const OFFSET_RETURN = koffi.offsetof(nvmlFieldValue, 'nvmlReturn');
const OFFSET_VALUE = koffi.offsetof(nvmlFieldValue, 'value');
const TWO_POW_32 = 4_294_967_296;
/** Per-value placeholder written before the call: NVML overwrites it for every value it handles. */
const NOT_ANSWERED = 999;

/**
 * One GPU's reusable `nvmlFieldValue_t[]` request: a Buffer holding one 40-byte entry per field id,
 * decoded in place (no koffi object per call). A field the driver lacks is dropped with `drop()`
 * and never requested again.
 */
export class NvmlFieldValueRequest {
  #fieldIds: NvmlFieldId[];
  /** The request/answer array passed to `nvmlDeviceGetFieldValues`; `count` entries of 40 bytes. */
  readonly buffer: Buffer;

  /**
   * @param fieldIds - the fields to request @default NVML_SAMPLED_FIELDS
   */
  constructor(fieldIds: readonly NvmlFieldId[] = NVML_SAMPLED_FIELDS) {
    this.#fieldIds = [...fieldIds];
    this.buffer = Buffer.alloc(STRIDE * fieldIds.length);
  }

  /** Fields still requested. */
  get count(): number {
    return this.#fieldIds.length;
  }

  /**
   * The field id of entry `i`.
   * @param i - 0..count-1
   */
  fieldIdAt(i: number): NvmlFieldId {
    return this.#fieldIds[i] as NvmlFieldId;
  }

  /** True while `fieldId` is still requested. */
  has(fieldId: NvmlFieldId): boolean {
    return this.#fieldIds.includes(fieldId);
  }

  /** Writes `fieldId`/`scopeId` of every entry and clears its answer; call before each NVML call. */
  prepare(): void {
    const b = this.buffer;
    for (let i = 0; i < this.#fieldIds.length; i++) {
      const at = i * STRIDE;
      const id = this.#fieldIds[i] as number;
      b.writeUInt32LE(id, at + OFFSET_FIELD_ID);
      const allLinks =
        id === NVML_FIELD.NVLINK_THROUGHPUT_DATA_TX || id === NVML_FIELD.NVLINK_THROUGHPUT_DATA_RX;
      b.writeUInt32LE(allLinks ? NVML_FIELD_SCOPE_ALL_LINKS : 0, at + OFFSET_SCOPE_ID);
      b.writeUInt32LE(NOT_ANSWERED, at + OFFSET_RETURN);
    }
  }

  /** The per-value `nvmlReturn` of entry `i`. */
  returnAt(i: number): number {
    return this.buffer.readUInt32LE(i * STRIDE + OFFSET_RETURN);
  }

  /**
   * The value of entry `i`, read from the `nvmlValue_t` member its `valueType` names
   * (0 double, 1 uint, 2 ulong, 3 ull, 4 sll, 5 int, 6 ushort; docs/nvml.md §5).
   * @returns a number (64-bit values exact below 2^53), or undefined for an unknown `valueType`
   */
  valueAt(i: number): number | undefined {
    const b = this.buffer;
    const at = i * STRIDE + OFFSET_VALUE;
    switch (b.readUInt32LE(i * STRIDE + OFFSET_VALUE_TYPE)) {
      case 0:
        return b.readDoubleLE(at);
      case 1:
        return b.readUInt32LE(at);
      case 2:
      case 3:
        return b.readUInt32LE(at) + b.readUInt32LE(at + 4) * TWO_POW_32;
      case 4:
        return b.readUInt32LE(at) + b.readInt32LE(at + 4) * TWO_POW_32;
      case 5:
        return b.readInt32LE(at);
      case 6:
        return b.readUInt16LE(at);
      default:
        return undefined;
    }
  }

  /**
   * Stops requesting `fieldIds` (the driver lacks them). The buffer keeps its size; only the
   * first `count` entries are passed.
   */
  drop(fieldIds: readonly number[]): void {
    this.#fieldIds = this.#fieldIds.filter((id) => !fieldIds.includes(id));
  }
}
