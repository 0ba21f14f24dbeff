import type { Finding, RuleId } from '../types';
import { cpuBoundRule } from './cpu-bound';
import { eccSbeRateRule } from './ecc-sbe-rate';
import { efaDropsRule } from './efa-drops';
import { fakeLoadRule } from './fake-load';
import type { HorizonInput } from './horizon-input';
import { idleBilledRule } from './idle-billed';
import { inputBoundRule } from './input-bound';
import { lowOccupancyRule } from './low-occupancy';
import { memoryBoundRule } from './memory-bound';
import { memoryPressureRule } from './memory-pressure';
import { nvlinkCrcRateRule } from './nvlink-crc-rate';
import { pcieReplayRateRule } from './pcie-replay-rate';
import { powerSawtoothRule } from './power-sawtooth';
import { profilingUnavailableRule } from './profiling-unavailable';
import type { RuleContext } from './rule-context';
import { stragglerRule } from './straggler';
import { tensorIdleRule } from './tensor-idle';
import { thermalThrottleRule } from './thermal-throttle';
import { wasteRateRule } from './waste-rate';
import type { WindowRule } from './window-rule';

/** The window rules (docs/design.md §6, issue 6), in the order their findings come out. */
export const WINDOW_RULES: readonly WindowRule[] = Object.freeze([
  fakeLoadRule,
  inputBoundRule,
  cpuBoundRule,
  lowOccupancyRule,
  tensorIdleRule,
  memoryBoundRule,
  powerSawtoothRule,
  idleBilledRule,
  wasteRateRule,
  stragglerRule,
  memoryPressureRule,
  thermalThrottleRule,
  pcieReplayRateRule,
  nvlinkCrcRateRule,
  eccSbeRateRule,
  efaDropsRule,
  profilingUnavailableRule,
]);

/** Ids of the window rules whose alerts resolve (see `WindowRule.resolves`). */
export const RESOLVING_WINDOW_RULES: ReadonlySet<RuleId> = new Set(
  WINDOW_RULES.filter((r) => r.resolves !== false).map((r) => r.id),
);

/** What the window rules said about one batch. */
export interface WindowRulesResult {
  /** Every finding, in {@link WINDOW_RULES} order; at most one per rule (alert id `rule:instance_id`). */
  readonly findings: readonly Finding[];
  /** The rules that could judge this batch: a firing alert of such a rule with no finding now is resolved. */
  readonly judged: ReadonlySet<RuleId>;
}

/**
 * Runs every window rule over one batch's judged horizons (docs/design.md §6). Pure and deterministic.
 *
 * @param input - see `judgedHorizons` and `nextIdleSince`
 * @param ctx - thresholds
 * @param now - the server's clock (`idle_billed` measures idle time against it)
 * @returns findings and the set of rules that judged
 * @example
 * const { findings, judged } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, now);
 */
export function evaluateWindowRules(input: HorizonInput, ctx: RuleContext, now: Date): WindowRulesResult {
  const findings: Finding[] = [];
  const judged = new Set<RuleId>();
  for (const rule of WINDOW_RULES) {
    const verdict = rule.judge(input, ctx, now);
    if (verdict.judged) judged.add(rule.id);
    findings.push(...verdict.findings);
  }
  return { findings, judged };
}
