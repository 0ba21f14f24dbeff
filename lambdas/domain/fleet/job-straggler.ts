import { JOB_TAG } from '../constants';
import type { StoredGpuWindow } from '../ports';
import { type PeerStanding, peerStandings, STRAGGLER_METRICS } from '../rules/straggler';
import { percent, round3 } from '../rules/window-finding';
import type { RunningInstance } from './fleet-input';
import type { FleetFinding, FleetRule } from './fleet-rule';

/** One node's means over the span, per straggler metric; a metric no window of it had is absent. */
type NodeMeans = Partial<Record<(typeof STRAGGLER_METRICS)[number], number>>;

/** The mean of a metric over a node's windows that carry it; undefined when none does (absent, never 0). */
function meanOf(windows: readonly StoredGpuWindow[], metric: keyof NodeMeans): number | undefined {
  let sum = 0;
  let n = 0;
  for (const w of windows) {
    const v = w.metrics[metric];
    if (v === undefined) continue;
    sum += v;
    n++;
  }
  return n === 0 ? undefined : sum / n;
}

/** Running instances' windows grouped by the `job` tag each window had; a window without one is left out. */
function nodesByJob(
  instances: readonly RunningInstance[],
  windows: ReadonlyMap<string, readonly StoredGpuWindow[]>,
): Map<string, { instance: RunningInstance; means: NodeMeans }[]> {
  const jobs = new Map<string, { instance: RunningInstance; means: NodeMeans }[]>();
  for (const instance of instances) {
    const byJob = new Map<string, StoredGpuWindow[]>();
    for (const w of windows.get(instance.instance_id) ?? []) {
      if (w.job === undefined) continue;
      const list = byJob.get(w.job);
      if (list === undefined) byJob.set(w.job, [w]);
      else list.push(w);
    }
    for (const [job, ws] of byJob) {
      const means: NodeMeans = {};
      for (const m of STRAGGLER_METRICS) {
        const v = meanOf(ws, m);
        if (v !== undefined) means[m] = v;
      }
      const nodes = jobs.get(job);
      if (nodes === undefined) jobs.set(job, [{ instance, means }]);
      else nodes.push({ instance, means });
    }
  }
  return jobs;
}

/**
 * Rule `straggler` across nodes (docs/design.md §6; the ingest `straggler` compares the GPUs
 * of one instance): the nodes of one job (the `job` tag each window had) over the last
 * `fleetStragglerSpanS` (900 s). Per node, the mean of each of SM active, power and temperature over all
 * its GPUs' flush windows (a metric no window carries is absent, never 0). For each metric present on
 * ≥ `fleetStragglerMinNodes` (3) nodes, a node is low when its modified z-score (Iglewicz & Hoaglin,
 * median and MAD of the job's nodes) is ≤ `stragglerModifiedZBelow` (−3.5) **and** it is ≥
 * `stragglerMinGap` (10 %) below the median, so near-identical nodes never fire however small their
 * spread. A node low on SM active, or, when SM active is not judged, on power and temperature both,
 * is a straggler. A job whose median SM active is below `idleSmActiveBelow` is idle and not judged.
 * One alert per straggler node and job (`straggler:<instance>#job:<job>`), warning, to the job's owner;
 * it resolves when the node catches up or the job stops reporting from 3 nodes.
 */
export const jobStragglerRule: FleetRule<'straggler'> = {
  id: 'straggler',
  reads: 'fleet',
  needsInstances: true,
  evaluate: (input, ctx, now) => {
    const t = ctx.thresholds;
    const findings: FleetFinding[] = [];
    for (const [job, nodes] of [...nodesByJob(input.instances ?? [], input.windows)].sort((a, b) =>
      a[0] < b[0] ? -1 : 1,
    )) {
      if (nodes.length < t.fleetStragglerMinNodes) continue;
      const lows = new Map<string, Map<string, PeerStanding>>();
      let smJudged = false;
      let metricsJudged = 0;
      let idle = false;
      for (const metric of STRAGGLER_METRICS) {
        const present = nodes.filter((n) => n.means[metric] !== undefined);
        if (present.length < t.fleetStragglerMinNodes) continue;
        const standings = peerStandings(present.map((n) => n.means[metric] as number));
        if (metric === 'sm_active') {
          if ((standings[0] as PeerStanding).median < t.idleSmActiveBelow) {
            idle = true;
            break;
          }
          smJudged = true;
        }
        metricsJudged++;
        standings.forEach((s, i) => {
          if (s.z > t.stragglerModifiedZBelow || s.gap < t.stragglerMinGap) return;
          const id = (present[i] as (typeof nodes)[number]).instance.instance_id;
          lows.set(id, (lows.get(id) ?? new Map()).set(metric, s));
        });
      }
      if (idle || metricsJudged === 0) continue;
      for (const node of nodes) {
        const low = lows.get(node.instance.instance_id);
        if (low === undefined) continue;
        if (!(low.has('sm_active') || (!smJudged && low.size >= Math.min(2, metricsJudged)))) continue;
        const [metric, standing] = [...low][0] as [string, PeerStanding];
        const evidence: Record<string, string | number> = {
          [JOB_TAG]: job,
          nodes: nodes.length,
          span_s: t.fleetStragglerSpanS,
        };
        for (const [m, s] of low) {
          evidence[`${m}_node`] = round3(s.value);
          evidence[`${m}_median`] = round3(s.median);
          evidence[`${m}_z`] = Number.isFinite(s.z) ? Number(s.z.toFixed(1)) : '-inf (peers equal)';
        }
        findings.push({
          subject: { kind: 'instance', instance: node.instance },
          finding: {
            rule: 'straggler',
            severity: 'warning',
            action: 'notify',
            instance_id: node.instance.instance_id,
            instance_type: node.instance.instance_type,
            at: now.toISOString(),
            variant: `${JOB_TAG}:${job}`,
            summary: `node of job ${job} ${percent(standing.gap)} below its ${nodes.length - 1} peers on ${metric} (${round3(standing.value)} vs median ${round3(standing.median)}): the synchronous job runs at its pace`,
            remedy:
              'Inspect the slow node (nvidia-smi -q on each GPU: clocks, throttle reasons, PCIe link width/speed, NVLink state; EFA counters); if it stays behind, drain it from the job and have it replaced.',
            evidence: { ...evidence, z_at_most: t.stragglerModifiedZBelow, gap_at_least: t.stragglerMinGap },
          },
        });
      }
    }
    return { judged: true, findings };
  },
};

/**
 * The running instances worth reading windows for: members of a job (EC2 `job` tag) that has at least
 * `minNodes` running instances. A job with fewer nodes cannot be judged, so the evaluator spares the
 * store one read per instance of it (on Athena, one query each). Jobs known only from tags the agent
 * sends itself (none on the EC2 instance) are not read.
 *
 * @param instances - the running instances
 * @param minNodes - `fleetStragglerMinNodes`
 * @returns the candidates, in the order given
 */
export function stragglerCandidates(
  instances: readonly RunningInstance[],
  minNodes: number,
): RunningInstance[] {
  const perJob = new Map<string, number>();
  for (const i of instances) {
    const job = i.tags[JOB_TAG];
    if (job !== undefined) perJob.set(job, (perJob.get(job) ?? 0) + 1);
  }
  return instances.filter((i) => {
    const job = i.tags[JOB_TAG];
    return job !== undefined && (perJob.get(job) ?? 0) >= minNodes;
  });
}
