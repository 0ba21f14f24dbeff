import { describe, expect, it } from 'vitest';
import type { GpuMetrics } from '../../../lambdas/contract';
import { MAX_GPUS_PER_BATCH } from '../../../lambdas/contract';
import {
  acceptedBatchMetrics,
  MAX_EMF_VALUES_PER_METRIC,
  MAX_METRIC_TEAMS,
  type MetricGroup,
  MetricsTeamsError,
  parseMetricsTeams,
  rejectedBatchMetrics,
  teamDimensionValue,
} from '../../../lambdas/domain';
import { flushWindow, makeBatch, NOW } from './batch-builder';
import { alertOf, gpuRowsOf } from './gpu-rows';

function metric(groups: readonly MetricGroup[], dimensions: Record<string, string>, name: string) {
  return groups
    .find((g) => JSON.stringify(g.dimensions) === JSON.stringify(dimensions))
    ?.metrics.find((m) => m.name === name);
}

const BUSY: GpuMetrics = {
  gpu_util: 1,
  sm_active: 0.8,
  sm_occupancy: 0.4,
  tensor_active: 0.5,
  dram_active: 0.3,
  pcie_rx_bytes_per_s: 2e9,
  compute_processes: 1,
};

describe('acceptedBatchMetrics', () => {
  it('gives the dimensionless series, the team series and one alert series per severity (alerts of two rules summed)', () => {
    // Prepare: GPU 0 busy for two windows (sm_active 0.8 then 0.4, 10 s and 30 s), GPU 1 idle with no profiling.
    const batch = makeBatch({
      windows: [
        flushWindow(0, BUSY, { start: '2026-03-10T09:59:20Z', end: '2026-03-10T09:59:30Z' }),
        flushWindow(
          0,
          { ...BUSY, sm_active: 0.4 },
          { start: '2026-03-10T09:59:30Z', end: '2026-03-10T10:00:00Z' },
        ),
        flushWindow(
          1,
          { gpu_util: 0, compute_processes: 0 },
          { start: '2026-03-10T09:59:50Z', end: '2026-03-10T10:00:00Z' },
        ),
      ],
      events: [
        { at: '2026-03-10T09:59:55Z', kind: 'xid', xid: 79, source: 'nvml', gpu_index: 1 },
        { at: '2026-03-10T09:59:56Z', kind: 'xid', xid: 48, source: 'nvml', gpu_index: 1 },
        { at: '2026-03-10T09:59:57Z', kind: 'agent_start', source: 'agent' },
      ],
    });
    const windows = gpuRowsOf(batch);
    const wasted = windows.reduce((s, w) => s + w.ledger.wasted_usd, 0);
    // Act
    const groups = acceptedBatchMetrics({
      batch,
      windows,
      alerts: [
        alertOf('xid_fatal', 'critical'),
        alertOf('gpu_lost', 'critical'),
        alertOf('xid_fatal', 'critical'),
      ],
      metricTeams: new Set(['llm']),
      now: NOW,
    });
    // Assess
    const smActiveGpu0 = ((0.8 * 10 + 0.4 * 30) / 40) * 100;
    expect(groups).toEqual([
      {
        dimensions: {},
        metrics: [
          { name: 'Batches', unit: 'Count', values: [1] },
          { name: 'FlushWindows', unit: 'Count', values: [3] },
          { name: 'XidEvents', unit: 'Count', values: [2] },
          { name: 'WastedUsd', unit: 'None', values: [wasted] },
          { name: 'AgentLag', unit: 'Seconds', values: [20] },
          { name: 'SmActive', unit: 'Percent', values: [smActiveGpu0] },
          { name: 'SmOccupancy', unit: 'Percent', values: [40] },
          { name: 'TensorActive', unit: 'Percent', values: [50] },
          { name: 'DramActive', unit: 'Percent', values: [30] },
          { name: 'PcieRxBytesPerSecond', unit: 'Bytes/Second', values: [2e9] },
          { name: 'Efficiency', unit: 'Percent', values: [smActiveGpu0, 0] },
        ],
      },
      {
        dimensions: { Team: 'llm' },
        metrics: [{ name: 'WastedUsd', unit: 'None', values: [wasted] }],
      },
      {
        dimensions: { Severity: 'critical' },
        metrics: [{ name: 'Alerts', unit: 'Count', values: [3] }],
      },
    ]);
    expect(wasted).toBeGreaterThan(0);
  });

  it('leaves out a metric no window measured instead of sending 0', () => {
    // Prepare: gpu_util only (no profiling source): no SM, tensor, DRAM or PCIe numbers.
    const batch = makeBatch({ windows: [flushWindow(0, { gpu_util: 0.5, compute_processes: 1 })] });
    // Act
    const groups = acceptedBatchMetrics({
      batch,
      windows: gpuRowsOf(batch),
      alerts: [],
      metricTeams: new Set(),
      now: NOW,
    });
    // Assess
    const names = groups.flatMap((g) => g.metrics.map((m) => `${JSON.stringify(g.dimensions)} ${m.name}`));
    expect(names).toEqual([
      '{} Batches',
      '{} FlushWindows',
      '{} XidEvents',
      '{} WastedUsd',
      '{} AgentLag',
      '{} Efficiency',
      '{"Team":"other"} WastedUsd',
    ]);
    expect(metric(groups, {}, 'Efficiency')?.values).toEqual([50]);
  });

  it('counts firing alerts only: a resolve message is not an alert', () => {
    // Prepare
    const batch = makeBatch({ windows: [flushWindow(0, BUSY)] });
    // Act
    const groups = acceptedBatchMetrics({
      batch,
      windows: gpuRowsOf(batch),
      alerts: [
        alertOf('tensor_idle', 'warning', { status: 'resolved' }),
        alertOf('idle_billed', 'warning', { status: 'firing' }),
      ],
      metricTeams: new Set(),
      now: NOW,
    });
    // Assess
    expect(groups.filter((g) => 'Severity' in g.dimensions)).toEqual([
      {
        dimensions: { Severity: 'warning' },
        metrics: [{ name: 'Alerts', unit: 'Count', values: [1] }],
      },
    ]);
  });

  it('sends no team series and no lag for a batch of events only', () => {
    // Prepare
    const batch = makeBatch({
      events: [
        { at: '2026-03-10T10:00:05Z', kind: 'xid', xid: 79, source: 'kmsg', pci_bus_id: '0000:53:00.0' },
      ],
    });
    // Act
    const groups = acceptedBatchMetrics({ batch, windows: [], alerts: [], metricTeams: new Set(), now: NOW });
    // Assess
    expect(groups).toEqual([
      {
        dimensions: {},
        metrics: [
          { name: 'Batches', unit: 'Count', values: [1] },
          { name: 'FlushWindows', unit: 'Count', values: [0] },
          { name: 'XidEvents', unit: 'Count', values: [1] },
          { name: 'WastedUsd', unit: 'None', values: [0] },
        ],
      },
    ]);
  });

  it('measures agent lag from the newest window of any kind, never below 0', () => {
    // Prepare: a horizon ends later than the flush window; the server clock is behind both.
    const batch = makeBatch({
      windows: [
        flushWindow(0, BUSY, { end: '2026-03-10T10:00:10Z' }),
        flushWindow(0, BUSY, { kind: 'horizon', start: '2026-03-10T09:45:15Z', end: '2026-03-10T10:00:15Z' }),
      ],
    });
    // Act
    const lag = (now: Date) =>
      metric(
        acceptedBatchMetrics({ batch, windows: gpuRowsOf(batch), alerts: [], metricTeams: new Set(), now }),
        {},
        'AgentLag',
      )?.values;
    // Assess
    expect(lag(new Date('2026-03-10T10:00:20Z'))).toEqual([5]);
    expect(lag(new Date('2026-03-10T10:00:14Z'))).toEqual([0]);
  });
});

