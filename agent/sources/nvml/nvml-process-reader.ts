import koffi from 'koffi';
import { COLUMN_INDEX, type GpuRow } from '../../window/gpu-row';
import type { GpuSample } from '../../window/gpu-sample';
import type { NvmlBinding } from './binding';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { NvmlGpuState } from './nvml-gpu-state';
import { NVML_CALL_SLOTS } from './nvml-metric-table';
import { NVML_RETURN } from './nvml-return';
import { nvmlProcessInfo } from './structs';

/** Most processes kept per GPU sample (the contract's `processes` limit). */
const MAX_PROCESSES = 64;
/** Extra process entries allocated beyond the probed count: the list can grow between the two calls. */
const PROCESS_SLACK = 8;
/** `NVML_VALUE_NOT_AVAILABLE` (0xFFFFFFFFFFFFFFFF) as two 32-bit words. */
const NOT_AVAILABLE_WORD = 0xffff_ffff;
const PROCESS_STRIDE = koffi.sizeof(nvmlProcessInfo);
const PROCESS_MEMORY_OFFSET = koffi.offsetof(nvmlProcessInfo, 'usedGpuMemory');
const TWO_POW_32 = 4_294_967_296;
type GpuProcessReading = NonNullable<GpuSample['processes']>[number];
/** Column of `compute_processes` in a row. */
const COMPUTE_PROCESSES = COLUMN_INDEX.compute_processes;
const NO_PROCESSES: readonly GpuProcessReading[] = Object.freeze([]);

/**
 * The compute processes of a GPU, `nvmlDeviceGetComputeRunningProcesses_v3`: one call into a reused
 * buffer (16 entries, grown as needed), which NVML answers with the count and the list; only when
 * it answers INSUFFICIENT_SIZE (more processes than the buffer holds) is the buffer grown to the
 * count plus {@link PROCESS_SLACK} and the call made again. A probe with count 0 before every read
 * cost a second call per GPU per poll. Kept: pid and GPU memory (absent when NVML answers
 * NOT_AVAILABLE, e.g. without the rights to see another container's process), largest memory
 * first, at most 64.
 */
export class NvmlProcessReader {
  readonly #nvml: NvmlBinding;
  readonly #recorder: NvmlCallRecorder;
  readonly #count = new Uint32Array(1);
  #buffer = Buffer.alloc(PROCESS_STRIDE * 16);

  /** @param nvml - the binding; @param recorder - where return codes are judged */
  constructor(nvml: NvmlBinding, recorder: NvmlCallRecorder) {
    this.#nvml = nvml;
    this.#recorder = recorder;
  }

  /**
   * Reads `compute_processes` and `processes` into the row.
   * @returns false when a call failed (the GPU may be lost)
   */
  read(gpu: NvmlGpuState, handle: bigint, row: GpuRow, at: Date): boolean {
    const fn = this.#nvml.computeProcesses;
    const call = this.#nvml.symbols.computeProcesses ?? '';
    const count = this.#count;
    if (fn === undefined) return false;
    count[0] = this.#buffer.length / PROCESS_STRIDE;
    let code = fn(handle, count, this.#buffer);
    if (code === NVML_RETURN.ERROR_INSUFFICIENT_SIZE) {
      const needed = count[0] ?? 0;
      const capacity = needed + PROCESS_SLACK;
      if (this.#buffer.length < capacity * PROCESS_STRIDE)
        this.#buffer = Buffer.alloc(capacity * 2 * PROCESS_STRIDE);
      count[0] = this.#buffer.length / PROCESS_STRIDE;
      code = fn(handle, count, this.#buffer);
      if (code === NVML_RETURN.ERROR_INSUFFICIENT_SIZE) {
        // Grew past the slack between the two calls: the count is known, the list is not.
        this.#recorder.judge(gpu, NVML_CALL_SLOTS.processes, call, NVML_RETURN.SUCCESS, at);
        row.values[COMPUTE_PROCESSES] = count[0] ?? needed;
        return true;
      }
    }
    // No closure for the two judge calls: one was made at every poll of every GPU.
    if (!this.#recorder.judge(gpu, NVML_CALL_SLOTS.processes, call, code, at)) return false;
    const n = count[0] ?? 0;
    row.values[COMPUTE_PROCESSES] = n;
    if (n === 0) {
      row.processes = NO_PROCESSES;
      return true;
    }
    const buffer = this.#buffer;
    const list: GpuProcessReading[] = [];
    for (let i = 0; i < n; i++) {
      const offset = i * PROCESS_STRIDE;
      const lo = buffer.readUInt32LE(offset + PROCESS_MEMORY_OFFSET);
      const hi = buffer.readUInt32LE(offset + PROCESS_MEMORY_OFFSET + 4);
      const pid = buffer.readUInt32LE(offset);
      list.push(
        lo === NOT_AVAILABLE_WORD && hi === NOT_AVAILABLE_WORD
          ? { pid }
          : { pid, fb_used_bytes: lo + hi * TWO_POW_32 },
      );
    }
    list.sort((a, b) => (b.fb_used_bytes ?? -1) - (a.fb_used_bytes ?? -1) || a.pid - b.pid);
    row.processes = list.length > MAX_PROCESSES ? list.slice(0, MAX_PROCESSES) : list;
    return true;
  }
}
