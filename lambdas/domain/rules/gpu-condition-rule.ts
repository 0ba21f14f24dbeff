import type { RuleId } from '../rule-registry';
import type { Severity } from '../types';
import type { HorizonGpu, HorizonInput } from './horizon-input';
import { NOT_JUDGED } from './rule';
import type { Thresholds } from './thresholds';
import { type RuleMessageSpec, windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/** A window rule that tests each GPU's horizon on its own. */
export interface GpuConditionRuleSpec<Id extends RuleId> extends RuleMessageSpec {
  /** The rule id. */
  readonly id: Id;
  /** `efficiency` (the job's owner is told, with the cost) or `health` (the hardware; no cost). */
  readonly kind: WindowRule['kind'];
  /** True when the GPU's horizon has the metrics the condition needs (absent is never zero). */
  readonly judges: (g: HorizonGpu, t: Thresholds) => boolean;
  /** True when the condition holds on the GPU (only asked where `judges` is true). */
  readonly fires: (g: HorizonGpu, t: Thresholds) => boolean;
  /** Severity of the finding from the GPUs that fired; never `critical` for a window rule. */
  readonly severity: (gpus: readonly HorizonGpu[], t: Thresholds) => Exclude<Severity, 'critical'>;
  /** What the GPUs that fired cost, USD/hour (efficiency rules; a health rule states no cost). @default their horizon waste rate */
  readonly usdPerHour?: (gpus: readonly HorizonGpu[], input: HorizonInput) => number;
}

/**
 * Makes a window rule that tests a condition per GPU and gives one finding per instance listing the
 * GPUs where it holds. Judges when at least one GPU has the metrics the condition needs.
 *
 * @param spec - the condition and message parts
 * @returns the rule
 */
export function gpuConditionRule<Id extends RuleId>(spec: GpuConditionRuleSpec<Id>): WindowRule<Id> {
  return {
    id: spec.id,
    reads: 'horizons',
    kind: spec.kind,
    evaluate: (input, ctx) => {
      const t = ctx.thresholds;
      const judged = input.gpus.filter((g) => spec.judges(g, t));
      if (judged.length === 0) return NOT_JUDGED;
      const gpus = judged.filter((g) => spec.fires(g, t));
      if (gpus.length === 0) return { judged: true, findings: [] };
      return {
        judged: true,
        findings: [
          windowFinding(input, {
            rule: spec.id,
            severity: spec.severity(gpus, t),
            gpus,
            what: spec.what(gpus, t),
            remedy: spec.remedy,
            evidence: spec.evidence(gpus, t),
            ...(spec.usdPerHour === undefined ? {} : { wastedUsdPerHour: spec.usdPerHour(gpus, input) }),
            // A health finding has no dollar meaning of its own: no cost in its message.
            costed: spec.kind === 'efficiency',
          }),
        ],
      };
    },
  };
}
