import koffi from 'koffi';
import type { NvmlBinding } from './binding';
import { nvmlDeviceAttributes } from './mig-structs';
import type { NvmlCallRecorder } from './nvml-call-recorder';
import type { NvmlGpuState } from './nvml-gpu-state';
import { NVML_RETURN } from './nvml-return';

/**
 * How often the agent looks again at a GPU's MIG mode and GPU instances, ms of poll time (30 s).
 * A look costs one `nvmlDeviceGetMigMode` per GPU whose driver answers it and, on a GPU in MIG mode,
 * `nvmlDeviceGetMaxMigDeviceCount` plus, per MIG device index (7 on an A100/H100),
 * `nvmlDeviceGetMigDeviceHandleByIndex`, `nvmlDeviceGetGpuInstanceId` and `nvmlDeviceGetAttributes_v2`:
 * at most 2 + 3 × 7 = 23 calls of a few µs each (docs/nvml.md §8), against the ≈ 30 calls a poll
 * makes per GPU every second. 30 s keeps that under 0.1 % of the calls, and a re-partition that
 * keeps the old handles answering (nvml.h: handles may be reused) shows within 30 s; one whose old
 * handles fail is seen at the poll that fails ({@link MIG_FORCED_RESCAN_GAP_MS}).
 */
export const MIG_RESCAN_INTERVAL_MS = 30_000;

/**
 * Least time between two looks forced by a failing call on a MIG device, ms (10 s): the first
 * failure after a re-partition is looked at once; a call that keeps failing on an unchanged layout
 * costs one look per 10 s, not one per poll.
 */
export const MIG_FORCED_RESCAN_GAP_MS = 10_000;

/** MIG device indexes read per GPU at most (`nvmlDeviceGetMaxMigDeviceCount` is 7 on A100/H100/H200). */
const MAX_MIG_DEVICES = 64;
const SLICE_COUNT_OFFSET = koffi.offsetof(nvmlDeviceAttributes, 'gpuInstanceSliceCount');
const MEMORY_MIB_OFFSET = koffi.offsetof(nvmlDeviceAttributes, 'memorySizeMB');

/** What the agent last saw of a GPU's MIG layout, and when it looked (`NvmlGpuState.migCheck`). */
export interface MigCheck {
  /**
   * The layout as last scanned ({@link MigLayoutScanner.layout}: count, then id, slice count and
   * memory MiB per GPU instance in MIG device index order; count -1 when it could not be read);
   * undefined while MIG mode is off.
   */
  layout: Float64Array | undefined;
  /** Poll time of the last look (or of the first poll), ms; undefined before the first poll. */
  checkedAtMs: number | undefined;
  /** Poll time of the last look forced by a failing call, ms; undefined before the first. */
  forcedAtMs: number | undefined;
}

/**
 * Reads a GPU's MIG mode and the (GPU instance id, profile) set of its MIG devices into buffers it
 * owns, so a look that finds nothing changed allocates nothing. Calls on the parent's handle are
 * judged by the recorder as any device call (a lost GPU is lost there); a call on a MIG device
 * handle that fails is never a lost GPU: the layout is in flux, and the look says "unreadable".
 */
export class MigLayoutScanner {
  /** `[n, id₀, slices₀, MiB₀, id₁, …]` of the last {@link scan}; n = -1 when it failed. */
  readonly layout = new Float64Array(1 + 3 * MAX_MIG_DEVICES);
  /** The first MIG device handle of each GPU instance of the last {@link scan}, same order. */
  readonly handles = new BigUint64Array(MAX_MIG_DEVICES);
  /** Why the last {@link scan} failed, for the log line. */
  failure = '';
  readonly #nvml: NvmlBinding;
  readonly #recorder: NvmlCallRecorder;
  readonly #u32 = new Uint32Array(1);
  readonly #pending = new Uint32Array(1);
  readonly #handleOut = new BigUint64Array(1);
  readonly #attributes = Buffer.alloc(koffi.sizeof(nvmlDeviceAttributes));

  /** @param nvml - the binding; @param recorder - judges the parent's codes */
  constructor(nvml: NvmlBinding, recorder: NvmlCallRecorder) {
    this.#nvml = nvml;
    this.#recorder = recorder;
  }

