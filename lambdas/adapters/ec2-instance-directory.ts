import {
  type AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
} from '@aws-sdk/client-auto-scaling';
import { DescribeInstancesCommand, type EC2Client } from '@aws-sdk/client-ec2';
import { GetInstanceProfileCommand, type IAMClient, NoSuchEntityException } from '@aws-sdk/client-iam';
import { InstanceLookupError } from '../domain/port-errors';
import type { InstanceDirectory } from '../domain/ports';
import type { AutoScalingGroupInfo, InstanceInfo } from '../domain/types';
import {
  INSTANCE_CACHE_MAX_ENTRIES,
  INSTANCE_CACHE_TTL_MS,
  INSTANCE_NEGATIVE_CACHE_TTL_MS,
} from './constants';
import type { RegionalClients } from './regional-clients';

/** Options of {@link Ec2InstanceDirectory}. */
export interface Ec2InstanceDirectoryOptions {
  /** EC2 clients by region. */
  readonly ec2: RegionalClients<EC2Client>;
  /** Auto Scaling clients by region. */
  readonly autoScaling: RegionalClients<AutoScalingClient>;
  /**
   * IAM (a global service: one client) to read the role of each instance profile, cached like
   * instances. @default undefined (instance profile roles are not looked up)
   */
  readonly iam?: IAMClient;
  /** The clock, ms since the epoch. @default Date.now */
  readonly nowMs?: () => number;
  /** How long a found instance is reused, ms ≥ 0. @default {@link INSTANCE_CACHE_TTL_MS} (5 min) */
  readonly ttlMs?: number;
  /** How long "no such instance" is reused, ms ≥ 0. @default {@link INSTANCE_NEGATIVE_CACHE_TTL_MS} (30 s) */
  readonly negativeTtlMs?: number;
  /** Most cached instances, ≥ 1. @default {@link INSTANCE_CACHE_MAX_ENTRIES} */
  readonly maxEntries?: number;
}

interface CacheEntry {
  readonly info: InstanceInfo | undefined;
  readonly expiresAtMs: number;
}

/** EC2 error codes that mean "no such instance" rather than "could not ask". */
const NOT_FOUND_CODES = new Set(['InvalidInstanceID.NotFound', 'InvalidInstanceID.Malformed']);

/**
 * Server-side enrichment (docs/design.md §1, §8) on the real AWS APIs, in the instance's own region:
 * EC2 `DescribeInstances` (state, type, tags, instance profile), Auto Scaling
 * `DescribeAutoScalingInstances` (group membership) and `DescribeAutoScalingGroups` (desired
 * capacity and group tags). Answers are cached per (region, instance) for `ttlMs`, "not found"
 * for the shorter `negativeTtlMs`; failures are never cached.
 *
 * With `iam`, IAM `GetInstanceProfile` adds the role of the instance's profile, so the sender check
 * can compare it with the caller's role; profiles are cached for `ttlMs` too.
 *
 * IAM: `ec2:DescribeInstances`, `autoscaling:DescribeAutoScalingInstances`,
 * `autoscaling:DescribeAutoScalingGroups` (all resource `*`: these actions support no
 * resource-level permissions), and `iam:GetInstanceProfile` on the account's instance profiles.
 *
 * @example
 * const directory = new Ec2InstanceDirectory({
 *   ec2: new RegionalClients((region) => new EC2Client({ region })),
 *   autoScaling: new RegionalClients((region) => new AutoScalingClient({ region })),
 * });
 * const info = await directory.describe('i-0abc12345def67890', 'us-east-1');
 */
export class Ec2InstanceDirectory implements InstanceDirectory {
  readonly #ec2: RegionalClients<EC2Client>;
  readonly #autoScaling: RegionalClients<AutoScalingClient>;
  readonly #iam: IAMClient | undefined;
  readonly #profiles = new Map<string, { readonly roles: readonly string[]; readonly expiresAtMs: number }>();
  readonly #nowMs: () => number;
  readonly #ttlMs: number;
  readonly #negativeTtlMs: number;
  readonly #maxEntries: number;
  readonly #cache = new Map<string, CacheEntry>();

  /**
   * @param options - clients, clock and cache settings
   * @throws {RangeError} when a TTL is negative or `maxEntries` < 1
   */
  constructor(options: Ec2InstanceDirectoryOptions) {
    this.#ec2 = options.ec2;
    this.#autoScaling = options.autoScaling;
    this.#iam = options.iam;
    this.#nowMs = options.nowMs ?? Date.now;
    this.#ttlMs = nonNegative('ttlMs', options.ttlMs ?? INSTANCE_CACHE_TTL_MS);
    this.#negativeTtlMs = nonNegative(
      'negativeTtlMs',
      options.negativeTtlMs ?? INSTANCE_NEGATIVE_CACHE_TTL_MS,
    );
    this.#maxEntries = options.maxEntries ?? INSTANCE_CACHE_MAX_ENTRIES;
    if (!Number.isInteger(this.#maxEntries) || this.#maxEntries < 1) {
      throw new RangeError(
        `Expected \`maxEntries\` to be an integer >= 1, got \`${String(options.maxEntries)}\``,
      );
    }
  }

