import { teamDimensionValue } from '../batch-metrics';
import { METRIC_DIMENSIONS, METRIC_NAMES, type MetricName } from '../cloudwatch-metrics';
import { SECONDS_PER_HOUR } from '../constants';
import type { Thresholds } from '../rules/thresholds';
import type { FleetInput } from './fleet-input';
import type { FleetFinding } from './fleet-rule';

/** A CloudWatch unit the fleet metrics use. */
export type FleetMetricUnit = 'Count' | 'Percent' | 'None';

/** One fleet metric value, as `PutMetricData` takes it (the adapter adds namespace and timestamp). */
export interface FleetMetricDatum {
  readonly name: MetricName;
  readonly unit: FleetMetricUnit;
  readonly value: number;
  /** Dimension name → value; absent for the fleet-wide series. */
  readonly dimensions?: Readonly<Record<string, string>>;
}

/**
 * The fleet evaluator's CloudWatch metrics (names from `cloudwatch-metrics.ts`): `SilentAgents` and
 * `UnmonitoredUsdPerHour` (sum of the silent instances' on-demand prices; unpriced ones add 0),
 * `Stragglers`, and over the waste span `FleetWasteRate` (wasted / cost × 100) and
 * `FleetWastedUsdPerHour` fleet-wide and per `Team` of each team on the deployment's list
 * (`METRICS_TEAMS`; a team without cost has no waste rate: absent, not 0). Every evaluation
 * publishes the counts, 0 included, so an alarm sees a series without gaps. Teams are named exactly
 * as ingest names them ({@link teamDimensionValue}); the rest of the spend (`other`, `untagged`)
 * has no series of its own here: the dashboard and alarms read the fleet-wide ones, and each
 * series is billed by the month (ingest's `WastedUsd` by Team covers every team value).
 *
 * @param input - what the rules judged
 * @param findings - what they found
 * @param thresholds - for the waste span
 * @param metricTeams - the deployment's teams with their own `Team` value. @default none (all `other`/`untagged`)
 * @returns the data, fleet-wide series first, then per listed team by name
 */
export function fleetMetrics(
  input: FleetInput,
  findings: readonly FleetFinding[],
  thresholds: Thresholds,
  metricTeams: ReadonlySet<string> = new Set(),
): FleetMetricDatum[] {
  const silent = findings.filter((f) => f.finding.rule === 'agent_silent');
  const unmonitored = silent.reduce((sum, f) => {
    const usd = f.finding.evidence.unmonitored_usd_per_hour;
    return sum + (typeof usd === 'number' ? usd : 0);
  }, 0);
  const stragglers = findings.filter((f) => f.finding.rule === 'straggler').length;
  const hours = thresholds.fleetWasteSpanS / SECONDS_PER_HOUR;
  const waste = (cost: number, wasted: number, dimensions?: Record<string, string>): FleetMetricDatum[] => [
    ...(cost > 0
      ? [
          {
            name: METRIC_NAMES.fleetWasteRate,
            unit: 'Percent' as const,
            value: (100 * wasted) / cost,
            ...(dimensions ? { dimensions } : {}),
          },
        ]
      : []),
    {
      name: METRIC_NAMES.fleetWastedUsdPerHour,
      unit: 'None',
      value: wasted / hours,
      ...(dimensions ? { dimensions } : {}),
    },
  ];
  const cost = input.teams.reduce((s, r) => s + r.cost_usd, 0);
  const wasted = input.teams.reduce((s, r) => s + r.wasted_usd, 0);
  const byTeam = new Map<string, { cost_usd: number; wasted_usd: number }>();
  for (const r of input.teams) {
    const team = teamDimensionValue(r.group, metricTeams);
    const sum = byTeam.get(team) ?? { cost_usd: 0, wasted_usd: 0 };
    sum.cost_usd += r.cost_usd;
    sum.wasted_usd += r.wasted_usd;
    byTeam.set(team, sum);
  }
  const teams = [...byTeam].filter(([team]) => metricTeams.has(team)).sort(([a], [b]) => (a < b ? -1 : 1));
  return [
    { name: METRIC_NAMES.silentAgents, unit: 'Count', value: silent.length },
    { name: METRIC_NAMES.unmonitoredUsdPerHour, unit: 'None', value: unmonitored },
    { name: METRIC_NAMES.stragglers, unit: 'Count', value: stragglers },
    ...waste(cost, wasted),
    ...teams.flatMap(([team, r]) => waste(r.cost_usd, r.wasted_usd, { [METRIC_DIMENSIONS.team]: team })),
  ];
}
