import type { Diagnosis, RuleId } from '../../lambdas/domain';
import type { Scenario } from './scenario';

/**
 * Judging a scenario: what the pipeline raised against what the scenario's label says. Pure.
 */

/** How one rule fared in one scenario. */
export const CELLS = {
  /** Expected and raised. */
  hit: '✓',
  /** Expected, not raised. */
  miss: '✗',
  /** Raised, neither expected nor allowed. */
  false_alarm: '!',
  /** Allowed and raised. */
  tolerated: '~',
  /** Neither expected nor raised. */
  quiet: '·',
} as const;
/** A cell of the matrix, see {@link CELLS}. */
export type Cell = keyof typeof CELLS;

/** What the pipeline did with a scenario's host. */
export interface ScenarioObservation {
  /** Rules of the firing alerts published for the host. */
  readonly fired: ReadonlySet<RuleId>;
  /**
   * Diagnosis of each GPU's latest stored window, by GPU index as text (`3`), a MIG slice by `3/gi7`
   * (absent: no diagnosis stored).
   */
  readonly diagnoses: ReadonlyMap<string, Diagnosis | undefined>;
  /** Rules of the remediation decisions recorded for the host (any action). */
  readonly decided: readonly RuleId[];
  /** Batches the pipeline did not accept. */
  readonly refused: number;
}

/** A scenario's verdict. */
export interface ScenarioVerdict {
  readonly scenario: string;
  /** Every rule that was expected, allowed or raised, with its cell. */
  readonly cells: ReadonlyMap<RuleId, Cell>;
  /** Expected diagnosis, when the scenario names one. */
  readonly diagnosis_expected?: Diagnosis;
  /** Diagnoses the judged GPUs got (distinct, sorted); `none` for a GPU with no stored diagnosis. */
  readonly diagnosis_got: readonly string[];
  /** The observation behind the verdict. */
  readonly observation: ScenarioObservation;
  /** Each way the pipeline got the scenario wrong, in words; empty when judged right. */
  readonly mismatches: readonly string[];
}

/**
 * Judges one scenario from what the pipeline did with it.
 *
 * @param scenario - the labels
 * @param observed - alerts, diagnoses and decisions of its host
 * @returns the cells and every mismatch in words (a missed rule, a false alarm, a wrong or absent
 *   diagnosis, a remediation decision on a rule not in `remediate`, a refused batch)
 */
export function judgeScenario(scenario: Scenario, observed: ScenarioObservation): ScenarioVerdict {
  const expected = new Set(scenario.expect);
  const allowed = new Set(scenario.allow ?? []);
  const cells = new Map<RuleId, Cell>();
  const mismatches: string[] = [];
  for (const rule of new Set<RuleId>([...expected, ...allowed, ...observed.fired])) {
    const fired = observed.fired.has(rule);
    const cell: Cell = expected.has(rule)
      ? fired
        ? 'hit'
        : 'miss'
      : fired
        ? allowed.has(rule)
          ? 'tolerated'
          : 'false_alarm'
        : 'quiet';
    cells.set(rule, cell);
    if (cell === 'miss') mismatches.push(`expected ${rule}, not raised`);
    if (cell === 'false_alarm') mismatches.push(`raised ${rule}, not expected`);
  }
  const gpus = scenario.diagnosis_gpus?.map(String) ?? [...observed.diagnoses.keys()];
  const got = [...new Set(gpus.map((g) => observed.diagnoses.get(g) ?? 'none'))].sort();
  if (scenario.diagnosis !== undefined) {
    if (gpus.length === 0) mismatches.push(`expected diagnosis ${scenario.diagnosis}, no GPU window stored`);
    else if (got.length !== 1 || got[0] !== scenario.diagnosis)
      mismatches.push(`expected diagnosis ${scenario.diagnosis}, got ${got.join(', ')}`);
  }
  const remediable = new Set(scenario.remediate ?? []);
  for (const rule of new Set(observed.decided))
    if (!remediable.has(rule)) mismatches.push(`remediation decided on ${rule}, which must never remediate`);
  if (observed.refused > 0) mismatches.push(`${observed.refused} batches not accepted by the API`);
  return {
    scenario: scenario.name,
    cells,
    ...(scenario.diagnosis !== undefined ? { diagnosis_expected: scenario.diagnosis } : {}),
    diagnosis_got: got,
    observation: observed,
    mismatches,
  };
}
