import { beforeEach, describe, expect, it } from 'vitest';
import { UnpublishedAlertsError } from '../../../lambdas/app/errors';
import { evaluateFleet, type FleetEvaluatorDeps } from '../../../lambdas/app/evaluate-fleet';
import {
  type CurPricedFleetReads,
  type CurTeamWasteQuery,
  DEFAULT_RULE_CONTEXT,
  FLEET_CUR_LOOKBACK_S,
  FLEET_FIRING_SCOPE,
  FleetListingError,
  type FleetMetricDatum,
  type FleetMetricSink,
  type FleetTeamRow,
  meansByNodeAndJob,
  type RunningInstance,
  type RunningInstances,
  StoreUnavailableError,
} from '../../../lambdas/domain';
import type { LastSeen, StoredGpuWindow, TelemetryStore, WasteGroupRow } from '../../../lambdas/domain/ports';
import { MemoryStateStore } from '../../chaos/memory-state-store';
import { ago, NOW, nodeWindows, running, teamRow } from '../domain/fleet/fleet-fixtures';
import { RecordingAlertSink, recordingLog } from '../handlers/fakes';

/** A store whose fleet reads answer from fields the test sets. */
class FleetReadsStore implements Pick<TelemetryStore, 'lastSeen' | 'nodeJobMeans' | 'queryWasteBy'> {
  seen: LastSeen[] = [];
  windows = new Map<string, StoredGpuWindow[]>();
  teams: WasteGroupRow[] = [];
  /** Every read, by port method: what a store such as Athena runs as one query each. */
  readonly reads: string[] = [];
  async lastSeen() {
    this.reads.push('lastSeen');
    return this.seen;
  }
  async nodeJobMeans() {
    this.reads.push('nodeJobMeans');
    return meansByNodeAndJob([...this.windows.values()].flat());
  }
  async queryWasteBy() {
    this.reads.push('queryWasteBy');
    return this.teams;
  }
}

/** CUR-priced team reads that answer from a field, recording each query (one Athena query each). */
class FakeCurReads implements CurPricedFleetReads {
  teams: FleetTeamRow[] | Error = [];
  readonly queries: CurTeamWasteQuery[] = [];
  constructor(private readonly reads: string[]) {}
  async teamWasteAtCurRates(query: CurTeamWasteQuery) {
    this.reads.push('teamWasteAtCurRates');
    this.queries.push(query);
    if (this.teams instanceof Error) throw this.teams;
    return this.teams;
  }
}

class FakeInstances implements RunningInstances {
  list: RunningInstance[] | Error = [];
  async listRunning() {
    if (this.list instanceof Error) throw this.list;
    return this.list;
  }
}

class RecordingMetrics implements FleetMetricSink {
  readonly published: FleetMetricDatum[][] = [];
  failWith: Error | undefined;
  async publish(data: readonly FleetMetricDatum[]) {
    if (this.failWith) throw this.failWith;
    this.published.push([...data]);
  }
}

const later = (s: number) => new Date(NOW.getTime() + s * 1000);

