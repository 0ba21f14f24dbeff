import { JOB_TAG } from '../constants';
import type { NodeJobMeans, StoredGpuWindow } from '../ports';
import { type PeerStanding, peerStandings, STRAGGLER_METRICS } from '../rules/straggler';
import { percent, round3 } from '../rules/window-finding';
import type { RunningInstance } from './fleet-input';
import type { FleetFinding, FleetRule } from './fleet-rule';

/** One node's means over the span, per straggler metric; a metric no window of it had is absent. */
type NodeMeans = Partial<Record<(typeof STRAGGLER_METRICS)[number], number>>;

/**
 * The reference of the store read `nodeJobMeans` (`TelemetryStore`), in memory: per instance and
 * `job` tag, the mean of each straggler metric over the windows that carry it (absent, never 0,
 * when none does); windows without a `job` tag are left out. The stores compute the same in SQL
 * (`avg`, which skips NULL); tests and the store conformance suite compare against this.
 *
 * @param windows - GPU windows as stored (latest `seq` per window), any instances and jobs
 * @returns one entry per instance and job, ordered by instance id then job
 */
export function meansByNodeAndJob(windows: readonly StoredGpuWindow[]): NodeJobMeans[] {
  const sums = new Map<string, { instance_id: string; job: string; sum: number[]; n: number[] }>();
  for (const w of windows) {
    if (w.job === undefined) continue;
    const key = `${w.instance_id}\u0000${w.job}`;
    let entry = sums.get(key);
    if (entry === undefined) {
      entry = { instance_id: w.instance_id, job: w.job, sum: [0, 0, 0], n: [0, 0, 0] };
      sums.set(key, entry);
    }
    STRAGGLER_METRICS.forEach((m, k) => {
      const v = w.metrics[m];
      if (v === undefined || entry === undefined) return;
      entry.sum[k] = (entry.sum[k] as number) + v;
      entry.n[k] = (entry.n[k] as number) + 1;
    });
  }
  return [...sums.values()]
    .sort((a, b) => compareText(a.instance_id, b.instance_id) || compareText(a.job, b.job))
    .map((e) => {
      const means: Record<string, number> = {};
      STRAGGLER_METRICS.forEach((m, k) => {
        const n = e.n[k] as number;
        if (n > 0) means[m] = (e.sum[k] as number) / n;
      });
      return { instance_id: e.instance_id, job: e.job, ...means };
    });
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Running instances' means grouped by the `job` tag their windows had. */
function nodesByJob(
  instances: readonly RunningInstance[],
  nodeMeans: readonly NodeJobMeans[],
): Map<string, { instance: RunningInstance; means: NodeMeans }[]> {
  const byInstance = new Map<string, NodeJobMeans[]>();
  for (const row of nodeMeans) {
    const list = byInstance.get(row.instance_id);
    if (list === undefined) byInstance.set(row.instance_id, [row]);
    else list.push(row);
  }
  const jobs = new Map<string, { instance: RunningInstance; means: NodeMeans }[]>();
  for (const instance of instances) {
    for (const row of byInstance.get(instance.instance_id) ?? []) {
      const means: NodeMeans = {};
      for (const m of STRAGGLER_METRICS) {
        const v = row[m];
        if (v !== undefined) means[m] = v;
      }
      const nodes = jobs.get(row.job);
      if (nodes === undefined) jobs.set(row.job, [{ instance, means }]);
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
    for (const [job, nodes] of [...nodesByJob(input.instances ?? [], input.nodeMeans)].sort((a, b) =>
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
 * The running instances the cross-node straggler judges: members of a job (EC2 `job` tag) that has at
 * least `minNodes` running instances. A job with fewer nodes cannot be judged, so the evaluator drops
 * the store's means of every other instance before judging. Jobs known only from tags the
 * agent sends itself (none on the EC2 instance) are not judged.
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
