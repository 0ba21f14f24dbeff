import type { Host } from '../contract';
import { JOB_TAG, PROJECT_TAG, REMEDIATION_OPT_OUT_TAG, TEAM_TAG } from './constants';
import type { InstanceInfo } from './types';

/** The instance tags the pipeline reads (attribution and the remediation opt-out). */
export const ENRICHED_TAG_KEYS: readonly string[] = [TEAM_TAG, JOB_TAG, PROJECT_TAG, REMEDIATION_OPT_OUT_TAG];

/**
 * Completes a batch's `host` with what EC2 and Auto Scaling say about the instance (server-side
 * enrichment, docs/design.md §1), so that IMDS instance tags, which EC2 leaves off by default, are optional.
 * Pure.
 *
 * - `team`, `job`, `project` and the opt-out tag: the agent's IMDS tag where it sent one, else the
 *   EC2 tag; other EC2 tags (e.g. `aws:autoscaling:groupName`) are not copied.
 * - `asg_name`: the Auto Scaling group Auto Scaling reports, never the agent's claim (absent when
 *   the instance is in no group).
 * - `instance_type`: EC2's, so the price and the GPU-type check use the truth.
 *
 * @param host - the batch's `host` (validated)
 * @param instance - `InstanceDirectory.describe` of `host.instance_id`
 * @returns a new host; `host` is not changed
 */
export function enrichHost(host: Host, instance: InstanceInfo): Host {
  const tags: Record<string, string> = { ...(host.tags ?? {}) };
  for (const key of ENRICHED_TAG_KEYS) {
    const value = instance.tags[key];
    if (tags[key] === undefined && value !== undefined) tags[key] = value;
  }
  const { asg_name: _claimed, ...rest } = host;
  return {
    ...rest,
    instance_type: instance.instance_type,
    ...(instance.asg === undefined ? {} : { asg_name: instance.asg.name }),
    ...(Object.keys(tags).length === 0 ? {} : { tags }),
  };
}