describe('evaluateFleet', () => {
  let store: FleetReadsStore;
  let state: MemoryStateStore;
  let alerts: RecordingAlertSink;
  let instances: FakeInstances;
  let metrics: RecordingMetrics;
  let log: ReturnType<typeof recordingLog>;
  let deps: FleetEvaluatorDeps;

  beforeEach(() => {
    store = new FleetReadsStore();
    state = new MemoryStateStore();
    alerts = new RecordingAlertSink();
    instances = new FakeInstances();
    metrics = new RecordingMetrics();
    log = recordingLog();
    deps = {
      store: store as unknown as TelemetryStore,
      state,
      alerts,
      instances,
      metrics,
      log,
      rules: DEFAULT_RULE_CONTEXT,
    };
  });

  it('fires agent_silent once, keeps quiet in the cooldown, and resolves when batches come back', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    store.seen = [{ instance_id: 'i-0aaa', instance_type: 'p5.48xlarge', last_seen: ago(600) }];
    // Act
    const first = await evaluateFleet(deps, NOW);
    const second = await evaluateFleet(deps, later(300));
    store.seen = [
      { instance_id: 'i-0aaa', instance_type: 'p5.48xlarge', last_seen: later(590).toISOString() },
    ];
    const third = await evaluateFleet(deps, later(600));
    // Assess
    expect(first.sent.map((a) => [a.id, a.status])).toEqual([['agent_silent:i-0aaa', 'firing']]);
    expect(second.sent).toEqual([]);
    expect(third.sent.map((a) => [a.id, a.status])).toEqual([['agent_silent:i-0aaa', 'resolved']]);
    expect(third.sent[0]?.subject).toMatch(/^\[RESOLVED\] agent_silent i-0aaa p5\.48xlarge: /);
    expect(await state.listFiringAlerts(FLEET_FIRING_SCOPE)).toEqual([]);
  });

  it('resolves agent_silent when the instance stops running', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    await evaluateFleet(deps, NOW);
    instances.list = [];
    // Act
    const after = await evaluateFleet(deps, later(300));
    // Assess
    expect(after.sent.map((a) => [a.id, a.status])).toEqual([['agent_silent:i-0aaa', 'resolved']]);
  });

  it('keeps fleet alerts out of the instance scope ingest reads, so a batch never resolves them', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    // Act
    await evaluateFleet(deps, NOW);
    // Assess
    expect(await state.listFiringAlerts('i-0aaa')).toEqual([]);
    expect((await state.listFiringAlerts(FLEET_FIRING_SCOPE)).map((f) => f.alert_id)).toEqual([
      'agent_silent:i-0aaa',
    ]);
  });

  it('judges no instance rule when EC2 cannot be asked: nothing fires or resolves for it, waste still judged', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    await evaluateFleet(deps, NOW);
    instances.list = new FleetListingError('us-east-1', 'throttled');
    store.teams = [teamRow('vision', 100, 80)];
    // Act
    const after = await evaluateFleet(deps, later(300));
    // Assess
    expect(after.instances).toBeUndefined();
    expect(after.judged).toEqual(['waste_rate']);
    expect(after.sent.map((a) => a.id)).toEqual(['waste_rate:team:vision']);
    expect((await state.listFiringAlerts(FLEET_FIRING_SCOPE)).map((f) => f.alert_id)).toContain(
      'agent_silent:i-0aaa',
    );
    expect(log.lines.some((l) => l.level === 'error' && l.message.includes('could not be listed'))).toBe(
      true,
    );
  });

  it('reads the recent windows of instances seen in the straggler span and fires per slow node', async () => {
    // Prepare
    const ids = ['i-0n0', 'i-0n1', 'i-0n2', 'i-0n3'];
    instances.list = ids.map((id) => running(id));
    store.seen = ids.map((id) => ({ instance_id: id, instance_type: 'p5.48xlarge', last_seen: ago(30) }));
    ids.forEach((id, i) => {
      store.windows.set(id, nodeWindows(id, 'train-42', { sm_active: i === 2 ? 0.5 : 0.86 }));
    });
    // Act
    const result = await evaluateFleet(deps, NOW);
    // Assess
    expect(result.sent.map((a) => a.id)).toEqual(['straggler:i-0n2#job:train-42']);
    expect(result.sent[0]?.attributes).toMatchObject({ rule: 'straggler', team: 'vision', job: 'train-42' });
  });

  it('judges only members of jobs with enough running nodes, whatever the store gives back', async () => {
    // Prepare: a 3-node job, and a 2-node job whose nodes' windows carry a third node's job tag
    const node = (id: string, job: string) => running(id, { tags: { job } });
    instances.list = [
      node('i-0a1', 'a'),
      node('i-0a2', 'a'),
      node('i-0a3', 'a'),
      node('i-0b1', 'b'),
      node('i-0b2', 'b'),
    ];
    store.seen = instances.list.map((i) => ({
      instance_id: i.instance_id,
      instance_type: 'p5.48xlarge',
      last_seen: ago(30),
    }));
    for (const id of ['i-0a1', 'i-0a2', 'i-0a3'])
      store.windows.set(id, nodeWindows(id, 'a', { sm_active: 0.86 }));
    store.windows.set('i-0b1', nodeWindows('i-0b1', 'a', { sm_active: 0.1 }));
    store.windows.set('i-0b2', nodeWindows('i-0b2', 'a', { sm_active: 0.1 }));
    // Act
    const result = await evaluateFleet(deps, NOW);
    // Assess: the slow nodes of job b are not candidates, so job a has no straggler
    expect(result.findings.filter((a) => a.id.startsWith('straggler'))).toEqual([]);
  });

  it('reads the store a constant number of times per run, not once per instance (100 instances in 10 jobs)', async () => {
    // Prepare
    instances.list = Array.from({ length: 100 }, (_, k) =>
      running(`i-0${String(k).padStart(3, '0')}`, { tags: { team: 'vision', job: `job-${k % 10}` } }),
    );
    store.seen = instances.list.map((i) => ({
      instance_id: i.instance_id,
      instance_type: 'p5.48xlarge',
      last_seen: ago(30),
    }));
    for (const i of instances.list) {
      const slow = i.instance_id === 'i-0007';
      store.windows.set(
        i.instance_id,
        nodeWindows(i.instance_id, i.tags.job ?? '', { sm_active: slow ? 0.4 : 0.86 }),
      );
    }
    // Act
    const result = await evaluateFleet(deps, NOW);
    // Assess
    expect(store.reads.sort()).toEqual(['lastSeen', 'nodeJobMeans', 'queryWasteBy']);
    expect(result.sent.map((a) => a.id)).toEqual(['straggler:i-0007#job:job-7']);
  });

  it('with a CUR, reads the team waste from it instead of the store: still three reads per run, 100 instances', async () => {
    // Prepare
    const cur = new FakeCurReads(store.reads);
    cur.teams = [
      {
        ...teamRow('vision', 100, 80),
        pricing: {
          cur_gpu_hours: 100 / 6.88,
          cur_usage_hour_from: '2026-03-10T21:00:00.000Z',
          cur_usage_hour_to: '2026-03-10T21:00:00.000Z',
        },
      },
    ];
    instances.list = Array.from({ length: 100 }, (_, k) =>
      running(`i-0${String(k).padStart(3, '0')}`, { tags: { team: 'vision', job: `job-${k % 10}` } }),
    );
    store.seen = instances.list.map((i) => ({
      instance_id: i.instance_id,
      instance_type: 'p5.48xlarge',
      last_seen: ago(30),
    }));
    for (const i of instances.list)
      store.windows.set(i.instance_id, nodeWindows(i.instance_id, i.tags.job ?? '', { sm_active: 0.86 }));
    // Act
    const result = await evaluateFleet({ ...deps, cur }, NOW);
    // Assess
    expect(store.reads.sort()).toEqual(['lastSeen', 'nodeJobMeans', 'teamWasteAtCurRates']);
    expect(cur.queries).toEqual([
      {
        from: new Date(NOW.getTime() - 3600_000),
        to: new Date(NOW.getTime() + 1),
        curFrom: new Date(NOW.getTime() - FLEET_CUR_LOOKBACK_S * 1000),
      },
    ]);
    const waste = result.sent.find((a) => a.id === 'waste_rate:team:vision');
    expect(waste?.body).toContain('price_source: cur');
    expect(waste?.body).toContain('2026-03-10T21:00:00.000Z');
  });

  it('falls back to the stored prices, and logs it, when the CUR cannot be read', async () => {
    // Prepare
    const cur = new FakeCurReads(store.reads);
    cur.teams = new StoreUnavailableError('StartQueryExecution', 'expected Athena to answer; retry later');
    store.teams = [teamRow('vision', 100, 80)];
    // Act
    const result = await evaluateFleet({ ...deps, cur }, NOW);
    // Assess
    expect(store.reads.sort()).toEqual(['lastSeen', 'queryWasteBy', 'teamWasteAtCurRates']);
    expect(result.sent.map((a) => a.id)).toEqual(['waste_rate:team:vision']);
    expect(result.sent[0]?.body).toContain('price_source: ingest');
    expect(log.lines.some((l) => l.level === 'error' && l.message.includes('CUR could not be read'))).toBe(
      true,
    );
  });

  it('does not swallow an unexpected CUR failure (a bug is not a missing CUR)', async () => {
    // Prepare
    const cur = new FakeCurReads(store.reads);
    cur.teams = new TypeError('boom');
    // Act / Assess
    await expect(evaluateFleet({ ...deps, cur }, NOW)).rejects.toThrow(TypeError);
  });

  it('does not ask for straggler means when no job has enough running nodes', async () => {
    // Prepare
    instances.list = [running('i-0a1', { tags: { job: 'a' } }), running('i-0a2', { tags: { job: 'a' } })];
    // Act
    await evaluateFleet(deps, NOW);
    // Assess
    expect(store.reads).not.toContain('nodeJobMeans');
  });

  it('publishes the fleet metrics, counts at 0 included, and each listed team with the Team dimension', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    store.teams = [teamRow('vision', 100, 25), teamRow(undefined, 50, 0)];
    // Act
    await evaluateFleet({ ...deps, metricTeams: new Set(['vision']) }, NOW);
    // Assess
    expect(metrics.published).toEqual([
      [
        { name: 'SilentAgents', unit: 'Count', value: 1 },
        { name: 'UnmonitoredUsdPerHour', unit: 'None', value: 55.04 },
        { name: 'Stragglers', unit: 'Count', value: 0 },
        { name: 'FleetWasteRate', unit: 'Percent', value: (100 * 25) / 150 },
        { name: 'FleetWastedUsdPerHour', unit: 'None', value: 25 },
        { name: 'FleetWasteRate', unit: 'Percent', value: 25, dimensions: { Team: 'vision' } },
        { name: 'FleetWastedUsdPerHour', unit: 'None', value: 25, dimensions: { Team: 'vision' } },
      ],
    ]);
  });

  it('gives the teams not on the METRICS_TEAMS list no series of their own (the fleet-wide ones count them)', async () => {
    // Prepare
    instances.list = [];
    store.teams = [teamRow('vision', 100, 25), teamRow('llm', 60, 30), teamRow('audio', 40, 10)];
    // Act
    await evaluateFleet({ ...deps, metricTeams: new Set(['llm']) }, NOW);
    // Assess
    const byTeam = metrics.published[0]?.filter((d) => d.dimensions !== undefined);
    expect(byTeam).toEqual([
      { name: 'FleetWasteRate', unit: 'Percent', value: 50, dimensions: { Team: 'llm' } },
      { name: 'FleetWastedUsdPerHour', unit: 'None', value: 30, dimensions: { Team: 'llm' } },
    ]);
    expect(
      metrics.published[0]?.find((d) => d.name === 'FleetWastedUsdPerHour' && !d.dimensions)?.value,
    ).toBe(65);
  });

  it('logs a metrics failure and still stands by the alerts it sent', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    metrics.failWith = new Error('Throttling');
    // Act
    const result = await evaluateFleet(deps, NOW);
    // Assess
    expect(result.sent).toHaveLength(1);
    expect(log.lines.some((l) => l.level === 'error' && l.message.includes('metrics'))).toBe(true);
  });

  it('throws UnpublishedAlertsError when SNS fails, and the next run sends the alert (no cooldown swallowed it)', async () => {
    // Prepare
    instances.list = [running('i-0aaa')];
    const failing = { publish: async () => Promise.reject(new Error('SNS down')) };
    // Act
    const run = evaluateFleet({ ...deps, alerts: failing }, NOW);
    // Assess
    await expect(run).rejects.toBeInstanceOf(UnpublishedAlertsError);
    const retry = await evaluateFleet(deps, later(300));
    expect(retry.sent.map((a) => a.id)).toEqual(['agent_silent:i-0aaa']);
  });
});
