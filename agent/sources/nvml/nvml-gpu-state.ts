import type { GpuIdentity } from '../../../lambdas/contract';
import type { GpuRow } from '../../window/gpu-row';
import type { NvmlFieldValueRequest } from './field-values';
import type { MigCheck } from './nvml-mig-layout';
import type { NvmlMigState } from './nvml-mig-reader';
import type { NvmlTemperatureThresholds } from './nvml-types';

/** Per-GPU GPM state: two samples used alternately. */
export interface GpmState {
  /** The two `nvmlGpmSample_t` handles from `nvmlGpmSampleAlloc`, freed at `close()`. */
  readonly samples: [bigint, bigint];
  /** Which of `samples` the next `nvmlGpmSampleGet` fills. */
  next: 0 | 1;
  /** `at_ms` of the last good GPM sample (the other buffer); undefined when there is none. */
  previousAtMs: number | undefined;
}

/** Per-GPU state kept between samples. */
export interface NvmlGpuState {
  readonly index: number;
  /** The NVML handle; undefined when `nvmlDeviceGetHandleByIndex_v2` failed at open. */
  readonly handle: bigint | undefined;
  readonly identity: GpuIdentity;
  /**
   * 1 where the call answered NOT_SUPPORTED: never called again for this GPU. One slot per row of
   * the metric table, then processes, field values and GPM (`NVML_CALL_SLOTS`).
   */
  readonly unsupported: Uint8Array;
  /** True from the first GPU_IS_LOST / RESET_REQUIRED until a call succeeds again. */
  lost: boolean;
  /** Errors already logged, as `call:code`: each is logged once. */
  readonly loggedErrors: Set<string>;
  /** Temperature thresholds read at open. */
  thresholds: NvmlTemperatureThresholds;
  /** The reusable `nvmlDeviceGetFieldValues` request (fields the driver lacks are dropped from it). */
  readonly fields: NvmlFieldValueRequest;
  /** GPM state; undefined where GPM is unsupported or failed at open. */
  gpm: GpmState | undefined;
  /**
   * The GPU instances of a GPU in MIG mode (`nvmlDeviceGetMigMode` current = 1), read one by one
   * (`nvml-mig-reader.ts`); undefined when MIG is off or its instances cannot be read. Found at open
   * and again after a re-partition (see `migCheck`).
   */
  mig: NvmlMigState | undefined;
  /** `nvmlDeviceGetMigMode` current = 1 at the last look (open, then every layout check). */
  migMode: boolean;
  /** False where the driver lacks `nvmlDeviceGetMigMode` or answers NOT_SUPPORTED: MIG is never looked at again. */
  migWatched: boolean;
  /** What the agent last saw of the MIG layout and when it looked (`MIG_RESCAN_INTERVAL_MS`). */
  readonly migCheck: MigCheck;
  /** This GPU's reading, overwritten at every `sample()` (no object per reading). */
  readonly row: GpuRow;
}
