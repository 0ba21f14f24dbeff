import type { FleetTeamRow, RunningInstance } from './fleet-input';
import type { FleetMetricDatum } from './fleet-metrics';

/**
 * Ports of the fleet evaluator (docs/design.md §6), beside those of `ports.ts` it shares with ingest
 * (store, state, alert sink): who runs, and where the fleet metrics go.
 */

/** Lists the GPU instances that run (EC2 `DescribeInstances` in each configured region; locally, the hosts that reported). */
export interface RunningInstances {
  /**
   * @param now - the evaluator's clock (the local lister judges "running" by it)
   * @returns every running instance of a GPU family, ordered by region then instance id
   * @throws {FleetListingError} when an instance list cannot be read (throttled, no permission, unreachable):
   *   the evaluator then judges nothing rather than call every instance silent
   */
  listRunning(now: Date): Promise<RunningInstance[]>;
}

/** Publishes the fleet metrics (CloudWatch `PutMetricData`; nothing locally). */
export interface FleetMetricSink {
  /**
   * @param data - the values, see `fleetMetrics`
   * @param at - their timestamp
   * @throws when they cannot be published (the evaluator logs it; alerts are already out)
   */
  publish(data: readonly FleetMetricDatum[], at: Date): Promise<void>;
}

/** What {@link CurPricedFleetReads.teamWasteAtCurRates} reads. */
export interface CurTeamWasteQuery {
  /** Start of the waste span (inclusive), on the windows' `time`. */
  readonly from: Date;
  /** End of the waste span (exclusive); also the end of the CUR hours searched. */
  readonly to: Date;
  /** Start of the CUR hours searched for each instance's newest rate (inclusive): `to` − `FLEET_CUR_LOOKBACK_S`. */
  readonly curFrom: Date;
}

/**
 * The fleet evaluator's team waste priced from the deployment's Cost and Usage Report 2.0 (Athena:
 * the CUR's Glue table, `CUR_DATABASE`/`CUR_TABLE`), in one query whatever the fleet's size.
 */
export interface CurPricedFleetReads {
  /**
   * The ledger summed per `team` tag over `from ≤ time < to`, as `queryWasteBy` by `team` does, but
   * with each instance's windows priced at the effective cost of its newest instance-hour in the CUR
   * between `curFrom` and `to` (Savings Plan, reservation, on-demand, spot or Capacity Block, per
   * `CUR_EFFECTIVE_COST`), the waste recomputed as the ledger does; an instance the CUR has no hour
   * of keeps its stored price. Each row says how it was priced (`pricing`).
   *
   * @param query - the span and the CUR hours searched
   * @returns one row per team (the untagged spend as a row without `group`)
   * @throws {StoreQueryError} when the query is refused (a bad range, the CUR table or a column missing)
   * @throws {StoreUnavailableError} when Athena cannot answer (throttled, unreachable, timed out)
   */
  teamWasteAtCurRates(query: CurTeamWasteQuery): Promise<FleetTeamRow[]>;
}
