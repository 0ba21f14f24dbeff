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

/**
 * The field ids read only at a window's edges (`full` polls), each a cumulative counter the window
 * turns into a delta or a mean rate between its edge readings, never per poll: NVLink CRC totals
 * (`nvlink_crc_errors`, last value and delta), NVLink payload totals (`nvlink_*_bytes_per_s`,
 * `counterRate`), PCIe TX bytes (`pcie_tx_bytes_per_s`, `counterRate`). The others are read at every
 * poll: the HBM temperature is an instant the window averages, and the PCIe RX counter gives
 * `max_pcie_rx_bytes_per_s`, the highest step between consecutive polls.
 */
export const NVML_EDGE_FIELDS: readonly NvmlFieldId[] = [
  NVML_FIELD.NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL,
  NVML_FIELD.NVLINK_CRC_DATA_ERROR_COUNT_TOTAL,
  NVML_FIELD.NVLINK_THROUGHPUT_DATA_TX,
  NVML_FIELD.NVLINK_THROUGHPUT_DATA_RX,
  NVML_FIELD.PCIE_COUNT_TX_BYTES,
];

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
 * decoded in place (no koffi object per call). A full request (a window's edge) asks for every field
 * still requested; a poll inside a window asks only for those not in the edge set. A field the
 * driver lacks is dropped with `drop()` and never requested again.
 */
export class NvmlFieldValueRequest {
  /** Every field still requested, in request order. */
  #all: NvmlFieldId[];
  /** Those of {@link #all} read at every poll (not in the edge set). */
  #poll: NvmlFieldId[];
  /** The set the last {@link prepare} wrote: {@link #all} or {@link #poll}. */
  #active: NvmlFieldId[];
  /** The request/answer array passed to `nvmlDeviceGetFieldValues`; `count` entries of 40 bytes. */
  readonly buffer: Buffer;

  /**
   * @param fieldIds - the fields to request @default NVML_SAMPLED_FIELDS
   * @param edgeFieldIds - those of `fieldIds` requested only by a full request @default NVML_EDGE_FIELDS
   */
  constructor(
    fieldIds: readonly NvmlFieldId[] = NVML_SAMPLED_FIELDS,
    edgeFieldIds: readonly NvmlFieldId[] = NVML_EDGE_FIELDS,
  ) {
    const edge = new Set(edgeFieldIds);
    this.#all = [...fieldIds];
    this.#poll = this.#all.filter((id) => !edge.has(id));
    this.#active = this.#all;
    this.buffer = Buffer.alloc(STRIDE * fieldIds.length);
  }

  /** Fields the last {@link prepare} wrote (every field still requested before the first). */
  get count(): number {
    return this.#active.length;
  }

  /**
   * Fields a request would ask for.
   * @param full - true: a window's edge (every field still requested); false: a poll inside a window
   */
  countFor(full: boolean): number {
    return full ? this.#all.length : this.#poll.length;
  }

  /**
   * The field id of entry `i`.
   * @param i - 0..count-1
   */
  fieldIdAt(i: number): NvmlFieldId {
    return this.#active[i] as NvmlFieldId;
  }

  /** True while `fieldId` is still requested (at the edges or at every poll). */
  has(fieldId: NvmlFieldId): boolean {
    return this.#all.includes(fieldId);
  }

  /**
   * Writes `fieldId`/`scopeId` of every entry of the request and clears its answer; call before
   * each NVML call.
   * @param full - true: every field still requested; false: the poll fields only. @default true
   */
  prepare(full = true): void {
    const b = this.buffer;
    const ids = full ? this.#all : this.#poll;
    this.#active = ids;
    for (let i = 0; i < ids.length; i++) {
      const at = i * STRIDE;
      const id = ids[i] as number;
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
    this.#all = this.#all.filter((id) => !fieldIds.includes(id));
    this.#poll = this.#poll.filter((id) => !fieldIds.includes(id));
    this.#active = this.#all;
  }
}