describe('per-GPU samples', () => {
  it('fit in one EMF document: a batch holds fewer GPUs than a metric may carry values', () => {
    // Powertools flushes a metric at 100 values and clears the dimensions with it, which would
    // move the rest of a Team group's samples to the dimensionless series.
    expect(MAX_GPUS_PER_BATCH).toBeLessThanOrEqual(MAX_EMF_VALUES_PER_METRIC);
  });

  it('gives one value per GPU of a full batch', () => {
    // Prepare
    const batch = makeBatch({
      windows: Array.from({ length: MAX_GPUS_PER_BATCH }, (_, i) => flushWindow(i, { sm_active: i / 100 })),
    });
    // Act
    const groups = acceptedBatchMetrics({
      batch,
      windows: gpuRowsOf(batch),
      alerts: [],
      metricTeams: new Set(),
      now: NOW,
    });
    // Assess
    expect(metric(groups, {}, 'SmActive')?.values).toHaveLength(MAX_GPUS_PER_BATCH);
    expect(metric(groups, { Team: 'other' }, 'SmActive')).toBeUndefined();
  });
});

describe('rejectedBatchMetrics', () => {
  it.each([
    [400, '4xx'],
    [403, '4xx'],
    [413, '4xx'],
    [415, '4xx'],
    [500, '5xx'],
    [503, '5xx'],
  ])('counts a %i answer under StatusClass %s', (status, statusClass) => {
    // Act
    const groups = rejectedBatchMetrics(status);
    // Assess
    expect(groups).toEqual([
      {
        dimensions: { StatusClass: statusClass },
        metrics: [{ name: 'RejectedBatches', unit: 'Count', values: [1] }],
      },
    ]);
  });
});

describe('teamDimensionValue', () => {
  it.each([
    ['llm', 'llm'],
    ['vision', 'other'],
    ['LLM', 'other'],
    ['', 'untagged'],
    [undefined, 'untagged'],
  ])('maps team %j to %j when the deployment lists llm', (team, value) => {
    // Act / Assess
    expect(teamDimensionValue(team, new Set(['llm']))).toBe(value);
  });
});

describe('parseMetricsTeams', () => {
  it('reads a comma-separated list, ignoring blanks and spaces', () => {
    // Act / Assess
    expect([...parseMetricsTeams(' llm, vision ,,ml-infra ')]).toEqual(['llm', 'vision', 'ml-infra']);
    expect(parseMetricsTeams(undefined).size).toBe(0);
    expect(parseMetricsTeams('').size).toBe(0);
  });

  it.each([
    ['a team name with a space', 'llm,data science', /data science/],
    ['a reserved value', 'llm,other', /`other`/],
    ['another reserved value', 'untagged', /`untagged`/],
    ['a name over 64 characters', 'x'.repeat(65), /1–64/],
    [
      'too many teams',
      Array.from({ length: MAX_METRIC_TEAMS + 1 }, (_, i) => `t${i}`).join(','),
      /at most 50 teams, got 51/,
    ],
  ])('refuses %s', (_case, value, message) => {
    // Act / Assess
    expect(() => parseMetricsTeams(value)).toThrow(MetricsTeamsError);
    expect(() => parseMetricsTeams(value)).toThrow(message);
  });
});
