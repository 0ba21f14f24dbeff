/**
 * Errors of the NVML source. `NvmlError` is the room's base class; every subclass has a `name`,
 * an optional `cause` and typed data, and a message that says what was expected, what came and
 * what to do.
 */

/** Base class of every NVML source error. */
export class NvmlError extends Error {
  override readonly name: string = 'NvmlError';
}

/** Which step of `NvmlSource.open()` failed: loading the shared library, or `nvmlInit_v2`. */
export type NvmlUnavailableStep = 'load' | 'symbol' | 'init';

/**
 * NVML cannot be used on this machine: the library is missing, lacks a required symbol, or
 * `nvmlInit_v2` failed (no driver, no GPU, version mismatch). The agent catches it and falls back
 * to the replay or simulate source.
 */
export class NvmlUnavailableError extends NvmlError {
  override readonly name = 'NvmlUnavailableError';
  /** The library path or soname that was tried. */
  readonly libraryPath: string;
  /** The step that failed. */
  readonly step: NvmlUnavailableStep;
  /** The `nvmlReturn_t` of `nvmlInit_v2`, when `step` is `init`. */
  readonly code: number | undefined;

  /**
   * @param data - the library path, the step that failed and, for `init`, the NVML return code
   * @param message - what was expected, what came and what to do
   * @param options - `cause`: the koffi or NVML failure underneath
   */
  constructor(
    data: { libraryPath: string; step: NvmlUnavailableStep; code?: number },
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.libraryPath = data.libraryPath;
    this.step = data.step;
    this.code = data.code;
  }
}

/**
 * A struct declared for koffi does not have the size or field offset of NVML's C header on
 * x86-64 (docs/nvml.md §4). Calling NVML with it would corrupt memory, so the source refuses
 * to start. This is a bug in gpu-sentinel or an unsupported platform, never a host fault.
 */
export class NvmlAbiError extends NvmlError {
  override readonly name = 'NvmlAbiError';
  /** The struct, e.g. `nvmlMemory_v2_t`. */
  readonly struct: string;
  /** The field whose offset differs, or `(size)` for the struct size. */
  readonly field: string;
  /** Bytes the reference expects. */
  readonly expectedBytes: number;
  /** Bytes koffi computed. */
  readonly actualBytes: number;

  /**
   * @param data - struct, field (`(size)` for the size), expected and actual bytes
   */
  constructor(data: { struct: string; field: string; expectedBytes: number; actualBytes: number }) {
    const what = data.field === '(size)' ? 'sizeof' : `offsetof .${data.field}`;
    super(
      `Expected ${what} ${data.struct} to be ${data.expectedBytes} bytes (NVML header, x86-64), got ${data.actualBytes}. ` +
        'The NVML binding does not match this platform; do not run the NVML source here and report this as a bug.',
    );
    this.struct = data.struct;
    this.field = data.field;
    this.expectedBytes = data.expectedBytes;
    this.actualBytes = data.actualBytes;
  }
}

/**
 * One NVML call answered an error that is neither NOT_SUPPORTED nor a lost GPU. Returned as a
 * value from `NvmlSource.sample()` (never thrown there) and counted in `stats.nvml_errors`; the
 * metric it would have given is absent from that sample.
 */
export class NvmlCallError extends NvmlError {
  override readonly name = 'NvmlCallError';
  /** The NVML symbol that failed, e.g. `nvmlDeviceGetPowerUsage`. */
  readonly call: string;
  /** The GPU index the call was for; absent for system calls. */
  readonly gpuIndex: number | undefined;
  /** The `nvmlReturn_t` it answered (e.g. 999 UNKNOWN). */
  readonly code: number;
  /** `nvmlErrorString(code)`. */
  readonly nvmlMessage: string;

  /**
   * @param data - the call, the GPU index (absent for system calls), the return code and its `nvmlErrorString`
   */
  constructor(data: { call: string; gpuIndex?: number; code: number; nvmlMessage: string }) {
    const where = data.gpuIndex === undefined ? '' : ` on GPU ${data.gpuIndex}`;
    super(
      `Expected ${data.call}${where} to return NVML_SUCCESS, got ${data.code} (${data.nvmlMessage}). ` +
        'The metric is absent from this sample; if it persists, check `nvidia-smi -q` and the kernel log (dmesg) on this host.',
    );
    this.call = data.call;
    this.gpuIndex = data.gpuIndex;
    this.code = data.code;
    this.nvmlMessage = data.nvmlMessage;
  }
}

/** `sample()`, `identity()` or `versions()` was called after `close()`: a bug in the caller. */
export class NvmlClosedError extends NvmlError {
  override readonly name = 'NvmlClosedError';

  /** @param method - the method that was called after `close()` */
  constructor(method: string) {
    super(
      `Expected an open NvmlSource when calling ${method}(), got a closed one. Open a new source with NvmlSource.open().`,
    );
  }
}
