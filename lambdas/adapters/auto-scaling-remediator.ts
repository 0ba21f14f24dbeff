import {
  type AutoScalingClient,
  DescribeAutoScalingInstancesCommand,
  ResourceContentionFault,
  SetInstanceHealthCommand,
} from '@aws-sdk/client-auto-scaling';
import { CreateTagsCommand, type EC2Client } from '@aws-sdk/client-ec2';
import type { Remediator } from '../domain/ports';
import type { RemediationDecision } from '../domain/types';
import {
  QUARANTINE_TAG_KEY,
  SET_INSTANCE_HEALTH_BASE_DELAY_MS,
  SET_INSTANCE_HEALTH_MAX_ATTEMPTS,
} from './constants';
import { rebootInstance } from './ec2-reboot';
import { RemediationFailedError, RemediationNotPossibleError } from './errors';
import { RegionalClients } from './regional-clients';

/** Options of {@link AutoScalingRemediator}. */
export interface AutoScalingRemediatorOptions {
  /**
   * Auto Scaling clients per region (the decision's `region`, i.e. the instance's), or one client
   * for every region (tests, single-region deployments).
   */
  readonly autoScaling: AutoScalingClient | RegionalClients<AutoScalingClient>;
  /** EC2 clients per region, or one client for every region. */
  readonly ec2: EC2Client | RegionalClients<EC2Client>;
  /** Waits `ms` milliseconds between retries. @default setTimeout-based */
  readonly sleep?: (ms: number) => Promise<void>;
  /** SetInstanceHealth attempts on `ResourceContention`, ≥ 1. @default 4 (1 try + 3 retries) */
  readonly maxAttempts?: number;
  /** First retry delay, ms, doubled each retry. @default 200 */
  readonly baseDelayMs?: number;
}

/** The cache key of decisions that name no region (a single client serves them). */
const NO_REGION = '(default)';

function regionOf(decision: RemediationDecision): string {
  return decision.region ?? NO_REGION;
}

function regional<C>(clients: C | RegionalClients<C>): RegionalClients<C> {
  return clients instanceof RegionalClients ? clients : new RegionalClients(() => clients);
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * True for Auto Scaling's `ResourceContention` (an update of the group is already in progress): the
 * SDK turns the query error code into its `ResourceContentionFault` class.
 */
function isResourceContention(error: unknown): boolean {
  return error instanceof ResourceContentionFault;
}

/**
 * Carries out remediation decisions on AWS (docs/design.md §8, aws.md §5): `replace` marks an instance
 * of an Auto Scaling group Unhealthy so the group replaces it; `quarantine` tags an instance
 * outside any group; `reboot` reboots the one instance (EC2 RebootInstances, see `rebootInstance`).
 * Every call goes to the instance's own region (`decision.region`), not the Lambda's. It never
 * terminates or stops anything itself.
 *
 * @example
 * const remediator = new AutoScalingRemediator({ autoScaling: new AutoScalingClient({}), ec2: new EC2Client({}) });
 * await remediator.replace(decision);
 */
export class AutoScalingRemediator implements Remediator {
  readonly #autoScaling: RegionalClients<AutoScalingClient>;
  readonly #ec2: RegionalClients<EC2Client>;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #maxAttempts: number;
  readonly #baseDelayMs: number;

  /**
   * @param options - clients, sleep and retry settings
   * @throws {RangeError} when `maxAttempts` < 1 or `baseDelayMs` < 0
   */
  constructor(options: AutoScalingRemediatorOptions) {
    this.#autoScaling = regional(options.autoScaling);
    this.#ec2 = regional(options.ec2);
    this.#sleep = options.sleep ?? defaultSleep;
    this.#maxAttempts = options.maxAttempts ?? SET_INSTANCE_HEALTH_MAX_ATTEMPTS;
    this.#baseDelayMs = options.baseDelayMs ?? SET_INSTANCE_HEALTH_BASE_DELAY_MS;
    if (!Number.isInteger(this.#maxAttempts) || this.#maxAttempts < 1) {
      throw new RangeError(
        `Expected \`maxAttempts\` to be an integer >= 1, got \`${String(options.maxAttempts)}\``,
      );
    }
    if (!(this.#baseDelayMs >= 0)) {
      throw new RangeError(
        `Expected \`baseDelayMs\` to be a number >= 0, got \`${String(options.baseDelayMs)}\``,
      );
    }
  }

  /**
   * Confirms the instance is in an Auto Scaling group (`DescribeAutoScalingInstances`), then calls
   * `SetInstanceHealth(Unhealthy, ShouldRespectGracePeriod=false)`; retries `ResourceContention`
   * with exponential backoff (200, 400, 800 ms by default).
   *
   * @param decision - a `replace` decision
   * @throws {RemediationNotPossibleError} when the instance is in no Auto Scaling group (escalate)
   * @throws {RemediationFailedError} when an AWS call fails, or ResourceContention persists
   */
  async replace(decision: RemediationDecision): Promise<void> {
    const id = decision.instance_id;
    let group: string | undefined;
    try {
      const out = await this.#autoScaling
        .for(regionOf(decision))
        .send(new DescribeAutoScalingInstancesCommand({ InstanceIds: [id] }));
      group = out.AutoScalingInstances?.find((i) => i.InstanceId === id)?.AutoScalingGroupName;
    } catch (error) {
      throw new RemediationFailedError(
        id,
        'DescribeAutoScalingInstances',
        'expected the group membership, the call failed; escalate to a human',
        {
          cause: error,
        },
      );
    }
    if (group === undefined) {
      throw new RemediationNotPossibleError(
        id,
        `expected the instance in an Auto Scaling group (decision said ${decision.asg_name ?? 'none'}), it is in none; quarantine or escalate instead`,
      );
    }
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#autoScaling.for(regionOf(decision)).send(
          new SetInstanceHealthCommand({
            InstanceId: id,
            HealthStatus: 'Unhealthy',
            ShouldRespectGracePeriod: false,
          }),
        );
        return;
      } catch (error) {
        if (isResourceContention(error) && attempt < this.#maxAttempts) {
          await this.#sleep(this.#baseDelayMs * 2 ** (attempt - 1));
          continue;
        }
        throw new RemediationFailedError(
          id,
          'SetInstanceHealth',
          `expected group ${group} to accept Unhealthy, it failed after ${attempt} attempt(s); escalate to a human`,
          { cause: error },
        );
      }
    }
  }

  /**
   * Tags the instance `gpu-sentinel:quarantine=<rule>` (EC2 CreateTags); never terminates it.
   *
   * @param decision - a `quarantine` decision
   * @throws {RemediationFailedError} when CreateTags fails
   */
  async quarantine(decision: RemediationDecision): Promise<void> {
    try {
      await this.#ec2.for(regionOf(decision)).send(
        new CreateTagsCommand({
          Resources: [decision.instance_id],
          Tags: [{ Key: QUARANTINE_TAG_KEY, Value: decision.rule }],
        }),
      );
    } catch (error) {
      throw new RemediationFailedError(
        decision.instance_id,
        'CreateTags',
        'expected the quarantine tag to be set, the call failed; escalate to a human',
        {
          cause: error,
        },
      );
    }
  }

  /**
   * Reboots the instance (EC2 `RebootInstances`), which resets every GPU of it.
   *
   * @param decision - a `reboot` decision
   * @throws {RemediationFailedError} when RebootInstances fails
   */
  async reboot(decision: RemediationDecision): Promise<void> {
    await rebootInstance(this.#ec2.for(regionOf(decision)), decision);
  }
}
