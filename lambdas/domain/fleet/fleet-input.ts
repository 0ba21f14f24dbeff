import type { NodeJobMeans, WasteGroupRow } from '../ports';
import type { PurchaseOption } from '../pricing';

/**
 * A GPU instance EC2 says is running (`DescribeInstances`, state `running`, an instance type of a GPU
 * family gpu-sentinel prices), as the fleet rules need it.
 */
export interface RunningInstance {
  /** EC2 instance id, e.g. `i-0abc12345def67890`. */
  readonly instance_id: string;
  /** EC2 instance type, e.g. `p5.48xlarge`. */
  readonly instance_type: string;
  /** The region it runs in (the region asked). */
  readonly region: string;
  /** Availability Zone, when EC2 gives one. */
  readonly az?: string;
  /** When it was launched (EC2 `LaunchTime`), ISO 8601 UTC. */
  readonly launch_time: string;
  /** `spot` when EC2 says `InstanceLifecycle: spot`, else `on-demand`. */
  readonly lifecycle: PurchaseOption;
  /** EC2 instance tags (key → value): `team`, `job`, … */
  readonly tags: Readonly<Record<string, string>>;
  /** The Auto Scaling group (tag `aws:autoscaling:groupName`), when it belongs to one. */
  readonly asg_name?: string;
}

/**
 * Everything the fleet rules read, gathered by the evaluator before it judges (docs/design.md §6):
 * pure data, no port.
 */
export interface FleetInput {
  /**
   * GPU instances EC2 says are running, every configured region; absent when EC2 could not be asked
   * (the rules that need the list then do not judge).
   */
  readonly instances?: readonly RunningInstance[];
  /**
   * Instance id → end of its latest GPU window in the store (ISO 8601), over the evaluator's
   * look-back; an instance absent here sent nothing in that span.
   */
  readonly lastSeen: ReadonlyMap<string, string>;
  /**
   * Per instance and `job` tag, the straggler metric means of its GPU windows over the last
   * `fleetStragglerSpanS` (`TelemetryStore.nodeJobMeans`), for the members of jobs with enough
   * running nodes (`stragglerCandidates`). Instances that sent nothing in the span are absent.
   */
  readonly nodeMeans: readonly NodeJobMeans[];
  /**
   * The ledger summed per team over the last `fleetWasteSpanS` (`queryWasteBy` by `team`), or, when
   * the deployment has a CUR, the same repriced at each instance's newest CUR rate (with `pricing`).
   */
  readonly teams: readonly FleetTeamRow[];
}

/**
 * How a team's dollars of the waste span were priced when the deployment has a Cost and Usage
 * Report 2.0 (`CurPricedFleetReads`): each instance's windows at the effective cost of its newest
 * instance-hour in the CUR, the others at the price stored with them at ingest.
 */
export interface TeamPricing {
  /** GPU-hours of the team's windows priced at a CUR rate, ≥ 0, ≤ the row's `gpu_hours`. */
  readonly cur_gpu_hours: number;
  /**
   * The oldest and newest CUR hour (`line_item_usage_start_date` truncated to the hour, ISO 8601 UTC)
   * whose rates priced them; absent when the CUR priced none.
   */
  readonly cur_usage_hour_from?: string;
  readonly cur_usage_hour_to?: string;
  /**
   * The `price_source` stored at ingest of the other GPU-hours (`builtin:…` list price, `spot`,
   * `savings_plan`, `override`, …), or `mixed` when they have several; absent when the CUR priced all.
   */
  readonly stored_price_source?: string;
}

/** A team's ledger sums over the waste span, and how they were priced when a CUR priced them. */
export type FleetTeamRow = WasteGroupRow & {
  /** Present when the row was priced from a CUR; absent: the prices stored at ingest. */
  readonly pricing?: TeamPricing;
};
