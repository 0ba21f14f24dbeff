import { UNTAGGED_TEAM } from '../cloudwatch-metrics';
import { SECONDS_PER_HOUR, TEAM_TAG } from '../constants';
import { percent } from '../rules/window-finding';
import type { FleetFinding, FleetRule } from './fleet-rule';
import { TEAM_SUBJECT_PREFIX } from './fleet-rule';
import { teamPriceClause, teamPriceEvidence } from './team-price-source';

/**
 * Rule `waste_rate` per team (docs/design.md §6; the ingest `waste_rate` judges one instance's
 * horizon): over the last `fleetWasteSpanS` (3600 s), a team's `wasted_usd / cost_usd` from the waste
 * ledger (docs/design.md §5, summed by the store per `team` tag each window had) is ≥
 * `fleetWasteRateAtLeast` (50 %), and the team spent at least `fleetWasteMinCostUsdPerHour` ($20/h)
 * over the span, so one small GPU does not page. Windows without a team tag are judged as the team
 * `untagged`; unpriced windows cost 0 and so count for nothing. One alert per team
 * (`waste_rate:team:<name>`), warning, to the team and finance; it resolves when the share drops.
 * The dollars are the ledger's stored prices, or, where the deployment has a Cost and Usage Report,
 * each instance's newest billed effective rate; the alert says which (`teamPriceEvidence`).
 */
export const teamWasteRateRule: FleetRule<'waste_rate'> = {
  id: 'waste_rate',
  reads: 'fleet',
  needsInstances: false,
  evaluate: (input, ctx, now) => {
    const t = ctx.thresholds;
    const hours = t.fleetWasteSpanS / SECONDS_PER_HOUR;
    const findings: FleetFinding[] = [];
    for (const row of input.teams) {
      const costPerHour = row.cost_usd / hours;
      if (row.cost_usd <= 0 || costPerHour < t.fleetWasteMinCostUsdPerHour) continue;
      const share = row.wasted_usd / row.cost_usd;
      if (share < t.fleetWasteRateAtLeast) continue;
      const team = row.group ?? UNTAGGED_TEAM;
      const causes = Object.entries(row.wasted_by_diagnosis_usd)
        .sort((a, b) => (b[1] as number) - (a[1] as number))
        .slice(0, 3)
        .map(([d, usd]) => `${d} $${((usd as number) / hours).toFixed(2)}/h`)
        .join(', ');
      findings.push({
        subject: { kind: 'team', team },
        finding: {
          rule: 'waste_rate',
          severity: 'warning',
          action: 'notify',
          instance_id: `${TEAM_SUBJECT_PREFIX}${team}`,
          instance_type: 'fleet',
          at: now.toISOString(),
          summary: `team ${team} wasted ${percent(share)} of $${costPerHour.toFixed(2)}/h of GPUs over the last ${Math.round(t.fleetWasteSpanS / 60)} min${teamPriceClause(row)}`,
          remedy:
            'Most of this team’s GPU spend buys nothing: act on its instances’ efficiency alerts (each names a fix), stop idle instances, right-size to fewer or smaller GPUs. `gpu-sentinel report --by instance` lists the wasters.',
          evidence: {
            [TEAM_TAG]: team,
            waste_share: Number(share.toFixed(3)),
            cost_usd_per_hour: Number(costPerHour.toFixed(2)),
            wasted_usd_per_hour: Number((row.wasted_usd / hours).toFixed(2)),
            gpu_hours: Number(row.gpu_hours.toFixed(2)),
            ...(causes === '' ? {} : { top_causes: causes }),
            ...teamPriceEvidence(row),
            span_s: t.fleetWasteSpanS,
            waste_share_at_least: t.fleetWasteRateAtLeast,
            min_cost_usd_per_hour: t.fleetWasteMinCostUsdPerHour,
          },
        },
      });
    }
    return { judged: true, findings };
  },
};
