import {
  type Alert,
  type AlertSink,
  type CurPricedFleetReads,
  evaluateFleetRules,
  FLEET_CUR_LOOKBACK_S,
  FLEET_FIRING_SCOPE,
  FLEET_LAST_SEEN_LOOKBACK_S,
  FleetListingError,
  type FleetMetricSink,
  type FleetTeamRow,
  fleetFiringRecord,
  fleetMetrics,
  fleetResolvedAlert,
  type Log,
  MS_PER_SECOND,
  type RuleContext,
  type RuleId,
  type RunningInstance,
  type RunningInstances,
  type StateStore,
  StoreQueryError,
  StoreUnavailableError,
  stragglerCandidates,
  type TelemetryStore,
  toFleetAlert,
} from '../domain';
import { type AlertTally, publishOnce, publishResolve } from './alert-lifecycle';
import { UnpublishedAlertsError } from './errors';

/** Everything `evaluateFleet` needs from the outside, injected. */
export interface FleetEvaluatorDeps {
  /** Where the windows, last-seen times and team waste are read. */
  readonly store: TelemetryStore;
  /** Alert leases and the fleet's firing records. */
  readonly state: StateStore;
  /** Where alerts are published (SNS by severity; console + JSONL locally). */
  readonly alerts: AlertSink;
  /** The running GPU instances (EC2 per region; the hosts that reported, locally). */
  readonly instances: RunningInstances;
  /**
   * The team waste priced from the deployment's Cost and Usage Report 2.0 (Athena, `CUR_DATABASE`/
   * `CUR_TABLE`); it replaces the store's team read, so a run makes as many queries with it as without.
   * @default undefined (the prices stored with the ledger)
   */
  readonly cur?: CurPricedFleetReads;
  /** Where the fleet metrics go (CloudWatch). @default undefined (not published; local mode) */
  readonly metrics?: FleetMetricSink;
  /** Teams with their own CloudWatch `Team` value (`METRICS_TEAMS`, as ingest). @default none */
  readonly metricTeams?: ReadonlySet<string>;
  /** The structured log. */
  readonly log: Log;
  /** Rule thresholds (the fleet rules read theirs from the same table as ingest). */
  readonly rules: RuleContext;
  /** An alert that is still firing is sent again after this many seconds. @default 3600 */
  readonly alertCooldownS?: number;
}

/** What one evaluation did. */
export interface FleetEvaluation {
  /** Running GPU instances listed; undefined when EC2 could not be asked. */
  readonly instances?: number;
  /** Every finding's alert (sent now or in cooldown), in rule order. */
  readonly findings: readonly Alert[];
  /** Alerts published now, resolve messages included. */
  readonly sent: readonly Alert[];
  /** The rules that judged. */
  readonly judged: readonly RuleId[];
}

/**
 * One fleet evaluation (docs/design.md §6): list the running GPU instances, then three store reads
 * whatever the fleet's size — when each instance last sent, the straggler means per instance and job
 * over the straggler span (kept for the members of jobs with enough running nodes,
 * `stragglerCandidates`; not read when there are none) and the team waste (priced from the CUR
 * when `deps.cur` is given, see {@link teamWaste}) — run the pure
 * fleet rules, then the same alert
 * lifecycle as ingest (publish-then-record with cooldown; firing records under the fleet scope;
 * resolve messages when a judging rule no longer finds the condition) and publish the fleet metrics.
 *
 * Expected failures are values: when EC2 cannot be asked, the rules that need the instance list do
 * not judge (no instance is called silent for it, no alert resolves) and the rest still run; a
 * metrics failure is logged and the alerts stand.
 *
 * @param deps - ports and settings
 * @param now - the evaluator's clock
 * @returns what was found and sent
 * @throws whatever the store throws when it cannot be read (the next scheduled run tries again)
 * @throws {UnpublishedAlertsError} after the evaluation when an alert could not be published (the
 *   Lambda fails, so the failure is visible; the next run sends it)
 */
