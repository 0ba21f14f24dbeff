import type { GpuIdentity, GpuWindow } from '../../lambdas/contract';
import { WindowAggregationError } from './errors';
import type { GpuSample } from './gpu-sample';
import { columnsFromSamples } from './sample-columns';
import { windowFromColumns } from './window-from-columns';

export { RATIO_ROUNDING_TOLERANCE } from './sample-columns';

/**
 * Aggregates one GPU's samples of a window into a contract `GpuWindow` (`kind: 'flush'`).
 * Pure: no clock, no I/O. A field present in no sample stays absent; a reading outside the
 * contract's range (a broken sensor, NVML's 0xFFFFFFFF "not available") is left out of the
 * aggregate rather than passed on or clamped (see `FieldCheck`). The samples are copied into
 * columns and every metric is computed by `windowFromColumns`, the same code the horizon uses;
 * its TSDoc lists the method of each statistic (means; extremes; counter rates with wraps;
 * steady memory growth (both halves of the span); OR of bitmasks and flags; thermal throttle share; last value of
 * counters; union of processes).
 *
 * @param samples - the window's samples of this GPU, oldest first (`at_ms` ascending); may be empty
 * @param start - window start (inclusive)
 * @param end - window end; must be after `start`
 * @param gpu - the GPU's identity, copied into the window
 * @returns a `GpuWindow` that passes the contract's `GpuWindowSchema`; `processes` present only
 *   when some sample had the field
 * @throws {WindowAggregationError} when `end` is not after `start`, or a sample belongs to another GPU
 * @example
 * const window = aggregateWindow(buffered[0], windowStart, now, nvml.identity()[0]);
 */
export function aggregateWindow(
  samples: readonly GpuSample[],
  start: Date,
  end: Date,
  gpu: GpuIdentity,
): GpuWindow {
  if (!(end.getTime() > start.getTime())) {
    throw new WindowAggregationError(
      `Expected the window end to be after its start, got start ${isoOrInvalid(start)} and end ${isoOrInvalid(end)}. Pass the flush boundaries in order.`,
    );
  }
  for (const sample of samples) {
    if (sample.gpu_index !== gpu.index) {
      throw new WindowAggregationError(
        `Expected samples of GPU ${gpu.index} only, got one of GPU ${sample.gpu_index}. Group samples by gpu_index before aggregating.`,
      );
    }
  }
  return windowFromColumns('flush', columnsFromSamples(samples), start, end, gpu);
}

function isoOrInvalid(date: Date): string {
  return Number.isNaN(date.getTime()) ? 'Invalid Date' : date.toISOString();
}
