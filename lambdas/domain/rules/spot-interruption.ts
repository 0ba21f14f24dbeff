import type { Batch, GpuEvent } from '../../contract';
import type { Finding } from '../types';
import type { PointRule } from './point-rule';

/**
 * Rule `spot_interruption` (docs/design.md §6): an IMDS spot interruption notice (`spot_interruption` event).
 * Info, action `notify`: the job owner should checkpoint now (the notice comes two minutes ahead).
 *
 * @param batch - a validated batch; reads `spot_interruption` events
 * @returns at most one finding for the instance; `at` = first notice; evidence `count`, `detail`
 */
function spotInterruptionFindings(batch: Batch): Finding[] {
  const notices = (batch.events ?? [])
    .filter((e) => e.kind === 'spot_interruption')
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  const first = notices[0] as GpuEvent | undefined;
  if (first === undefined) return [];
  return [
    {
      rule: 'spot_interruption',
      severity: 'info',
      action: 'notify',
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      at: first.at,
      summary: `Spot interruption notice for ${batch.host.instance_id}${first.detail === undefined ? '' : `: ${first.detail}`}`,
      remedy: 'Checkpoint now: EC2 reclaims this Spot instance about two minutes after the notice.',
      evidence: { count: notices.length, ...(first.detail === undefined ? {} : { detail: first.detail }) },
    },
  ];
}

/** Rule `spot_interruption` as the registry runs it: always judges; its findings are {@link spotInterruptionFindings}'s. */
export const spotInterruptionRule: PointRule<'spot_interruption'> = {
  id: 'spot_interruption',
  reads: 'batch',
  evaluate: (batch) => ({ judged: true, findings: spotInterruptionFindings(batch) }),
};
