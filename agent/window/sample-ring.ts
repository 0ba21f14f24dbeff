import { isAbsent } from './absent';
import { COLUMN_COUNT, GpuRow, rowFromSample } from './gpu-row';
import type { GpuSample } from './gpu-sample';
import {
  COLUMN_CHECK_CODES,
  COLUMN_FIELDS,
  type ColumnField,
  checkColumnValue,
  encodeProcess,
  MAX_PROCESSES_PER_SAMPLE,
  type SampleColumns,
} from './sample-columns';

/** The row {@link SampleRing.push} encodes a sample object into (used synchronously, then overwritten). */
const PUSH_SCRATCH = new GpuRow(0);

/** Rows a ring starts with; it doubles when full, up to its `maxSamples`. */
const INITIAL_ROWS = 64;
/** Process entries a ring starts with; doubles when full (bounded by rows × 64). */
const INITIAL_PROCESS_ENTRIES = 64;

/**
 * Bytes one row costs besides its field columns: the time (`Float64Array`, 8 B) + the row's first
 * process entry (`Float64Array`, 8 B) + its process count (`Int8Array`, 1 B).
 */
export const BYTES_PER_ROW_BASE = 8 + 8 + 1;
/** Bytes one process entry costs: pid (`Uint32Array`, 4 B) + memory (`Float64Array`, 8 B). */
export const BYTES_PER_PROCESS_ENTRY = 4 + 8;

/**
 * A field column's storage, chosen by the values it has held, never by guess, so every value reads
 * back exactly: none while every value was absent (`NaN`; nothing allocated, reads as `NaN`), a
 * `Float32Array` while every value was exact in 32 bits (`Math.fround(v) === v`: integer °C, MHz,
 * W limits, flags, counts < 2^24, bitmasks), a `Float64Array` from the first value that is not
 * (ratios, energy and byte counters). A column only moves up, once, copying its rows exactly. The
 * ring keeps each column's width (0, 4 or 8 bytes a row) and its array in one of two lists, one per
 * element type, so the per-value store of {@link SampleRing.pushRow} always meets one kind of array.
 */
const NO_FLOAT32 = new Float32Array(0);
const NO_FLOAT64 = new Float64Array(0);

/**
 * One GPU's recent samples in a ring of typed arrays, one per field (`NaN` = absent, flags 1/0),
 * plus a second ring of process entries (pid, memory) that the rows point into. Rows are kept in
 * arrival order; the caller keeps `at_ms` ascending. Memory grows by doubling up to
 * `maxSamples` rows and never shrinks (see {@link SampleRing.bytes}).
 *
 * A field column takes 0, 4 or 8 bytes a row by what it has held (see the note on `NO_FLOAT32`): on a
 * p5 (H100, GPM) about 20 of the 35 columns stay 32-bit (temperatures, clocks, power limits, ECC
 * counts, flags, frame-buffer bytes in whole MiB), and a metric the GPU does not give costs nothing.
 * Values read back exactly as pushed either way.
 */
export class SampleRing {
  /** Most rows kept; a push beyond drops the oldest. */
  readonly maxSamples: number;
  #capacity = 0;
  #head = 0;
  #length = 0;
  #atMs = new Float64Array(0);
  /** Bytes a row of each field column takes: 0 (nothing held but absent values), 4 or 8. */
  readonly #widths = new Uint8Array(COLUMN_COUNT);
  /** Each field column's array while it is 32-bit (width 4); an empty array otherwise. */
  readonly #f32: Float32Array[] = COLUMN_FIELDS.map(() => NO_FLOAT32);
  /** Each field column's array once it is 64-bit (width 8); an empty array otherwise. */
  readonly #f64: Float64Array[] = COLUMN_FIELDS.map(() => NO_FLOAT64);
  /** Logical index of each row's first process entry (grows forever; exact to 2^53). */
  #processStart = new Float64Array(0);
  /** Each row's number of process entries; −1 when the sample had no `processes` field. */
  #processCount = new Int8Array(0);
  #pids = new Uint32Array(0);
  #memories = new Float64Array(0);
  /** Logical index the next process entry is written at. */
  #processEnd = 0;

