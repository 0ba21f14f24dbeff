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
/** {@link STRIDE} and the member offsets in 32-bit words (every member is 4-byte aligned, `value` 8-byte). */
const STRIDE_WORDS = STRIDE / 4;
const WORD_FIELD_ID = OFFSET_FIELD_ID / 4;
const WORD_SCOPE_ID = OFFSET_SCOPE_ID / 4;
const WORD_VALUE_TYPE = OFFSET_VALUE_TYPE / 4;
const WORD_RETURN = OFFSET_RETURN / 4;
const WORD_VALUE = OFFSET_VALUE / 4;

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
   * Views of {@link buffer} by element type, read and written in place of `Buffer`'s checked
   * `readUInt32LE`/`writeUInt32LE`… (JavaScript functions with range checks, a call each: at every
   * poll of every GPU). Native byte order, as NVML writes it (little-endian on x86-64 and arm64, the
   * agent's targets); the buffer is its own `ArrayBuffer`, so every member is aligned.
   */
  readonly #u32: Uint32Array;
  readonly #i32: Int32Array;
  readonly #u16: Uint16Array;
  readonly #f64: Float64Array;

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
    const memory = new ArrayBuffer(STRIDE * fieldIds.length);
    this.buffer = Buffer.from(memory);
    this.#u32 = new Uint32Array(memory);
    this.#i32 = new Int32Array(memory);
    this.#u16 = new Uint16Array(memory);
    this.#f64 = new Float64Array(memory);
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
    const words = this.#u32;
    const ids = full ? this.#all : this.#poll;
    this.#active = ids;
    for (let i = 0; i < ids.length; i++) {
      const at = i * STRIDE_WORDS;
      const id = ids[i] as number;
      words[at + WORD_FIELD_ID] = id;
      const allLinks =
        id === NVML_FIELD.NVLINK_THROUGHPUT_DATA_TX || id === NVML_FIELD.NVLINK_THROUGHPUT_DATA_RX;
      words[at + WORD_SCOPE_ID] = allLinks ? NVML_FIELD_SCOPE_ALL_LINKS : 0;
      words[at + WORD_RETURN] = NOT_ANSWERED;
    }
  }

  /** The per-value `nvmlReturn` of entry `i`. */
  returnAt(i: number): number {
    return this.#u32[i * STRIDE_WORDS + WORD_RETURN] as number;
  }

  /**
   * The value of entry `i`, read from the `nvmlValue_t` member its `valueType` names
   * (0 double, 1 uint, 2 ulong, 3 ull, 4 sll, 5 int, 6 ushort; docs/nvml.md §5).
   * @returns a number (64-bit values exact below 2^53), or undefined for an unknown `valueType`
   */
  valueAt(i: number): number | undefined {
    const at = i * STRIDE_WORDS + WORD_VALUE;
    const words = this.#u32;
    switch (words[i * STRIDE_WORDS + WORD_VALUE_TYPE]) {
      case 0:
        return this.#f64[at / 2];
      case 1:
        return words[at];
      case 2:
      case 3:
        return (words[at] as number) + (words[at + 1] as number) * TWO_POW_32;
      case 4:
        return (words[at] as number) + (this.#i32[at + 1] as number) * TWO_POW_32;
      case 5:
        return this.#i32[at];
      case 6:
        return this.#u16[at * 2];
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
