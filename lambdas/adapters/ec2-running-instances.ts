import { type EC2Client, type Instance, paginateDescribeInstances } from '@aws-sdk/client-ec2';
import type { RunningInstance } from '../domain/fleet/fleet-input';
import { FleetListingError } from '../domain/fleet/fleet-listing-error';
import type { RunningInstances } from '../domain/fleet/fleet-ports';
import { GPU_INSTANCE_TYPE_FILTERS } from '../domain/fleet/gpu-families';
import { AUTO_SCALING_GROUP_TAG, DESCRIBE_INSTANCES_PAGE_SIZE } from './constants';
import type { RegionalClients } from './regional-clients';

/** Options of {@link Ec2RunningInstances}. */
export interface Ec2RunningInstancesOptions {
  /** EC2 clients by region. */
  readonly ec2: RegionalClients<EC2Client>;
  /** Regions to list, at least one, e.g. `['us-east-1']` (the fleet evaluator's `FLEET_REGIONS`). */
  readonly regions: readonly string[];
}

function toRunning(i: Instance, region: string): RunningInstance | undefined {
  if (i.InstanceId === undefined || i.InstanceType === undefined || i.LaunchTime === undefined)
    return undefined;
  const tags: Record<string, string> = {};
  for (const t of i.Tags ?? []) if (t.Key !== undefined && t.Value !== undefined) tags[t.Key] = t.Value;
  const asg = tags[AUTO_SCALING_GROUP_TAG];
  const az = i.Placement?.AvailabilityZone;
  return {
    instance_id: i.InstanceId,
    instance_type: i.InstanceType,
    region,
    ...(az === undefined ? {} : { az }),
    launch_time: i.LaunchTime.toISOString(),
    lifecycle: i.InstanceLifecycle === 'spot' ? 'spot' : 'on-demand',
    tags,
    ...(asg === undefined ? {} : { asg_name: asg }),
  };
}

/**
 * The running GPU instances of the configured regions, from EC2 `DescribeInstances` with the filters
 * `instance-state-name = running` and `instance-type` = every GPU family gpu-sentinel prices
 * (`g5.*`, `p5.*`, …), `MaxResults` 1000, every page (`NextToken`). IAM: `ec2:DescribeInstances` on
 * `*` (the action supports no resource-level permission).
 *
 * @example
 * const lister = new Ec2RunningInstances({ ec2: new RegionalClients((region) => new EC2Client({ region })), regions: ['us-east-1'] });
 * const running = await lister.listRunning(new Date());
 */
export class Ec2RunningInstances implements RunningInstances {
  readonly #ec2: RegionalClients<EC2Client>;
  readonly #regions: readonly string[];

  /**
   * @param options - clients and regions
   * @throws {RangeError} when no region is given
   */
  constructor(options: Ec2RunningInstancesOptions) {
    if (options.regions.length === 0)
      throw new RangeError('Expected `regions` to name at least one AWS region, got none');
    this.#ec2 = options.ec2;
    this.#regions = [...options.regions].sort();
  }

  /**
   * @returns the running GPU instances, ordered by region then instance id
   * @throws {FleetListingError} naming the region when EC2 cannot be asked there
   */
  async listRunning(): Promise<RunningInstance[]> {
    const out: RunningInstance[] = [];
    for (const region of this.#regions) {
      const found: RunningInstance[] = [];
      try {
        const pages = paginateDescribeInstances(
          { client: this.#ec2.for(region), pageSize: DESCRIBE_INSTANCES_PAGE_SIZE },
          {
            Filters: [
              { Name: 'instance-state-name', Values: ['running'] },
              { Name: 'instance-type', Values: [...GPU_INSTANCE_TYPE_FILTERS] },
            ],
          },
        );
        for await (const page of pages) {
          for (const r of page.Reservations ?? []) {
            for (const i of r.Instances ?? []) {
              const running = toRunning(i, region);
              if (running !== undefined) found.push(running);
            }
          }
        }
      } catch (error) {
        throw new FleetListingError(
          region,
          'expected EC2 DescribeInstances to list the running GPU instances, it failed; check ec2:DescribeInstances on * and the region',
          { cause: error },
        );
      }
      out.push(...found.sort((a, b) => (a.instance_id < b.instance_id ? -1 : 1)));
    }
    return out;
  }
}
