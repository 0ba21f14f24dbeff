import { TELEMETRY_TABLE_COLUMNS, type TelemetryTable } from './store-columns';

/**
 * Short JSON keys of the rows the Athena store sends to Firehose, so that each row bills fewer
 * bytes: Firehose bills ingestion and the JSON → Parquet conversion per GB of input (5 KB steps per
 * record), and the column names were half of a `gpu_windows` row (1,203 of 2,349 bytes with every
 * metric present). The Parquet columns keep their names: each delivery stream's OpenX JSON SerDe
 * maps column → key with `ColumnToJsonKeyMappings` (Firehose API reference, `OpenXJsonSerDe`:
 * "Maps column names to JSON keys that aren't identical to the column names"), built from this
 * table by {@link firehoseJsonKeyMappings}; the stack and the adapters read the same table.
 *
 * The keys are fixed, never derived from a column's position: a key read under another column's
 * name by a stream configured before a deploy would put values in the wrong column. A column not
 * in this table (a column added later) is written under its own name and needs no mapping, so
 * adding a column never changes another's key. Keys are lowercase (the SerDe lowercases JSON keys
 * by default) and never a column name: a letter, or a letter and a digit.
 */
export const FIREHOSE_JSON_KEYS: {
  readonly [T in TelemetryTable]: Readonly<Record<string, string>>;
} = {
  gpu_windows: {
    time: 'a',
    start: 'b',
    instance_id: 'c',
    instance_type: 'd',
    region: 'e',
    az: 'f',
    gpu_index: 'g',
    gpu_uuid: 'h',
    gpu_name: 'i',
    gpu_instance_id: 'j',
    gpu_instance_profile: 'k',
    gpu_instance_slot: 'l',
    team: 'm',
    job: 'n',
    namespace: 'o',
    pod: 'p',
    container: 'q',
    batch_id: 'r',
    seq: 's',
    gpu_util: 't',
    mem_copy_util: 'u',
    sm_active: 'v',
    min_sm_active: 'w',
    max_sm_active: 'x',
    sm_active_cv: 'y',
    sm_occupancy: 'z',
    tensor_active: 'a0',
    dram_active: 'a1',
    fp16_active: 'a2',
    fp32_active: 'a3',
    fp64_active: 'a4',
    pcie_tx_bytes_per_s: 'a5',
    pcie_rx_bytes_per_s: 'a6',
    max_pcie_rx_bytes_per_s: 'a7',
    nvlink_tx_bytes_per_s: 'a8',
    nvlink_rx_bytes_per_s: 'a9',
    fb_used_bytes: 'b0',
    fb_used_growth_bytes_per_s: 'b1',
    fb_total_bytes: 'b2',
    gpu_temp_c: 'b3',
    max_gpu_temp_c: 'b4',
    mem_temp_c: 'b5',
    power_w: 'b6',
    max_power_w: 'b7',
    min_power_w: 'b8',
    power_cv: 'b9',
    power_limit_w: 'c0',
    energy_j: 'c1',
    sm_clock_mhz: 'c2',
    mem_clock_mhz: 'c3',
    clocks_event_reasons: 'c4',
    thermal_throttle_ratio: 'c5',
    ecc_sbe_volatile: 'c6',
    ecc_sbe_volatile_delta: 'c7',
    ecc_dbe_volatile: 'c8',
    ecc_sbe_aggregate: 'c9',
    ecc_dbe_aggregate: 'd0',
    retired_pages_pending: 'd1',
    remapped_rows_pending: 'd2',
    remapped_rows_failure: 'd3',
    pcie_replay_count: 'd4',
    pcie_replay_delta: 'd5',
    nvlink_crc_errors: 'd6',
    nvlink_crc_errors_delta: 'd7',
    compute_processes: 'd8',
    window_s: 'd9',
    gpu_hours: 'e0',
    price_usd_per_hour: 'e1',
    price_source: 'e2',
    gpu_count: 'e3',
    cost_usd: 'e4',
    efficiency: 'e5',
    efficiency_source: 'e6',
    processes_known: 'e7',
    waste_class: 'e8',
    idle_usd: 'e9',
    held_idle_usd: 'f0',
    underused_usd: 'f1',
    broken_usd: 'f2',
    wasted_usd: 'f3',
    diagnosis: 'f4',
  },
  efa_windows: {
    time: 'a',
    start: 'b',
    instance_id: 'c',
    instance_type: 'd',
    device: 'e',
    port: 'f',
    seq: 'g',
    deltas: 'h',
  },
  events: {
    time: 'a',
    instance_id: 'b',
    instance_type: 'c',
    gpu_index: 'd',
    gpu_slot: 'e',
    pci_bus_id: 'f',
    kind: 'g',
    xid: 'h',
    source: 'i',
    pid: 'j',
    process_name: 'k',
    detail: 'l',
    batch_id: 'm',
    seq: 'n',
  },
};

/**
 * The JSON key of `column` in `table`'s Firehose rows.
 *
 * @param table - a telemetry table
 * @param column - one of its columns (`TELEMETRY_TABLE_COLUMNS`)
 * @returns its short key, or the column's own name when the table has none for it
 */
export function firehoseJsonKey(table: TelemetryTable, column: string): string {
  return FIREHOSE_JSON_KEYS[table][column] ?? column;
}

/**
 * `ColumnToJsonKeyMappings` of `table`'s delivery stream: column → JSON key of every column whose
 * key is not its name, in column order.
 *
 * @param table - a telemetry table
 * @returns the map (every column of the table that has a short key)
 */
export function firehoseJsonKeyMappings(table: TelemetryTable): Record<string, string> {
  const mappings: Record<string, string> = {};
  for (const [column] of TELEMETRY_TABLE_COLUMNS[table]) {
    const key = firehoseJsonKey(table, column);
    if (key !== column) mappings[column] = key;
  }
  return mappings;
}
