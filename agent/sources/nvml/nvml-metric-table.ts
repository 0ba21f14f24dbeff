import koffi from 'koffi';
import { COLUMN_INDEX as C } from '../../window/gpu-row';
import type { GpuSample } from '../../window/gpu-sample';
import type { NvmlBinding, NvmlOptionalCall } from './binding';
import { NVML_MEMORY_V2_VERSION, nvmlMemory, nvmlMemoryV2 } from './structs';

/** NVML constants of the table. Source: docs/nvml.md §3. */
const NVML_TEMPERATURE_GPU = 0;
const NVML_CLOCK_SM = 1;
const NVML_CLOCK_MEM = 2;
const NVML_MEMORY_ERROR_CORRECTED = 0;
const NVML_MEMORY_ERROR_UNCORRECTED = 1;
const NVML_COUNTER_VOLATILE = 0;
const NVML_COUNTER_AGGREGATE = 1;
/** `nvmlPerfPolicyType_t` NVML_PERF_POLICY_POWER: time held down by the power cap (docs/nvml.md §3). */
const NVML_PERF_POLICY_POWER = 0;
/** 32-bit word of `nvmlViolationTime_t.violationTime` (u64 ns at byte offset 8). */
const VIOLATION_TIME_WORD = 2;
const NS_PER_US = 1000;
const TWO_POW_32 = 4_294_967_296;

/**
 * The out-parameters every row writes into, allocated once per source and reused on every call
 * (koffi passes their memory to NVML without a copy). 64-bit values land in two 32-bit words.
 */
export class NvmlMetricBuffers {
  /** One `unsigned int`. */
  readonly u32 = new Uint32Array(1);
  /** One `unsigned long long`, as low and high words. */
  readonly u64 = new Uint32Array(2);
  /** `nvmlUtilization_t` (`gpu`, `memory`, percent). */
  readonly util = new Uint32Array(2);
  /** `nvmlMemory_v2_t` (or `nvmlMemory_t` on old drivers: see `memoryInfoVersion`). */
  readonly mem = new Uint32Array(koffi.sizeof(nvmlMemoryV2) / 4);
  /** The four `unsigned int` out-parameters of `nvmlDeviceGetRemappedRows`. */
  readonly rows = [new Uint32Array(1), new Uint32Array(1), new Uint32Array(1), new Uint32Array(1)] as const;
  /** `nvmlViolationTime_t` (`referenceTime`, `violationTime`: two u64, 16 bytes). */
  readonly violation = new Uint32Array(4);
  /** Which memory struct the binding fills: 2 = `nvmlMemory_v2_t`, 1 = `nvmlMemory_t`. */
  readonly memoryVersion: 0 | 1 | 2;
  /** 32-bit word offsets of `total` and `used` in {@link mem}, from the asserted koffi layouts. */
  readonly memTotalWord: number;
  readonly memUsedWord: number;

  /** @param memoryVersion - `NvmlBinding.memoryInfoVersion` */
  constructor(memoryVersion: 0 | 1 | 2) {
    this.memoryVersion = memoryVersion;
    const layout = memoryVersion === 1 ? nvmlMemory : nvmlMemoryV2;
    this.memTotalWord = koffi.offsetof(layout, 'total') / 4;
    this.memUsedWord = koffi.offsetof(layout, 'used') / 4;
  }
}

/**
 * One NVML call of the per-second reading: which bound call it is (its symbol and the older
 * fallbacks are the binding's table, `binding.ts`), how it is invoked into the shared buffers,
 * and how its out-parameter becomes sample fields in contract units. Every row answers the same
 * way when the GPU or driver lacks it: NOT_SUPPORTED makes its fields absent for that GPU for good
 * (`notSupported` says what that means on real hardware) and the call is never made again there.
 */
export interface NvmlMetricRow {
  /** Stable name of the row: its unsupported slot in logs (`metric` field). */
  readonly id: string;
  /** The bound call; a library without any of its symbols skips the row. */
  readonly call: NvmlOptionalCall;
  /** The sample fields it fills. */
  readonly fields: readonly (keyof GpuSample)[];
  /**
   * `poll`: read at every poll (instant readings the window averages or takes extremes of);
   * `edge`: read only at a window's edges (`full` polls: the poll that closes a window, whose
   * reading also opens the next one, and a window's first poll after a gap): cumulative counters,
   * whose window delta needs only the two edge readings, and slow-changing state (power limit, ECC,
   * remapped rows, retired pages, PCIe replays), which a flag or the last value reports. An edge
   * row fills only `EDGE_FIELDS` (agent/window/window-edges.ts). At the default 1 s poll and 10 s
   * window each edge row is called once per window instead of 10 times (10 of the table's 17 rows).
   */
  readonly cadence: 'poll' | 'edge';
  /** What NOT_SUPPORTED means for this call on real hardware. */
  readonly notSupported: string;
  /**
   * Calls NVML into `out`.
   * @returns the `nvmlReturn_t`; `NVML_ERROR_FUNCTION_NOT_FOUND` (13) if the binding lacks the call
   */
  readonly invoke: (nvml: NvmlBinding, handle: bigint, out: NvmlMetricBuffers) => number;
  /** After SUCCESS: writes the converted value(s) from `out` into the row's `values` (columns of `COLUMN_INDEX`; flags 1/0). */
  readonly store: (out: NvmlMetricBuffers, v: Float64Array) => void;
}

