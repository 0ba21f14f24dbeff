import type { Rule, RuleVerdict } from '../rules/rule';
import type { Finding } from '../types';
import type { FleetInput, RunningInstance } from './fleet-input';

/**
 * Whom a fleet finding is about: one running instance (`agent_silent`, the cross-node `straggler`),
 * or a team (`waste_rate`).
 */
export type FleetSubject =
  | { readonly kind: 'instance'; readonly instance: RunningInstance }
  | { readonly kind: 'team'; readonly team: string };

/**
 * One condition a fleet rule found. `finding.instance_id` is the instance for an instance subject
 * and `team:<name>` for a team subject, so the alert id (`rule:instance_id[#variant]`) is stable and
 * never the id of an ingest alert (a cross-node straggler carries the variant `job:<job>`).
 */
export interface FleetFinding {
  readonly finding: Finding;
  readonly subject: FleetSubject;
}

/** What a fleet rule said: whether it could judge, and its findings with their subjects. */
export type FleetVerdict = RuleVerdict<FleetFinding>;

/**
 * A fleet rule (docs/design.md §6): pure and deterministic, judges the whole fleet from what EC2 and
 * the store say (no per-batch data). Fleet rules notify; none asks for a remediation.
 *
 * @typeParam Id - the rule id
 */
export interface FleetRule<Id extends string = string> extends Rule<Id, 'fleet', FleetInput, FleetFinding> {
  /** True when the rule needs the running instances: without the list (EC2 unreachable) it does not judge. */
  readonly needsInstances: boolean;
}

/** The prefix of a team subject where an instance id would go: `team:<name>`. */
export const TEAM_SUBJECT_PREFIX = 'team:';
