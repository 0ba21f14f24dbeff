import type { Batch } from '../../../lambdas/contract';
import {
  type Alert,
  computeLedger,
  type Finding,
  type GpuWindowRow,
  priceFor,
} from '../../../lambdas/domain';

/**
 * The GPU rows `processBatch` stores for a batch: one per flush window, with its ledger at the
 * built-in on-demand price and the host's team.
 *
 * @param batch - a validated batch
 * @param team - the team the rows carry @default the batch's `team` tag
 */
export function gpuRowsOf(batch: Batch, team: string | undefined = batch.host.tags?.team): GpuWindowRow[] {
  const price = priceFor(batch.host.instance_type, batch.host.region, {}, 8);
  return batch.windows
    .filter((w) => w.kind === 'flush')
    .map((w) => ({
      time: w.end,
      start: w.start,
      instance_id: batch.host.instance_id,
      instance_type: batch.host.instance_type,
      region: batch.host.region,
      gpu_index: w.gpu.index,
      team,
      batch_id: batch.batch_id,
      seq: batch.seq,
      metrics: w.metrics,
      ledger: computeLedger(w, price),
    }));
}

/** An alert of `rule` at `severity` on instance `instanceId`, as `processBatch` reports it sent. */
export function alertOf(
  rule: Finding['rule'],
  severity: Finding['severity'],
  opts: { status?: 'firing' | 'resolved'; instanceId?: string; at?: string } = {},
): Alert {
  const instanceId = opts.instanceId ?? 'i-0abc12345def67890';
  return {
    id: `${rule}:${instanceId}`,
    subject: rule,
    body: rule,
    attributes: {},
    ...(opts.status === undefined ? {} : { status: opts.status }),
    finding: {
      rule,
      severity,
      action: 'notify',
      instance_id: instanceId,
      instance_type: 'p5.48xlarge',
      at: opts.at ?? '2026-03-10T10:00:20.000Z',
      summary: rule,
      remedy: 'none',
      evidence: {},
    },
  };
}
