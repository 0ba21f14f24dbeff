import type { GpuMetrics } from '../../contract';
import type { RuleId } from '../rule-registry';
import { gpuConditionRule } from './gpu-condition-rule';
import type { HorizonGpu } from './horizon-input';
import type { ThresholdName } from './thresholds';
import { perGpu, round3 } from './window-finding';
import type { WindowRule } from './window-rule';

/** A hardware error counter whose growth over the horizon is judged as a rate. */
export interface HealthRateSpec<Id extends RuleId> {
  /** The rule id. */
  readonly id: Id;
  /** The growth metric (last − first over the horizon; absent after a counter reset). */
  readonly delta: 'pcie_replay_delta' | 'nvlink_crc_errors_delta' | 'ecc_sbe_volatile_delta';
  /** The counter itself, shown in the evidence. */
  readonly counter: keyof GpuMetrics;
  /** The threshold, per minute. */
  readonly threshold: ThresholdName;
  readonly what: string;
  readonly remedy: string;
}

/** Growth per minute of a GPU's counter over its horizon. */
function perMinute(g: HorizonGpu, delta: HealthRateSpec<RuleId>['delta']): number {
  return ((g.window.metrics[delta] as number) / g.spanS) * 60;
}

/**
 * Makes a health-rate rule: a hardware error counter growing at ≥ the threshold per minute over the
 * horizon. Growth is the horizon's delta metric (the agent's `monotonicDelta`), so a counter reset is
 * never growth, and an end value alone never fires. Warning, notify only.
 *
 * @param spec - metric, threshold and message
 * @returns the rule
 */
export function healthRateRule<Id extends RuleId>(spec: HealthRateSpec<Id>): WindowRule<Id> {
  return gpuConditionRule({
    id: spec.id,
    kind: 'health',
    judges: (g) => g.window.metrics[spec.delta] !== undefined,
    fires: (g, t) =>
      perMinute(g, spec.delta) >= t[spec.threshold] && (g.window.metrics[spec.delta] as number) > 0,
    severity: () => 'warning',
    what: () => spec.what,
    remedy: spec.remedy,
    evidence: (gpus, t) => ({
      [`${spec.delta}`]: perGpu(gpus, (g) => g.window.metrics[spec.delta], String),
      per_min: perGpu(
        gpus,
        (g) => perMinute(g, spec.delta),
        (v) => String(round3(v)),
      ),
      [spec.counter]: perGpu(gpus, (g) => g.window.metrics[spec.counter] as number | undefined, String),
      per_min_at_least: t[spec.threshold],
    }),
  });
}
