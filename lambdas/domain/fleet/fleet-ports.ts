import type { RunningInstance } from './fleet-input';
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
