import type { Batch } from '../../contract';
import type { Finding } from '../types';
import { describeGpu, flushWindows, groupByGpu, resolveGpuRef } from './gpu-ref';
import type { PointRule } from './point-rule';
import type { RuleContext } from './rule-context';

/**
 * Rule `thermal_critical` (docs/design.md §6): a flush window's `max_gpu_temp_c` at or above
 * `thresholds.thermalCriticalTempC` (default 90 °C). Critical, action `notify` (cooling is AWS's side;
 * a human decides).
 *
 * @param batch - a validated batch; reads flush windows
 * @param ctx - `thresholds.thermalCriticalTempC`, °C
 * @returns one finding per GPU, ordered by GPU; `at` = end of the first window at or over the threshold;
 *   evidence `max_gpu_temp_c` (the hottest), `threshold_c`, `windows` over it
 */
function thermalCriticalFindings(batch: Batch, ctx: RuleContext): Finding[] {
  const limit = ctx.thresholds.thermalCriticalTempC;
  const hot = flushWindows(batch).filter(
    (w) => (w.metrics.max_gpu_temp_c ?? Number.NEGATIVE_INFINITY) >= limit,
  );
  return groupByGpu(hot, (w) => resolveGpuRef(batch, w.gpu.index, w.gpu.pci_bus_id)).map(({ ref, items }) => {
    const sorted = [...items].sort((a, b) => Date.parse(a.end) - Date.parse(b.end));
    const max = Math.max(...sorted.map((w) => w.metrics.max_gpu_temp_c as number));
    return {
      rule: 'thermal_critical',
      severity: 'critical',
      action: 'notify',
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      ...ref,
      at: (sorted[0] as (typeof sorted)[number]).end,
      summary: `${describeGpu(ref)} reached ${max} C (critical at ${limit} C)`,
      remedy:
        'The GPU is at its thermal limit and will throttle or shut down: checkpoint the job; if it persists, stop the instance and open an AWS support case.',
      evidence: { max_gpu_temp_c: max, threshold_c: limit, windows: sorted.length },
    } satisfies Finding;
  });
}

/** Rule `thermal_critical` as the registry runs it: always judges; its findings are {@link thermalCriticalFindings}'s. */
export const thermalCriticalRule: PointRule<'thermal_critical'> = {
  id: 'thermal_critical',
  reads: 'batch',
  evaluate: (batch, ctx) => ({ judged: true, findings: thermalCriticalFindings(batch, ctx) }),
};