/** `NVML_ERROR_FUNCTION_NOT_FOUND`: what a row answers when the binding lacks its call. */
const NOT_BOUND = 13;

/** ECC counter row: one `nvmlDeviceGetTotalEccErrors(errorType, counterType)` combination. */
function eccRow(
  id: string,
  field: 'ecc_sbe_volatile' | 'ecc_dbe_volatile' | 'ecc_sbe_aggregate' | 'ecc_dbe_aggregate',
  errorType: number,
  counterType: number,
): NvmlMetricRow {
  const column = C[field];
  return {
    id,
    call: 'totalEccErrors',
    fields: [field],
    cadence: 'edge',
    notSupported: 'ECC is off or the board has no ECC memory (consumer and some inference GPUs)',
    invoke: (nvml, h, out) => nvml.totalEccErrors?.(h, errorType, counterType, out.u64) ?? NOT_BOUND,
    store: (out, v) => {
      v[column] = word64(out.u64, 0);
    },
  };
}

/** Clock row: one `nvmlDeviceGetClockInfo(type)`, MHz. */
function clockRow(id: string, field: 'sm_clock_mhz' | 'mem_clock_mhz', type: number): NvmlMetricRow {
  const column = C[field];
  return {
    id,
    call: 'clockInfo',
    fields: [field],
    cadence: 'poll',
    notSupported: 'the driver does not report this clock domain',
    invoke: (nvml, h, out) => nvml.clockInfo?.(h, type, out.u32) ?? NOT_BOUND,
    store: (out, v) => {
      v[column] = out.u32[0] as number;
    },
  };
}

/**
 * The per-second NVML calls, in call order, one row per call (per argument combination where one
 * symbol gives several metrics). Processes, field values and GPM have their own readers
 * (`nvml-process-reader.ts`, `nvml-field-reader.ts`, `nvml-gpm-reader.ts`): their calls take
 * variable-length buffers. Units are converted here, once: % → 0..1, mW → W; mJ and counters stay
 * raw cumulative values (the window takes deltas).
 */
