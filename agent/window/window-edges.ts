import { COLUMN_INDEX, GpuRow } from './gpu-row';
import type { ColumnField } from './sample-columns';

/**
 * The columns a source may read only at a window's edges (`AgentSource.sample`'s `full`): cumulative
 * counters, whose window value is a delta or a rate between readings (energy, violation time, ECC,
 * PCIe replays, NVLink bytes and CRC errors, PCIe TX bytes), and slow-changing state that the window
 * reports by its last value or a flag (power limit, remapped rows, retired pages). Every other column
 * is an instant reading the window averages or takes extremes of, and is read at every poll. PCIe RX
 * bytes stay out: `max_pcie_rx_bytes_per_s` is the highest step between consecutive polls.
 */
export const EDGE_FIELDS: readonly ColumnField[] = [
  'pcie_tx_bytes_total',
  'nvlink_tx_bytes_total',
  'nvlink_rx_bytes_total',
  'power_limit_w',
  'energy_mj_total',
  'power_violation_us_total',
  'thermal_violation_us_total',
  'ecc_sbe_volatile',
  'ecc_dbe_volatile',
  'ecc_sbe_aggregate',
  'ecc_dbe_aggregate',
  'retired_pages_pending',
  'remapped_rows_pending',
  'remapped_rows_failure',
  'pcie_replay_count',
  'nvlink_crc_errors',
];

/** {@link EDGE_FIELDS} as column indices of a `GpuRow`. */
export const EDGE_COLUMNS: readonly number[] = EDGE_FIELDS.map((field) => COLUMN_INDEX[field]);

/**
 * The closing edge of the window that just closed, kept as the opening edge of the next one.
 * Windows are contiguous (window N ends where N + 1 starts), so one reading of the edge columns at
 * each window's closing poll serves both: the next window starts its ring with that reading (its
 * time, the edge columns only, every instant column absent) and reads the edges once, at its own
 * closing poll. The deltas then cover the whole window, from one closing poll to the next, and
 * successive windows add up to the counter's growth with nothing left between them.
 *
 * What is kept is exact or nothing: only a reading taken at a window's closing poll with every call
 * answered is kept (the agent loop decides); after a gap (a poll that failed or did not come, an
 * early close, a GPU that did not answer) there is nothing kept for that GPU, and the next window
 * reads its opening edge at its first poll, as each window did before.
 */
export class WindowEdges {
  /** The kept readings, by GPU index: edge columns only. */
  readonly #rows = new Map<number, GpuRow>();
  /** Spare rows, reused so that keeping a reading allocates nothing in steady state. */
  readonly #spare: GpuRow[] = [];

  /** Number of GPUs with a kept reading. */
  get size(): number {
    return this.#rows.size;
  }

  /** Whether a reading of GPU `gpuIndex` is kept. */
  has(gpuIndex: number): boolean {
    return this.#rows.has(gpuIndex);
  }

  /**
   * Keeps the edge columns of `row` (a closing reading) for its GPU, replacing what was kept; the
   * row is copied, the caller may reuse it.
   */
  keep(row: GpuRow): void {
    let kept = this.#rows.get(row.gpuIndex);
    if (kept === undefined) {
      kept = this.#spare.pop() ?? new GpuRow(row.gpuIndex);
      kept.gpuIndex = row.gpuIndex;
      this.#rows.set(row.gpuIndex, kept);
    }
    kept.reset(row.atMs);
    // Indexed: `for…of` allocates per element under Maglev (the agent runs without TurboFan).
    for (let i = 0; i < EDGE_COLUMNS.length; i++) {
      const column = EDGE_COLUMNS[i] as number;
      kept.values[column] = row.values[column] as number;
    }
  }

  /**
   * The kept reading of GPU `gpuIndex`: its time and edge columns, every other column `NaN`, no
   * process list; owned by this object (copy it before the next {@link keep} or {@link clear}).
   * @returns the row, or undefined when none is kept
   */
  opening(gpuIndex: number): GpuRow | undefined {
    return this.#rows.get(gpuIndex);
  }

  /** Forgets every kept reading (a gap: the next window reads its opening edge). */
  clear(): void {
    for (const row of this.#rows.values()) this.#spare.push(row);
    this.#rows.clear();
  }
}