export async function evaluateFleet(deps: FleetEvaluatorDeps, now: Date): Promise<FleetEvaluation> {
  const t = deps.rules.thresholds;
  const ago = (s: number) => new Date(now.getTime() - s * MS_PER_SECOND);
  let instances: RunningInstance[] | undefined;
  try {
    instances = await deps.instances.listRunning(now);
  } catch (error) {
    if (!(error instanceof FleetListingError)) throw error;
    deps.log.error('running GPU instances could not be listed; agent_silent and straggler not judged', {
      region: error.region,
      error: error.message,
    });
  }
  const to = new Date(now.getTime() + 1);
  const seen = await deps.store.lastSeen({
    from: ago(Math.max(FLEET_LAST_SEEN_LOOKBACK_S, t.agentSilentAfterS)),
    to,
  });
  const lastSeen = new Map(seen.map((s) => [s.instance_id, s.last_seen]));
  const spanFrom = ago(t.fleetStragglerSpanS);
  const candidates = new Set(
    stragglerCandidates(instances ?? [], t.fleetStragglerMinNodes).map((i) => i.instance_id),
  );
  // One aggregate query for the whole fleet (per instance and job, in SQL): on Athena a query per
  // instance cost a scan of the fleet's partitions each, so the evaluator grew with the fleet squared.
  const nodeMeans =
    candidates.size === 0
      ? []
      : (await deps.store.nodeJobMeans({ from: spanFrom, to })).filter((m) => candidates.has(m.instance_id));
  const teams = await teamWaste(deps, {
    from: ago(t.fleetWasteSpanS),
    to,
    curFrom: ago(FLEET_CUR_LOOKBACK_S),
  });
  const input = { ...(instances === undefined ? {} : { instances }), lastSeen, nodeMeans, teams };
  const { findings, judged } = evaluateFleetRules(input, deps.rules, now);

  const { sent, failed }: AlertTally = { sent: [], failed: [] };
  const alerts = findings.map(toFleetAlert);
  for (const alert of alerts) {
    const outcome = await publishOnce(alert, deps, now);
    if (outcome === 'failed') failed.push(alert);
    if (outcome !== 'sent') continue;
    sent.push(alert);
    await deps.state.putFiringAlert(fleetFiringRecord(alert));
  }
  const firingNow = new Set(alerts.map((a) => a.id));
  for (const firing of await deps.state.listFiringAlerts(FLEET_FIRING_SCOPE)) {
    if (firingNow.has(firing.alert_id) || !judged.has(firing.rule)) continue;
    if (!(await deps.state.takeFiringAlert(FLEET_FIRING_SCOPE, firing.alert_id))) continue;
    const alert = fleetResolvedAlert(firing, now);
    if (await publishResolve(firing, alert, deps, now)) sent.push(alert);
    else failed.push(alert);
  }

  if (deps.metrics !== undefined) {
    try {
      await deps.metrics.publish(fleetMetrics(input, findings, t, deps.metricTeams), now);
    } catch (err) {
      deps.log.error('fleet metrics could not be published', { error: (err as Error).message });
    }
  }
  deps.log.info('fleet evaluated', {
    instances: instances?.length ?? null,
    findings: findings.length,
    sent: sent.length,
  });
  if (failed.length > 0) {
    throw new UnpublishedAlertsError(
      failed.map((a) => a.id),
      `Expected every fleet alert to publish, ${failed.length} failed (${failed.map((a) => a.id).join(', ')}); the next run sends them`,
    );
  }
  return {
    ...(instances === undefined ? {} : { instances: instances.length }),
    findings: alerts,
    sent,
    judged: [...judged],
  };
}

/**
 * The team waste of the span: from the CUR when the deployment has one (each instance at its newest
 * billed hour's effective rate since `curFrom`), else the store's team sums at the stored prices.
 * When the CUR cannot be read (a permission, the table or Athena missing), the error is logged and
 * the store's sums stand in, so `waste_rate` still judges (its evidence then says `price_source`
 * `ingest`); that run makes one more query.
 *
 * @throws whatever the store throws
 */
async function teamWaste(
  deps: FleetEvaluatorDeps,
  span: { readonly from: Date; readonly to: Date; readonly curFrom: Date },
): Promise<readonly FleetTeamRow[]> {
  if (deps.cur !== undefined) {
    try {
      return await deps.cur.teamWasteAtCurRates(span);
    } catch (error) {
      if (!(error instanceof StoreQueryError || error instanceof StoreUnavailableError)) throw error;
      deps.log.error('the CUR could not be read; team waste priced at the stored prices', {
        error: error.message,
      });
    }
  }
  return deps.store.queryWasteBy({ by: 'team', from: span.from, to: span.to });
}