  #initialRows: number;

  /**
   * @param maxSamples - most rows kept, an integer ≥ 1 (the caller validates it)
   * @param initialRows - rows allocated at the first push, 1..`maxSamples` (the rows the caller
   *   expects to keep: the ring then never grows in steady state, so it never holds an old and a
   *   new set of arrays at once); it doubles from there when short. @default min(64, maxSamples)
   */
  constructor(maxSamples: number, initialRows = INITIAL_ROWS) {
    this.maxSamples = maxSamples;
    this.#initialRows = Math.max(1, Math.min(maxSamples, Math.floor(initialRows)));
  }

  /** Rows kept, 0..`maxSamples`. */
  get length(): number {
    return this.#length;
  }

  /**
   * Bytes allocated by the typed arrays: capacity × {@link BYTES_PER_ROW_BASE} + each field
   * column's bytes (capacity × 0, 4 or 8) + process capacity × {@link BYTES_PER_PROCESS_ENTRY}.
   */
  get bytes(): number {
    let columns = 0;
    for (let c = 0; c < COLUMN_COUNT; c++) columns += this.#capacity * (this.#widths[c] as number);
    return this.#capacity * BYTES_PER_ROW_BASE + columns + this.#pids.length * BYTES_PER_PROCESS_ENTRY;
  }