export const NVML_METRIC_ROWS: readonly NvmlMetricRow[] = [
  {
    id: 'utilization',
    call: 'utilization',
    fields: ['gpu_util', 'mem_copy_util'],
    cadence: 'poll',
    notSupported: 'utilization is not sampled (MIG mode on A100/H100: per-instance only)',
    invoke: (nvml, h, out) => nvml.utilization?.(h, out.util) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.gpu_util] = (out.util[0] ?? 0) / 100;
      v[C.mem_copy_util] = (out.util[1] ?? 0) / 100;
    },
  },
  {
    id: 'memory',
    call: 'memoryInfo',
    fields: ['fb_total_bytes', 'fb_used_bytes'],
    cadence: 'poll',
    notSupported: 'the driver does not report framebuffer usage for this device',
    invoke: (nvml, h, out) => {
      out.mem.fill(0);
      if (out.memoryVersion === 2) out.mem[0] = NVML_MEMORY_V2_VERSION;
      return nvml.memoryInfo?.(h, out.mem) ?? NOT_BOUND;
    },
    store: (out, v) => {
      v[C.fb_total_bytes] = word64(out.mem, out.memTotalWord);
      v[C.fb_used_bytes] = word64(out.mem, out.memUsedWord);
    },
  },
  {
    id: 'temperature',
    call: 'temperature',
    fields: ['gpu_temp_c'],
    cadence: 'poll',
    notSupported: 'no core temperature sensor exposed',
    invoke: (nvml, h, out) => nvml.temperature?.(h, NVML_TEMPERATURE_GPU, out.u32) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.gpu_temp_c] = out.u32[0] as number;
    },
  },
  {
    id: 'power',
    call: 'powerUsage',
    fields: ['power_w'],
    cadence: 'poll',
    notSupported: 'the board reports no power reading',
    invoke: (nvml, h, out) => nvml.powerUsage?.(h, out.u32) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.power_w] = (out.u32[0] ?? 0) / 1000;
    },
  },
  {
    id: 'powerLimit',
    call: 'enforcedPowerLimit',
    fields: ['power_limit_w'],
    cadence: 'edge',
    notSupported: 'power management is not exposed',
    invoke: (nvml, h, out) => nvml.enforcedPowerLimit?.(h, out.u32) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.power_limit_w] = (out.u32[0] ?? 0) / 1000;
    },
  },
  {
    id: 'energy',
    call: 'totalEnergy',
    fields: ['energy_mj_total'],
    cadence: 'edge',
    notSupported: 'no energy counter (before Volta)',
    invoke: (nvml, h, out) => nvml.totalEnergy?.(h, out.u64) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.energy_mj_total] = word64(out.u64, 0);
    },
  },
  clockRow('smClock', 'sm_clock_mhz', NVML_CLOCK_SM),
  clockRow('memClock', 'mem_clock_mhz', NVML_CLOCK_MEM),
  eccRow('eccSbeVolatile', 'ecc_sbe_volatile', NVML_MEMORY_ERROR_CORRECTED, NVML_COUNTER_VOLATILE),
  eccRow('eccDbeVolatile', 'ecc_dbe_volatile', NVML_MEMORY_ERROR_UNCORRECTED, NVML_COUNTER_VOLATILE),
  eccRow('eccSbeAggregate', 'ecc_sbe_aggregate', NVML_MEMORY_ERROR_CORRECTED, NVML_COUNTER_AGGREGATE),
  eccRow('eccDbeAggregate', 'ecc_dbe_aggregate', NVML_MEMORY_ERROR_UNCORRECTED, NVML_COUNTER_AGGREGATE),
  {
    id: 'remappedRows',
    call: 'remappedRows',
    fields: ['remapped_rows_pending', 'remapped_rows_failure'],
    cadence: 'edge',
    notSupported: 'no row remapping (before Ampere: retired pages instead)',
    invoke: (nvml, h, out) => {
      const [corr, unc, pending, failure] = out.rows;
      return nvml.remappedRows?.(h, corr, unc, pending, failure) ?? NOT_BOUND;
    },
    store: (out, v) => {
      v[C.remapped_rows_pending] = out.rows[2][0] !== 0 ? 1 : 0;
      v[C.remapped_rows_failure] = out.rows[3][0] !== 0 ? 1 : 0;
    },
  },
  {
    id: 'clocksEventReasons',
    call: 'clocksEventReasons',
    fields: ['clocks_event_reasons'],
    cadence: 'poll',
    notSupported: 'throttle reasons are not reported',
    invoke: (nvml, h, out) => nvml.clocksEventReasons?.(h, out.u64) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.clocks_event_reasons] = word64(out.u64, 0);
    },
  },
  {
    id: 'powerViolation',
    call: 'violationStatus',
    fields: ['power_violation_us_total'],
    cadence: 'edge',
    notSupported:
      'the driver keeps no power-cap violation time for this GPU (power_throttle_ratio falls back to the clocks-event reasons)',
    invoke: (nvml, h, out) => nvml.violationStatus?.(h, NVML_PERF_POLICY_POWER, out.violation) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.power_violation_us_total] = Math.floor(word64(out.violation, VIOLATION_TIME_WORD) / NS_PER_US);
    },
  },
  {
    id: 'pcieReplay',
    call: 'pcieReplayCounter',
    fields: ['pcie_replay_count'],
    cadence: 'edge',
    notSupported: 'the driver does not expose the PCIe replay counter',
    invoke: (nvml, h, out) => nvml.pcieReplayCounter?.(h, out.u32) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.pcie_replay_count] = out.u32[0] as number;
    },
  },
  {
    id: 'retiredPages',
    call: 'retiredPagesPending',
    fields: ['retired_pages_pending'],
    cadence: 'edge',
    notSupported: 'no page retirement (Ampere and newer remap rows instead)',
    invoke: (nvml, h, out) => nvml.retiredPagesPending?.(h, out.u32) ?? NOT_BOUND,
    store: (out, v) => {
      v[C.retired_pages_pending] = out.u32[0] !== 0 ? 1 : 0;
    },
  },
];

/**
 * The per-GPU unsupported slots: one per row of {@link NVML_METRIC_ROWS} (same index), then the
 * three readers with their own buffers.
 */
export const NVML_CALL_SLOTS = {
  processes: NVML_METRIC_ROWS.length,
  fieldValues: NVML_METRIC_ROWS.length + 1,
  gpm: NVML_METRIC_ROWS.length + 2,
} as const;

/** Name of every unsupported slot, by index (row ids, then `processes`, `fieldValues`, `gpm`). */
export const NVML_CALL_SLOT_NAMES: readonly string[] = [
  ...NVML_METRIC_ROWS.map((row) => row.id),
  ...Object.keys(NVML_CALL_SLOTS),
];

/** Reads the little-endian 64-bit unsigned value at `word` (32-bit word index) as a number (exact below 2^53). */
export function word64(words: Uint32Array, word: number): number {
  return (words[word] ?? 0) + (words[word + 1] ?? 0) * TWO_POW_32;
}
