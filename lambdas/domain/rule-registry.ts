import { agentSilentRule } from './fleet/agent-silent';
import { jobStragglerRule } from './fleet/job-straggler';
import { teamWasteRateRule } from './fleet/team-waste-rate';
import { cpuBoundRule } from './rules/cpu-bound';
import { eccDbeRule } from './rules/ecc-dbe';
import { eccSbeRateRule } from './rules/ecc-sbe-rate';
import { efaDropsRule } from './rules/efa-drops';
import { fakeLoadRule } from './rules/fake-load';
import { gpuLostRule } from './rules/gpu-lost';
import { idleBilledRule } from './rules/idle-billed';
import { inputBoundRule } from './rules/input-bound';
import { lowOccupancyRule } from './rules/low-occupancy';
import { memoryBoundRule } from './rules/memory-bound';
import { memoryPressureRule } from './rules/memory-pressure';
import { nvlinkCrcRateRule } from './rules/nvlink-crc-rate';
import { pcieReplayRateRule } from './rules/pcie-replay-rate';
import { powerSawtoothRule } from './rules/power-sawtooth';
import { powerThrottleRule } from './rules/power-throttle';
import { profilingUnavailableRule } from './rules/profiling-unavailable';
import { rowRemapFailureRule } from './rules/row-remap-failure';
import { spotInterruptionRule } from './rules/spot-interruption';
import { stragglerRule } from './rules/straggler';
import { tensorIdleRule } from './rules/tensor-idle';
import { thermalCriticalRule } from './rules/thermal-critical';
import { thermalThrottleRule } from './rules/thermal-throttle';
import { wasteRateRule } from './rules/waste-rate';
import { xidAppRule, xidFatalRule, xidNoticeRule } from './rules/xid-fatal';

/**
 * Every rule of the pipeline (docs/design.md §6), by what it reads, each list in the order its
 * findings come out. A new rule is one file (`rules/<id>.ts`, or `fleet/` for a fleet rule) and
 * one line here; its id joins {@link RuleId} and {@link RULE_IDS} from this list, and its
 * evaluator runs it. Rule ids are published (SNS attribute `rule`, alert ids) and stored: never
 * rename one.
 */

/** The point rules (events and flush windows, at ingest), in the order their findings come out. */
export const POINT_RULES = Object.freeze([
  gpuLostRule,
  eccDbeRule,
  xidFatalRule,
  xidAppRule,
  xidNoticeRule,
  rowRemapFailureRule,
  thermalCriticalRule,
  spotInterruptionRule,
] as const);

/** The window rules (horizon windows and EFA deltas, at ingest), in the order their findings come out. */
export const WINDOW_RULES = Object.freeze([
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
  powerThrottleRule,
  pcieReplayRateRule,
  nvlinkCrcRateRule,
  eccSbeRateRule,
  efaDropsRule,
  profilingUnavailableRule,
] as const);

/** The fleet rules (running instances and the store, in the scheduled evaluator), in the order their findings come out. */
export const FLEET_RULES = Object.freeze([agentSilentRule, jobStragglerRule, teamWasteRateRule] as const);

/**
 * A rule id: the id of a rule in the lists above. A window rule and a fleet rule may share one
 * (`straggler` within an instance and across a job's nodes; `waste_rate` per instance and per
 * team): one condition, judged where its data is.
 */
export type RuleId = (typeof POINT_RULES | typeof WINDOW_RULES | typeof FLEET_RULES)[number]['id'];

/** Every rule id once: point rules, then window rules, then fleet rules, each in list order. */
export const RULE_IDS: readonly RuleId[] = Object.freeze([
  ...new Set<RuleId>([...POINT_RULES, ...WINDOW_RULES, ...FLEET_RULES].map((r) => r.id)),
]);
