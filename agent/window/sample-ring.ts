import { isAbsent } from './absent';
import { COLUMN_COUNT, GpuRow, rowFromSample } from './gpu-row';
import type { GpuSample } from './gpu-sample';
import {
  CHECK_MAX,
  CHECK_MIN,
  CHECK_WHOLE,
  COLUMN_CHECK_CODES,
  COLUMN_FIELDS,
  type ColumnField,
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
 * back exactly: none while every value was absent (`NaN`; nothing allocated, reads as `NaN`), 32-bit
 * while every value was exact in 32 bits (`Math.fround(v) === v`: integer °C, MHz, W limits, flags,
 * counts < 2^24, bitmasks), 64-bit from the first value that is not (ratios, energy and byte
 * counters). A column only moves up, once, copying its rows exactly.
 *
 * The rows are stored row by row, not column by column: the 32-bit columns of a row side by side in
 * one `Float32Array` (a record of `n32` values per row), the 64-bit ones in one `Float64Array`. A
 * push (two per GPU a second: the open window and the horizon) then writes a few adjacent cache lines
 * instead of one line in each of 37 arrays and their headers: by measurement the per-column layout
 * cost a cache miss per value once the agent had slept a second between polls (BENCHMARKS.md,
 * 2026-11-28 "the agent's CPU per poll and window"). A window reads its columns out of the records
 * ({@link SampleRing.columns}); the horizon's once a minute. The price: a column that widens once
 * rows are kept (a first value after absent rows, a value not exact in 32 bits) lays the whole ring
 * out anew (a horizon ring at 1 Hz: ≈ 180 KiB on a p5) where one column's array was; each column
 * widens at most twice in a ring's life, and the agent's first poll reads every column. The old
 * arrays are freed at once ({@link release}), not at the next full collection: a job starting on 64
 * GPUs in one poll (every `fb_used_bytes` no longer exact in 32 bits) would otherwise leave 64 old
 * rings, ≈ 11 MiB, in RSS until then.
 */

/** An empty column: the placeholder of {@link ColumnScratch.fields} before its first use. */
const NO_VALUES = new Float64Array(0);

/** The checked values of the row being pushed (used synchronously by one push, then overwritten). */
const CHECKED = new Float64Array(COLUMN_COUNT);

export class SampleRing {
  /** Most rows kept; a push beyond drops the oldest. */
  readonly maxSamples: number;
  #capacity = 0;
  #head = 0;
  #length = 0;
  #atMs = new Float64Array(0);
  /** Bytes a row of each field column takes: 0 (nothing held but absent values), 4 or 8. */
  readonly #widths = new Uint8Array(COLUMN_COUNT);
  /** Each field column's place in its row record (`#rows32` or `#rows64` by its width); −1 at width 0. */
  readonly #slots = new Int16Array(COLUMN_COUNT).fill(-1);
  /** Values per row record of the 32-bit columns, and of the 64-bit ones. */
  #n32 = 0;
  #n64 = 0;
  /** The 32-bit columns' values: row `p` (physical) at `p × n32 … p × n32 + n32 − 1`. */
  #rows32 = new Float32Array(0);
  /** The 64-bit columns' values: row `p` (physical) at `p × n64 … p × n64 + n64 − 1`. */
  #rows64 = new Float64Array(0);
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
    const columns = this.#capacity * (4 * this.#n32 + 8 * this.#n64);
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

  /**
   * Whether the newest row is later than `atMs` (false when empty): a boolean, where reading the
   * time with {@link atMs} returns a number, boxed at every call Maglev does not inline.
   */
  isAfter(atMs: number): boolean {
    return this.#length > 0 && (this.#atMs[this.#physical(this.#length - 1)] as number) > atMs;
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
    const slots = this.#slots;
    const rows32 = this.#rows32;
    const rows64 = this.#rows64;
    const base32 = at * this.#n32;
    const base64 = at * this.#n64;
    const checked = CHECKED;
    // Columns that need more room (a first value, or a value not exact in 32 bits): laid out anew,
    // all at once, after the loop.
    let wider = 0;
    // No call in this loop: a number passed to or returned from a call Maglev does not inline is
    // boxed (a heap allocation per value: 43 KB a poll at 64 GPUs, measured). The check is
    // `isColumnValue`'s, written out over its tables.
    for (let c = 0; c < COLUMN_COUNT; c++) {
      const raw = values[c] as number;
      const width = widths[c];
      const code = COLUMN_CHECK_CODES[c] as number;
      if (
        !(raw - raw === 0) || // absent (NaN) or not finite
        !(raw >= (CHECK_MIN[code] as number) && raw <= (CHECK_MAX[code] as number)) ||
        (CHECK_WHOLE[code] === 1 && Math.floor(raw) !== raw)
      ) {
        // Absent or failing its check: `NaN` where the column exists, nothing otherwise.
        checked[c] = Number.NaN;
        if (width === 4) rows32[base32 + (slots[c] as number)] = Number.NaN;
        else if (width === 8) rows64[base64 + (slots[c] as number)] = Number.NaN;
        continue;
      }
      checked[c] = raw;
      if (width === 8) {
        rows64[base64 + (slots[c] as number)] = raw;
      } else if (width === 4) {
        // The store rounds as `Math.fround` does: the value read back is exact, or the column widens.
        const i = base32 + (slots[c] as number);
        rows32[i] = raw;
        if (rows32[i] !== raw) wider++;
      } else wider++; // a first value
    }
    if (wider > 0) this.#relayout(checked, at);
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
      if ((this.#atMs[this.#physical(mid)] as number) < atMs)
        low = mid + 1; // no call: a returned number is boxed
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
      if ((this.#atMs[this.#physical(mid)] as number) <= atMs) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /**
   * Rows `from` (inclusive) to `to` (exclusive) as {@link SampleColumns}: the field columns gathered
   * into `scratch` (its `fields` object, reused), the times a view into the ring when the rows do not
   * wrap, else copies into `scratch`. Valid until the next `push` or the next use of `scratch`.
   */
  columns(from: number, to: number, scratch: ColumnScratch): SampleColumns {
    const length = Math.max(0, to - from);
    const start = this.#physical(from);
    const fields = scratch.fields;
    for (let c = 0; c < COLUMN_COUNT; c++) {
      const width = this.#widths[c];
      const slot = this.#slots[c] as number;
      fields[COLUMN_FIELDS[c] as ColumnField] =
        width === 0
          ? scratch.absent(length)
          : width === 8
            ? scratch.gather(c, this.#rows64, this.#n64, slot, start, length, this.#capacity)
            : scratch.gather(c, this.#rows32, this.#n32, slot, start, length, this.#capacity);
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
    const rows32 = this.#moveRecords(this.#rows32, new Float32Array(capacity * this.#n32), this.#n32);
    const rows64 = this.#moveRecords(this.#rows64, new Float64Array(capacity * this.#n64), this.#n64);
    release(this.#rows32);
    release(this.#rows64);
    this.#rows32 = rows32;
    this.#rows64 = rows64;
    this.#processStart = move(this.#processStart, new Float64Array(capacity));
    this.#processCount = move(this.#processCount, new Int8Array(capacity));
    this.#capacity = capacity;
    this.#head = 0;
  }

  /**
   * Copies the records of the live rows into `fresh`, oldest first from index 0 (the layout after a
   * growth: `head` 0).
   */
  #moveRecords<T extends Float32Array | Float64Array>(old: T, fresh: T, n: number): T {
    if (n === 0) return fresh;
    for (let row = 0; row < this.#length; row++) {
      const from = this.#physical(row) * n;
      fresh.set(old.subarray(from, from + n), row * n);
    }
    return fresh;
  }

  /**
   * Gives every column the storage the row `checked` (its checked values, at physical row `at`, not
   * yet counted in `length`) needs (see the note on `CHECKED`): a column's first present value makes
   * it 32-bit when exact there, else 64-bit; a value not exact in 32 bits moves a 32-bit column to
   * 64-bit. Lays the records out anew at the same physical rows, the live rows' values copied
   * exactly (absent in a new column), then writes row `at`.
   */
  #relayout(checked: Float64Array, at: number): void {
    const widths = Uint8Array.from(this.#widths);
    for (let c = 0; c < COLUMN_COUNT; c++) {
      const value = checked[c] as number;
      if (isAbsent(value) || widths[c] === 8) continue;
      if (Math.fround(value) !== value) widths[c] = 8;
      else if (widths[c] === 0) widths[c] = 4;
    }
    const slots = new Int16Array(COLUMN_COUNT).fill(-1);
    let n32 = 0;
    let n64 = 0;
    for (let c = 0; c < COLUMN_COUNT; c++) {
      if (widths[c] === 4) slots[c] = n32++;
      else if (widths[c] === 8) slots[c] = n64++;
    }
    const capacity = this.#capacity;
    const rows32 = new Float32Array(capacity * n32).fill(Number.NaN);
    const rows64 = new Float64Array(capacity * n64).fill(Number.NaN);
    for (let row = 0; row < this.#length; row++) {
      const p = this.#physical(row);
      for (let c = 0; c < COLUMN_COUNT; c++) {
        const old = this.#widths[c];
        if (old === 0) continue;
        const value =
          old === 4
            ? (this.#rows32[p * this.#n32 + (this.#slots[c] as number)] as number)
            : (this.#rows64[p * this.#n64 + (this.#slots[c] as number)] as number);
        if (widths[c] === 4) rows32[p * n32 + (slots[c] as number)] = value;
        else rows64[p * n64 + (slots[c] as number)] = value;
      }
    }
    for (let c = 0; c < COLUMN_COUNT; c++) {
      if (widths[c] === 4) rows32[at * n32 + (slots[c] as number)] = checked[c] as number;
      else if (widths[c] === 8) rows64[at * n64 + (slots[c] as number)] = checked[c] as number;
    }
    this.#widths.set(widths);
    this.#slots.set(slots);
    this.#n32 = n32;
    this.#n64 = n64;
    release(this.#rows32);
    release(this.#rows64);
    this.#rows32 = rows32;
    this.#rows64 = rows64;
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
  /**
   * The `fields` of the columns last made with this scratch, one object reused: made with every
   * column's key at once (a fast-properties object, where 37 keys added one by one make a dictionary
   * in V8), so a window's rules read their columns as plain property loads.
   */
  readonly fields = Object.fromEntries(COLUMN_FIELDS.map((field) => [field, NO_VALUES])) as Record<
    ColumnField,
    Float64Array
  >;
  #arrays: Float64Array[] = [];
  #absent = new Float64Array(0);

  /** A view of `count` `NaN`s: the values of a column that has held nothing but absent values. */
  absent(count: number): Float64Array {
    if (this.#absent.length < count)
      this.#absent = new Float64Array(Math.max(count, this.#absent.length * 2)).fill(Number.NaN);
    return this.#absent.subarray(0, count);
  }

  /**
   * Gathers one column of `count` rows out of row records into scratch slot `slot` (grown by
   * doubling when short): the value at `offset` of each record of `stride` values, starting at
   * physical row `start` and wrapping at row `capacity`.
   *
   * @returns a view of the slot's first `count` values
   */
  gather(
    slot: number,
    records: Float32Array | Float64Array,
    stride: number,
    offset: number,
    start: number,
    count: number,
    capacity: number,
  ): Float64Array {
    let target = this.#arrays[slot];
    if (target === undefined || target.length < count) {
      target = new Float64Array(Math.max(count, (target?.length ?? 0) * 2));
      this.#arrays[slot] = target;
    }
    let p = start;
    for (let k = 0; k < count; k++) {
      target[k] = records[p * stride + offset] as number;
      p = p + 1 === capacity ? 0 : p + 1;
    }
    return target.subarray(0, count);
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

/**
 * Frees the memory of a typed array the ring no longer uses now: `ArrayBuffer.prototype.transfer(0)`
 * detaches its buffer and releases the memory behind it (Node.js ≥ 22; measured: 100 MiB of arrays
 * back to the OS at once), where the garbage collector would free it only at its next full
 * collection, the old arrays of a long-lived ring being old-generation objects. A no-op where the
 * runtime lacks `transfer`. Only for arrays no view outlives (the ring's own records).
 */
function release(array: Float32Array | Float64Array): void {
  (array.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer }).transfer?.(0);
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
