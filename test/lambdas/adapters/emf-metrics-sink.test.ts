import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EmfMetricsSink } from '../../../lambdas/adapters/emf-metrics-sink';
import { type MetricGroup, type MetricName, rejectedBatchMetrics } from '../../../lambdas/domain';
import { recordingLog } from '../handlers/fakes';
import { emfLines } from './emf-lines';

const AT = new Date('2026-11-21T10:00:00.000Z');

describe('EmfMetricsSink', () => {
  beforeEach(() => {
    // Powertools checks an EMF timestamp against the clock (14 days back, 2 hours ahead).
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(AT);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes one EMF line per group, without the service dimension, in the GpuSentinel namespace', async () => {
    // Prepare
    const log = recordingLog();
    const sink = new EmfMetricsSink({ log, namespace: 'GpuSentinel' });
    const groups: MetricGroup[] = [
      {
        dimensions: {},
        metrics: [
          { name: 'Batches', unit: 'Count', values: [1] },
          { name: 'SmActive', unit: 'Percent', values: [80, 12.5] },
        ],
      },
      { dimensions: { Team: 'llm' }, metrics: [{ name: 'WastedUsd', unit: 'None', values: [0.25] }] },
    ];
    // Act
    const lines = await emfLines(() => sink.emit(groups, AT));
    // Assess
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      {
        _aws: {
          Timestamp: AT.getTime(),
          CloudWatchMetrics: [
            {
              Namespace: 'GpuSentinel',
              Dimensions: [[]],
              Metrics: [
                { Name: 'Batches', Unit: 'Count' },
                { Name: 'SmActive', Unit: 'Percent' },
              ],
            },
          ],
        },
        Batches: 1,
        SmActive: [80, 12.5],
      },
      {
        _aws: {
          Timestamp: AT.getTime(),
          CloudWatchMetrics: [
            {
              Namespace: 'GpuSentinel',
              Dimensions: [['Team']],
              Metrics: [{ Name: 'WastedUsd', Unit: 'None' }],
            },
          ],
        },
        Team: 'llm',
        WastedUsd: 0.25,
      },
    ]);
    expect(log.lines).toEqual([]);
  });

  it('writes a refused batch as RejectedBatches under its status class', async () => {
    // Prepare
    const sink = new EmfMetricsSink({ log: recordingLog(), namespace: 'GpuSentinel' });
    // Act
    const lines = await emfLines(() => sink.emit(rejectedBatchMetrics(413), AT));
    // Assess
    expect(lines).toEqual([
      `{"_aws":{"Timestamp":${AT.getTime()},"CloudWatchMetrics":[{"Namespace":"GpuSentinel","Dimensions":[["StatusClass"]],"Metrics":[{"Name":"RejectedBatches","Unit":"Count"}]}]},"StatusClass":"4xx","RejectedBatches":1}`,
    ]);
  });

  it('leaves out values that are not finite (EMF would write null) and says how many', async () => {
    // Prepare
    const log = recordingLog();
    const sink = new EmfMetricsSink({ log, namespace: 'GpuSentinel' });
    // Act
    const lines = await emfLines(() =>
      sink.emit(
        [
          {
            dimensions: {},
            metrics: [
              { name: 'SmActive', unit: 'Percent', values: [Number.NaN, 40, Number.POSITIVE_INFINITY] },
              { name: 'AgentLag', unit: 'Seconds', values: [Number.NaN] },
            ],
          },
        ],
        AT,
      ),
    );
    // Assess
    expect(lines.map((l) => JSON.parse(l))).toMatchObject([
      { _aws: { CloudWatchMetrics: [{ Metrics: [{ Name: 'SmActive', Unit: 'Percent' }] }] }, SmActive: 40 },
    ]);
    expect(lines[0]).not.toContain('AgentLag');
    expect(log.lines).toEqual([
      { level: 'warn', message: 'metric values not finite; left out', data: { dropped: 3 } },
    ]);
  });

  it('logs and returns when Powertools refuses a metric, so a batch never fails on metrics', async () => {
    // Prepare: a name CloudWatch refuses (empty) makes Powertools throw.
    const log = recordingLog();
    const sink = new EmfMetricsSink({ log, namespace: 'GpuSentinel' });
    const bad: MetricGroup[] = [
      { dimensions: {}, metrics: [{ name: '' as MetricName, unit: 'Count', values: [1] }] },
    ];
    // Act
    const lines = await emfLines(() => sink.emit(bad, AT));
    // Assess
    expect(lines).toEqual([]);
    expect(log.lines).toEqual([
      {
        level: 'error',
        message: 'metrics not emitted; the batch is unaffected',
        data: { error: expect.stringMatching(/metric name/) },
      },
    ]);
    // The sink is usable again: nothing of the failed emit leaks into the next line.
    expect(await emfLines(() => sink.emit(rejectedBatchMetrics(500), AT))).toHaveLength(1);
  });

  it('writes nothing when POWERTOOLS_METRICS_DISABLED is true', async () => {
    // Prepare
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    try {
      const sink = new EmfMetricsSink({ log: recordingLog(), namespace: 'GpuSentinel' });
      // Act
      const lines = await emfLines(() => sink.emit(rejectedBatchMetrics(400), AT));
      // Assess
      expect(lines).toEqual([]);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