  /**
   * @param instanceId - EC2 instance id
   * @param region - the instance's region (`host.region`)
   * @returns the instance, or undefined when EC2 does not know it in that region
   * @throws {InstanceLookupError} when EC2 or Auto Scaling cannot be asked
   */
  async describe(instanceId: string, region: string): Promise<InstanceInfo | undefined> {
    const key = `${region}/${instanceId}`;
    const now = this.#nowMs();
    const hit = this.#cache.get(key);
    if (hit !== undefined && hit.expiresAtMs > now) return hit.info;
    const info = await this.#lookUp(instanceId, region);
    this.#cache.delete(key);
    if (this.#cache.size >= this.#maxEntries) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(key, {
      info,
      expiresAtMs: now + (info === undefined ? this.#negativeTtlMs : this.#ttlMs),
    });
    return info;
  }

  async #lookUp(instanceId: string, region: string): Promise<InstanceInfo | undefined> {
    let instance:
      | {
          State?: { Name?: string };
          InstanceType?: string;
          Tags?: { Key?: string; Value?: string }[];
          IamInstanceProfile?: { Arn?: string };
        }
      | undefined;
    try {
      const out = await this.#ec2
        .for(region)
        .send(new DescribeInstancesCommand({ InstanceIds: [instanceId] }));
      instance = out.Reservations?.flatMap((r) => r.Instances ?? []).find((i) => i.InstanceId === instanceId);
    } catch (error) {
      if (NOT_FOUND_CODES.has((error as { name?: string }).name ?? '')) return undefined;
      throw new InstanceLookupError(instanceId, region, 'DescribeInstances failed; retry later', {
        cause: error,
      });
    }
    if (instance === undefined) return undefined;
    const asg = await this.#group(instanceId, region);
    const profileArn = instance.IamInstanceProfile?.Arn;
    const roles =
      profileArn === undefined ? undefined : await this.#profileRoles(profileArn, instanceId, region);
    return {
      instance_id: instanceId,
      region,
      state: instance.State?.Name ?? 'unknown',
      instance_type: instance.InstanceType ?? 'unknown',
      tags: tagMap(instance.Tags),
      ...(instance.IamInstanceProfile?.Arn === undefined
        ? {}
        : { instance_profile_arn: instance.IamInstanceProfile.Arn }),
      ...(roles === undefined ? {} : { instance_profile_role_names: roles }),
      ...(asg === undefined ? {} : { asg }),
    };
  }

  async #profileRoles(
    profileArn: string,
    instanceId: string,
    region: string,
  ): Promise<readonly string[] | undefined> {
    if (this.#iam === undefined) return undefined;
    const now = this.#nowMs();
    const hit = this.#profiles.get(profileArn);
    if (hit !== undefined && hit.expiresAtMs > now) return hit.roles;
    // arn:aws:iam::123456789012:instance-profile/path/Name → Name (GetInstanceProfile takes the name)
    const name = profileArn.slice(profileArn.lastIndexOf('/') + 1);
    let roles: string[];
    try {
      const out = await this.#iam.send(new GetInstanceProfileCommand({ InstanceProfileName: name }));
      roles = (out.InstanceProfile?.Roles ?? []).map((r) => r.RoleName ?? '').filter((r) => r !== '');
    } catch (error) {
      if (!(error instanceof NoSuchEntityException)) {
        throw new InstanceLookupError(instanceId, region, `GetInstanceProfile ${name} failed; retry later`, {
          cause: error,
        });
      }
      roles = [];
    }
    if (this.#profiles.size >= this.#maxEntries) this.#profiles.clear();
    this.#profiles.set(profileArn, { roles, expiresAtMs: now + this.#ttlMs });
    return roles;
  }

  async #group(instanceId: string, region: string): Promise<AutoScalingGroupInfo | undefined> {
    const client = this.#autoScaling.for(region);
    try {
      const membership = await client.send(
        new DescribeAutoScalingInstancesCommand({ InstanceIds: [instanceId] }),
      );
      const name = membership.AutoScalingInstances?.find(
        (i) => i.InstanceId === instanceId,
      )?.AutoScalingGroupName;
      if (name === undefined) return undefined;
      const groups = await client.send(
        new DescribeAutoScalingGroupsCommand({ AutoScalingGroupNames: [name] }),
      );
      const group = groups.AutoScalingGroups?.find((g) => g.AutoScalingGroupName === name);
      if (group === undefined) return undefined;
      return { name, desired_capacity: group.DesiredCapacity ?? 0, tags: tagMap(group.Tags) };
    } catch (error) {
      throw new InstanceLookupError(instanceId, region, 'Auto Scaling lookup failed; retry later', {
        cause: error,
      });
    }
  }
}

function tagMap(tags: readonly { Key?: string; Value?: string }[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of tags ?? []) if (t.Key !== undefined) out[t.Key] = t.Value ?? '';
  return out;
}

function nonNegative(name: string, value: number): number {
  if (!(value >= 0))
    throw new RangeError(`Expected \`${name}\` to be a number >= 0, got \`${String(value)}\``);
  return value;
}
