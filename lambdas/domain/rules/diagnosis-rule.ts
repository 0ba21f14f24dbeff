import type { RuleId } from '../rule-registry';
import type { Diagnosis, Severity } from '../types';
import type { HorizonInput } from './horizon-input';
import { NOT_JUDGED } from './rule';
import { type RuleMessageSpec, windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/** What an efficiency rule that follows one leaf of the diagnosis tree says. */
export interface DiagnosisRuleSpec<Id extends RuleId> extends RuleMessageSpec {
  /** The rule id. */
  readonly id: Id;
  /** The leaf (see `diagnoseHorizon`): the rule fires for the GPUs whose horizon reached it. */
  readonly leaf: Diagnosis;
  /** `warning` or `info`: never `critical` (an efficiency finding is never a page). */
  readonly severity: Exclude<Severity, 'critical'>;
}

/**
 * Makes an efficiency window rule from one leaf of the diagnosis tree, so alerts and the diagnosis
 * stored with every flush window always agree: one finding per instance listing the GPUs at that leaf.
 * Judges when at least one GPU has a judged horizon with a named leaf (not `unknown`).
 *
 * @param spec - id, leaf, severity, message parts
 * @returns the rule
 */
export function diagnosisRule<Id extends RuleId>(spec: DiagnosisRuleSpec<Id>): WindowRule<Id> {
  return {
    id: spec.id,
    reads: 'horizons',
    kind: 'efficiency',
    evaluate: (input: HorizonInput, ctx) => {
      if (!input.gpus.some((g) => g.diagnosis !== 'unknown')) return NOT_JUDGED;
      const gpus = input.gpus.filter((g) => g.diagnosis === spec.leaf);
      if (gpus.length === 0) return { judged: true, findings: [] };
      const t = ctx.thresholds;
      return {
        judged: true,
        findings: [
          windowFinding(input, {
            rule: spec.id,
            severity: spec.severity,
            gpus,
            what: spec.what(gpus, t),
            remedy: spec.remedy,
            evidence: { diagnosis: spec.leaf, ...spec.evidence(gpus, t) },
          }),
        ],
      };
    },
  };
}