  /**
   * Reads `nvmlDeviceGetMigMode` (current mode). Sets `gpu.migWatched` false for good where the
   * call is missing or answers NOT_SUPPORTED (a GPU without MIG), so it is not asked again.
   *
   * @returns true in MIG mode, false out of it; undefined when the call failed (nothing known)
   */
  mode(gpu: NvmlGpuState, handle: bigint, at: Date): boolean | undefined {
    const fn = this.#nvml.migMode;
    const call = this.#nvml.symbols.migMode;
    if (fn === undefined || call === undefined) {
      gpu.migWatched = false;
      return false;
    }
    const code = fn(handle, this.#u32, this.#pending);
    if (code === NVML_RETURN.ERROR_NOT_SUPPORTED) {
      gpu.migWatched = false;
      return false;
    }
    if (!this.#recorder.judge(gpu, undefined, call, code, at)) return undefined;
    return this.#u32[0] === 1;
  }

  /**
   * Finds the GPU instances of a GPU in MIG mode: each MIG device index
   * (`nvmlDeviceGetMigDeviceHandleByIndex`, NOT_FOUND skipped), its instance id and attributes; a GPU
   * instance split into several compute instances counts once (its first MIG device stands for it).
   *
   * @returns the number of GPU instances, also in `layout[0]`; -1 (and {@link failure} says why)
   *   when the driver lacks a MIG call or one failed
   */
  scan(gpu: NvmlGpuState, handle: bigint, at: Date): number {
    const { maxMigDeviceCount, migDeviceHandleByIndex, gpuInstanceId, deviceAttributes } = this.#nvml;
    const layout = this.layout;
    if (!maxMigDeviceCount || !migDeviceHandleByIndex || !gpuInstanceId || !deviceAttributes)
      return this.#fail(
        'the driver lacks the MIG device calls (nvmlDeviceGetMigDeviceHandleByIndex and friends)',
      );
    const recorder = this.#recorder;
    const u32 = this.#u32;
    if (!recorder.judge(gpu, undefined, 'nvmlDeviceGetMaxMigDeviceCount', maxMigDeviceCount(handle, u32), at))
      return this.#fail('nvmlDeviceGetMaxMigDeviceCount failed');
    const max = Math.min(u32[0] ?? 0, MAX_MIG_DEVICES);
    let n = 0;
    for (let index = 0; index < max; index++) {
      const code = migDeviceHandleByIndex(handle, index, this.#handleOut);
      if (code === NVML_RETURN.ERROR_NOT_FOUND) continue; // no MIG device at this index
      if (!recorder.judge(gpu, undefined, 'nvmlDeviceGetMigDeviceHandleByIndex', code, at))
        return this.#fail(`nvmlDeviceGetMigDeviceHandleByIndex(${index}) answered ${code}`);
      const mig = this.#handleOut[0] ?? 0n;
      const idCode = gpuInstanceId(mig, u32);
      if (idCode !== NVML_RETURN.SUCCESS) return this.#migFailed(gpu, 'nvmlDeviceGetGpuInstanceId', idCode);
      const id = u32[0] ?? 0;
      let seen = false;
      for (let k = 0; k < n && !seen; k++) seen = layout[1 + 3 * k] === id;
      if (seen) continue;
      const attributesCode = deviceAttributes(mig, this.#attributes);
      if (attributesCode !== NVML_RETURN.SUCCESS)
        return this.#migFailed(gpu, 'nvmlDeviceGetAttributes_v2', attributesCode);
      const a = this.#attributes;
      layout[1 + 3 * n] = id;
      layout[2 + 3 * n] = a.readUInt32LE(SLICE_COUNT_OFFSET);
      layout[3 + 3 * n] = a.readUInt32LE(MEMORY_MIB_OFFSET) + a.readUInt32LE(MEMORY_MIB_OFFSET + 4) * 2 ** 32;
      this.handles[n] = mig;
      n++;
    }
    layout[0] = n;
    return n;
  }

  /** True when the last {@link scan} found what `stored` holds (both failed counts as the same). */
  same(stored: Float64Array | undefined): boolean {
    if (stored === undefined) return false;
    const layout = this.layout;
    const n = layout[0] ?? -1;
    if (stored[0] !== n) return false;
    for (let i = 1; i <= 3 * Math.max(n, 0); i++) if (stored[i] !== layout[i]) return false;
    return true;
  }

  /** A copy of the last {@link scan}'s layout, to keep (made only when the layout changed). */
  copy(): Float64Array {
    const n = Math.max(this.layout[0] ?? -1, 0);
    return this.layout.slice(0, 1 + 3 * n);
  }

  #fail(why: string): -1 {
    this.layout[0] = -1;
    this.failure = why;
    return -1;
  }

  /** A call on a fresh MIG device handle failed: the instance went away meanwhile, never a lost GPU. */
  #migFailed(gpu: NvmlGpuState, call: string, code: number): -1 {
    if (code !== NVML_RETURN.ERROR_NOT_SUPPORTED) this.#recorder.error(gpu, call, code);
    return this.#fail(
      `${call} answered ${code}: ${code === NVML_RETURN.ERROR_NOT_SUPPORTED ? 'the instance profiles are unknown' : 'the instances are changing'}`,
    );
  }
}