  /** Bytes per row of each field column, in `COLUMN_FIELDS` order: 0 (all absent so far), 4 or 8. */
  get columnWidths(): number[] {
    return [...this.#widths];
  }

  /** Time of row `row` (0 = oldest), ms since the epoch; `NaN` outside 0..length − 1. */
  atMs(row: number): number {
    if (row < 0 || row >= this.#length) return Number.NaN;
    return this.#atMs[this.#physical(row)]!;
  }

  /** Appends a sample (checked and encoded as `columnsFromSamples` does), dropping the oldest row when full. */
  push(sample: GpuSample): void {
    this.pushRow(rowFromSample(sample, PUSH_SCRATCH));
  }

  /**
   * Appends a source's row (its raw values checked per column as `encodeField` checks sample
   * fields; at most {@link MAX_PROCESSES_PER_SAMPLE} processes, an entry without a valid pid
   * dropped), dropping the oldest row when full. The row is copied; the caller may reuse it.
   */
  pushRow(row: GpuRow): void {
    if (this.#length === this.maxSamples) this.dropOldest(1);
    if (this.#length === this.#capacity) this.#grow();
    const at = this.#physical(this.#length);
    this.#atMs[at] = row.atMs;
    const values = row.values;
    const widths = this.#widths;
    const f32 = this.#f32;
    const f64 = this.#f64;
    for (let c = 0; c < COLUMN_COUNT; c++) {
      const raw = values[c] as number;
      const width = widths[c];
      // Absent (`NaN`) needs no check: stored as `NaN` where the column exists, nothing otherwise.
      if (isAbsent(raw)) {
        if (width === 4) (f32[c] as Float32Array)[at] = raw;
        else if (width === 8) (f64[c] as Float64Array)[at] = raw;
        continue;
      }
      const value = checkColumnValue(COLUMN_CHECK_CODES[c] as number, raw);
      if (width === 8) {
        (f64[c] as Float64Array)[at] = value;
        continue;
      }
      if (width === 4) {
        // The store rounds as `Math.fround` does: the value read back is exact, or the column widens
        // (copying the rounded value, overwritten below) — one load instead of a call a value.
        const column = f32[c] as Float32Array;
        column[at] = value;
        if (column[at] === value || isAbsent(value)) continue;
      } else if (isAbsent(value)) continue; // absent, as every value before it: nothing to store
      this.#widen(c, value);
      if (widths[c] === 4) (f32[c] as Float32Array)[at] = value;
      else (f64[c] as Float64Array)[at] = value;
    }
    this.#processStart[at] = this.#processEnd;
    this.#processCount[at] = -1;
    this.#length++;
    const processes = row.processes;
    if (processes === undefined) return;
    const count = Math.min(processes.length, MAX_PROCESSES_PER_SAMPLE);
    this.#reserveProcesses(count);
    let kept = 0;
    for (let i = 0; i < count; i++) {
      const entry = encodeProcess(processes[i] as NonNullable<GpuSample['processes']>[number]);
      if (entry === undefined) continue;
      const slot = this.#processEnd % this.#pids.length;
      this.#pids[slot] = entry[0];
      this.#memories[slot] = entry[1];
      this.#processEnd++;
      kept++;
    }
    this.#processCount[at] = kept;
  }

  /** Drops the `count` oldest rows (all when `count` ≥ length). */
  dropOldest(count: number): void {
    const dropped = Math.min(count, this.#length);
    this.#head = (this.#head + dropped) % Math.max(1, this.#capacity);
    this.#length -= dropped;
  }

  /** Drops every row; keeps the allocated arrays for reuse. */
  clear(): void {
    this.dropOldest(this.#length);
  }

  /** First row whose time is ≥ `atMs` (binary search; `length` when none). */
  lowerBound(atMs: number): number {
    let low = 0;
    let high = this.#length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.atMs(mid) < atMs) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** First row whose time is > `atMs` (binary search; `length` when none). */
  upperBound(atMs: number): number {
    let low = 0;
    let high = this.#length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.atMs(mid) <= atMs) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /**
   * Rows `from` (inclusive) to `to` (exclusive) as {@link SampleColumns}: views into the ring
   * when the rows do not wrap, else copies into `scratch`. Valid until the next `push` or the
   * next use of `scratch`.
   */
  columns(from: number, to: number, scratch: ColumnScratch): SampleColumns {
    const length = Math.max(0, to - from);
    const start = this.#physical(from);
    const fields = {} as Record<ColumnField, Float64Array>;
    for (let c = 0; c < COLUMN_COUNT; c++) {
      const width = this.#widths[c];
      fields[COLUMN_FIELDS[c] as ColumnField] =
        width === 0
          ? scratch.absent(length)
          : width === 8
            ? slice(this.#f64[c] as Float64Array, start, length, scratch, c)
            : scratch.copy(c, this.#f32[c] as Float32Array, start, length);
    }
    let processesSeen = false;
    let firstEntry = this.#processEnd;
    let endEntry = this.#processEnd;
    for (let row = from; row < to; row++) {
      const at = this.#physical(row);
      if (this.#processCount[at]! < 0) continue;
      if (!processesSeen) firstEntry = this.#processStart[at]!;
      processesSeen = true;
      endEntry = this.#processStart[at]! + this.#processCount[at]!;
    }
    const entries = endEntry - firstEntry;
    const entryStart = this.#pids.length === 0 ? 0 : firstEntry % this.#pids.length;
    return {
      length,
      atMs: slice(this.#atMs, start, length, scratch, COLUMN_FIELDS.length),
      fields,
      processPids: scratch.copy(COLUMN_FIELDS.length + 1, this.#pids, entryStart, entries),
      processFbUsedBytes: slice(this.#memories, entryStart, entries, scratch, COLUMN_FIELDS.length + 2),
      processesSeen,
    };
  }

  #physical(row: number): number {
    return this.#capacity === 0 ? 0 : (this.#head + row) % this.#capacity;
  }

  #grow(): void {
    const capacity = Math.min(this.maxSamples, Math.max(this.#initialRows, this.#capacity * 2));
    const move = <T extends Float64Array | Float32Array | Int8Array>(old: T, fresh: T): T => {
      for (let row = 0; row < this.#length; row++) fresh[row] = old[this.#physical(row)]!;
      return fresh;
    };
    this.#atMs = move(this.#atMs, new Float64Array(capacity));
    for (let c = 0; c < COLUMN_COUNT; c++) {
      const width = this.#widths[c];
      if (width === 4) this.#f32[c] = move(this.#f32[c] as Float32Array, new Float32Array(capacity));
      else if (width === 8) this.#f64[c] = move(this.#f64[c] as Float64Array, new Float64Array(capacity));
    }
    this.#processStart = move(this.#processStart, new Float64Array(capacity));
    this.#processCount = move(this.#processCount, new Int8Array(capacity));
    this.#capacity = capacity;
    this.#head = 0;
  }

  /**
   * Gives field column `c` the storage `value` needs (see the note on `NO_FLOAT32`): a first value that
   * is not absent allocates it (every earlier row absent), 32-bit when the value is exact there; a
   * value that is not exact in 32 bits moves a 32-bit column to 64-bit, copying its rows exactly.
   */
  #widen(c: number, value: number): void {
    if (this.#widths[c] === 0) {
      if (Math.fround(value) === value) {
        this.#f32[c] = new Float32Array(this.#capacity).fill(Number.NaN);
        this.#widths[c] = 4;
      } else {
        this.#f64[c] = new Float64Array(this.#capacity).fill(Number.NaN);
        this.#widths[c] = 8;
      }
      return;
    }
    const column = new Float64Array(this.#capacity);
    column.set(this.#f32[c] as Float32Array);
    this.#f32[c] = NO_FLOAT32;
    this.#f64[c] = column;
    this.#widths[c] = 8;
  }

  /**
   * Makes room for `count` more process entries of the newest row (already counted in
   * `length`), doubling the entry ring while it is too small. Live entries run from the oldest
   * row's first entry to `processEnd`.
   */
  #reserveProcesses(count: number): void {
    const liveStart = this.#processStart[this.#physical(0)]!;
    const needed = this.#processEnd - liveStart + count;
    if (needed <= this.#pids.length) return;
    let capacity = Math.max(INITIAL_PROCESS_ENTRIES, this.#pids.length);
    while (capacity < needed) capacity *= 2;
    const pids = new Uint32Array(capacity);
    const memories = new Float64Array(capacity);
    for (let entry = liveStart; entry < this.#processEnd; entry++) {
      pids[entry % capacity] = this.#pids[entry % this.#pids.length]!;
      memories[entry % capacity] = this.#memories[entry % this.#memories.length]!;
    }
    this.#pids = pids;
    this.#memories = memories;
  }
}

/**
 * Reusable arrays that {@link SampleRing.columns} copies wrapped rows into, so a horizon window
 * allocates nothing in steady state. One per tracker; it grows to the largest window asked for
 * (about one ring's worth of bytes).
 */
export class ColumnScratch {
  #arrays: Float64Array[] = [];
  #absent = new Float64Array(0);

  /** A view of `count` `NaN`s: the values of a column that has held nothing but absent values. */
  absent(count: number): Float64Array {
    if (this.#absent.length < count)
      this.#absent = new Float64Array(Math.max(count, this.#absent.length * 2)).fill(Number.NaN);
    return this.#absent.subarray(0, count);
  }

  /**
   * Copies `count` values of the ring `source`, starting at physical index `start` and wrapping
   * at its end, into scratch slot `slot` (grown by doubling when short).
   *
   * @returns a view of the slot's first `count` values
   */
  copy(
    slot: number,
    source: Float64Array | Float32Array | Uint32Array,
    start: number,
    count: number,
  ): Float64Array {
    let target = this.#arrays[slot];
    if (target === undefined || target.length < count) {
      target = new Float64Array(Math.max(count, (target?.length ?? 0) * 2));
      this.#arrays[slot] = target;
    }
    const head = Math.min(count, source.length - start);
    target.set(source.subarray(start, start + head), 0);
    if (head < count) target.set(source.subarray(0, count - head), head);
    return target.subarray(0, count);
  }
}

function slice(
  source: Float64Array,
  start: number,
  count: number,
  scratch: ColumnScratch,
  slot: number,
): Float64Array {
  return start + count <= source.length
    ? source.subarray(start, start + count)
    : scratch.copy(slot, source, start, count);
}
