import { describe, expect, it } from 'vitest';
import {
  alertId,
  DEFAULT_RULE_CONTEXT,
  jobStragglerRule,
  meansByNodeAndJob,
  stragglerCandidates,
} from '../../../../lambdas/domain';
import { fleet, NOW, nodeWindows, running } from './fleet-fixtures';

function jobOf(
  means: readonly { sm_active?: number; power_w?: number; gpu_temp_c?: number }[],
  job = 'train-42',
) {
  const ids = means.map((_, i) => `i-0node${i}`);
  return fleet({
    instances: ids.map((id) => running(id)),
    nodeMeans: meansByNodeAndJob(ids.flatMap((id, i) => nodeWindows(id, job, means[i] ?? {}))),
  });
}

describe('jobStragglerRule', () => {
  it('flags the one node of a job whose SM activity is far below its peers', () => {
    // Prepare
    const input = jobOf([{ sm_active: 0.86 }, { sm_active: 0.85 }, { sm_active: 0.87 }, { sm_active: 0.6 }]);
    // Act
    const { findings } = jobStragglerRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.map((f) => alertId(f.finding))).toEqual(['straggler:i-0node3#job:train-42']);
    expect(findings[0]?.finding.evidence).toMatchObject({ job: 'train-42', nodes: 4, sm_active_node: 0.6 });
  });

  it.each([
    ['near-identical nodes', [0.86, 0.85, 0.87, 0.84]],
    ['a spread with no outlier', [0.6, 0.7, 0.8, 0.9]],
    ['an outlier by z but less than 10 % below', [0.86, 0.86, 0.86, 0.8]],
    ['an idle job', [0.005, 0.004, 0.0, 0.006]],
  ])('stays quiet for %s', (_label, sm) => {
    // Prepare
    const input = jobOf(sm.map((sm_active) => ({ sm_active })));
    // Act
    const { judged, findings } = jobStragglerRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(judged).toBe(true);
    expect(findings).toEqual([]);
  });

  it('does not judge a job of two nodes (a median of two has no majority)', () => {
    // Prepare
    const input = jobOf([{ sm_active: 0.9 }, { sm_active: 0.2 }]);
    // Act
    const { findings } = jobStragglerRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings).toEqual([]);
  });

  it('without SM activity, flags a node low on power and temperature both, never one low on one', () => {
    // Prepare
    const both = jobOf([
      { power_w: 650, gpu_temp_c: 70 },
      { power_w: 655, gpu_temp_c: 71 },
      { power_w: 648, gpu_temp_c: 70 },
      { power_w: 420, gpu_temp_c: 55 },
    ]);
    const powerOnly = jobOf([
      { power_w: 650, gpu_temp_c: 70 },
      { power_w: 655, gpu_temp_c: 71 },
      { power_w: 648, gpu_temp_c: 70 },
      { power_w: 420, gpu_temp_c: 70 },
    ]);
    // Act
    const flagged = jobStragglerRule.evaluate(both, DEFAULT_RULE_CONTEXT, NOW).findings;
    const quiet = jobStragglerRule.evaluate(powerOnly, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(flagged.map((f) => f.finding.instance_id)).toEqual(['i-0node3']);
    expect(quiet).toEqual([]);
  });

  it('compares nodes only within one job tag', () => {
    // Prepare: three fast nodes in one job, three slow ones in another: no job has an outlier
    const a = jobOf([{ sm_active: 0.9 }, { sm_active: 0.9 }, { sm_active: 0.9 }], 'fast');
    const b = jobOf([{ sm_active: 0.3 }, { sm_active: 0.3 }, { sm_active: 0.3 }], 'slow');
    const input = fleet({
      instances: [
        ...(a.instances ?? []),
        ...(b.instances ?? []).map((i) => ({ ...i, instance_id: `${i.instance_id}b` })),
      ],
      nodeMeans: [...a.nodeMeans, ...b.nodeMeans.map((m) => ({ ...m, instance_id: `${m.instance_id}b` }))],
    });
    // Act
    const { findings } = jobStragglerRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings).toEqual([]);
  });
});

describe('stragglerCandidates', () => {
  it('keeps the members of jobs with at least the minimum of running nodes, and no untagged instance', () => {
    // Prepare
    const instances = [
      running('i-0a1', { tags: { job: 'big' } }),
      running('i-0b1', { tags: { job: 'small' } }),
      running('i-0a2', { tags: { job: 'big' } }),
      running('i-0c1', { tags: {} }),
      running('i-0a3', { tags: { job: 'big' } }),
      running('i-0b2', { tags: { job: 'small' } }),
    ];
    // Act
    const ids = stragglerCandidates(instances, 3).map((i) => i.instance_id);
    // Assess
    expect(ids).toEqual(['i-0a1', 'i-0a2', 'i-0a3']);
  });
});

describe('meansByNodeAndJob', () => {
  it('averages each metric over the windows that carry it, per instance and job, and leaves untagged windows out', () => {
    // Prepare
    const a = nodeWindows('i-0b', 'train', { sm_active: 0.5, power_w: 400 });
    const b = nodeWindows('i-0b', 'eval', { sm_active: 0.9 });
    const c = nodeWindows('i-0a', 'train', { sm_active: 0.7 }).map((w, k) =>
      k % 2 === 0 ? { ...w, metrics: { ...w.metrics, sm_active: 0.1 } } : w,
    );
    const untagged = nodeWindows('i-0a', 'x', { sm_active: 0 }).map(({ job: _job, ...w }) => w);
    // Act
    const means = meansByNodeAndJob([...a, ...b, ...c, ...untagged]);
    // Assess
    expect(means.map((m) => [m.instance_id, m.job])).toEqual([
      ['i-0a', 'train'],
      ['i-0b', 'eval'],
      ['i-0b', 'train'],
    ]);
    expect(means[0]?.sm_active).toBeCloseTo(0.4, 12);
    expect(Object.keys(means[1] ?? {}).sort()).toEqual(['instance_id', 'job', 'sm_active']);
    expect(means[1]?.sm_active).toBeCloseTo(0.9, 12);
    expect(means[2]?.sm_active).toBeCloseTo(0.5, 12);
    expect(means[2]?.power_w).toBeCloseTo(400, 9);
    expect(means[0]).not.toHaveProperty('power_w');
  });
});
