import { afterEach, describe, expect, it } from 'vitest';
import { AgentLoop } from '../../../agent/agent-loop';
import { BatchBuilder } from '../../../agent/send/batcher';
import { MemorySink } from '../../../agent/send/memory-sink';
import { NVML_EDGE_FIELDS, NVML_FIELD, NVML_METRIC_ROWS, NvmlGpuSource } from '../../../agent/sources/nvml';
import type { AgentSource } from '../../../agent/sources/source';
import type { SourceRegistry } from '../../../agent/sources/source-registry';
import { COLUMN_INDEX } from '../../../agent/window/gpu-row';
import { EDGE_COLUMNS } from '../../../agent/window/window-edges';
import { type GpuWindow, parseBatch } from '../../../lambdas/contract';
import {
  fakeNvmlCallCount,
  fakeNvmlFieldRequests,
  fakeNvmlPath,
  setFakeNvmlEnv,
} from '../../setup/fake-nvml';
import { openSources } from '../fixtures/agent-sources';

const T0 = Date.parse('2026-11-21T10:00:00.000Z');
const GPUS = 8;

/** The NVML functions of the metric table's edge rows, and of its poll rows (calls per GPU and reading). */
const EDGE_CALLS = {
  nvmlDeviceGetEnforcedPowerLimit: 1,
  nvmlDeviceGetTotalEnergyConsumption: 1,
  nvmlDeviceGetTotalEccErrors: 4,
  nvmlDeviceGetRemappedRows: 1,
  nvmlDeviceGetViolationStatus: 1,
  nvmlDeviceGetPcieReplayCounter: 1,
  nvmlDeviceGetRetiredPagesPendingStatus: 1,
} as const;
const POLL_CALLS = {
  nvmlDeviceGetUtilizationRates: 1,
  nvmlDeviceGetPowerUsage: 1,
  nvmlDeviceGetClockInfo: 2,
  nvmlDeviceGetFieldValues: 1,
} as const;
const POLL_FIELDS = [NVML_FIELD.MEMORY_TEMP, NVML_FIELD.PCIE_COUNT_RX_BYTES] as const;

let registry: SourceRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
  setFakeNvmlEnv({});
});

/** The counts of every function and field id of interest, now. */
function counts(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const fn of [...Object.keys(EDGE_CALLS), ...Object.keys(POLL_CALLS)]) out[fn] = fakeNvmlCallCount(fn);
  for (const id of [...NVML_EDGE_FIELDS, ...POLL_FIELDS]) out[`field ${id}`] = fakeNvmlFieldRequests(id);
  return out;
}

/** `after − before`, per key. */
function diff(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
}

/**
 * The agent loop on the fake NVML (p5: 8 H100), 1 s polls on a hand-moved clock, three 10 s windows.
 * `everyPoll` reads NVML in full at every poll (the reference: every column at every poll).
 * @returns the calls made in each window, and the flush windows
 */
async function runThreeWindows(
  everyPoll: boolean,
): Promise<{ perWindow: Record<string, number>[]; windows: GpuWindow[] }> {
  setFakeNvmlEnv({
    PRESET: 'p5',
    UTIL_GPU: 40,
    PROCESSES: 1,
    RETIRED_PAGES_PENDING: 0,
    POWER_VIOLATION_PCT: 20,
  });
  let t = T0;
  const clock = (): Date => new Date(t);
  const nvml = new NvmlGpuSource({ libraryPath: fakeNvmlPath() });
  const source: AgentSource = everyPoll
    ? {
        name: 'nvml-every-poll',
        open: (context) => nvml.open(context),
        identity: () => nvml.identity(),
        sample: (into, now) => nvml.sample(into, now, true),
        close: () => nvml.close(),
      }
    : nvml;
  registry = await openSources([source], clock);
  const loop = new AgentLoop({
    sources: registry,
    host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
    agent: { version: '0.1.0', profiling_source: 'gpm' },
    builder: new BatchBuilder({ clock }),
    delivery: new MemorySink(),
    flushIntervalS: 10,
    sendIntervalS: 3600,
    clock,
  });
  const perWindow: Record<string, number>[] = [];
  const windows: GpuWindow[] = [];
  let before = counts();
  for (let s = 1; s <= 30; s++) {
    t = T0 + s * 1000;
    loop.poll();
    if (s % 10 !== 0) continue;
    for (const batch of await loop.flush()) {
      windows.push(...parseBatch(JSON.parse(JSON.stringify(batch)), clock()).windows);
    }
    const now = counts();
    perWindow.push(diff(before, now));
    before = now;
  }
  await registry.close();
  registry = undefined;
  return { perWindow, windows };
}

/** Calls per window for `gpus` GPUs, `edgeReads` edge readings and 10 polls. */
function expected(edgeReads: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [fn, perReading] of Object.entries(EDGE_CALLS)) out[fn] = GPUS * perReading * edgeReads;
  for (const [fn, perReading] of Object.entries(POLL_CALLS)) out[fn] = GPUS * perReading * 10;
  for (const id of NVML_EDGE_FIELDS) out[`field ${id}`] = GPUS * edgeReads;
  for (const id of POLL_FIELDS) out[`field ${id}`] = GPUS * 10;
  return out;
}

describe('the agent on NVML reads cumulative counters once per window', () => {
  it('calls each edge function once per GPU and 10 s window (twice in the first: it opens with a reading), each poll function 10 times', async () => {
    // Act
    const { perWindow } = await runThreeWindows(false);

    // Assess: window 1 reads its opening edge at its first poll; windows 2 and 3 open with the
    // closing reading of the window before, so each edge call is made once per GPU, not twice
    expect(perWindow).toEqual([expected(2), expected(1), expected(1)]);
  });

  it('sends the same metrics as reading every NVML call at every poll, none dropped', async () => {
    // Act
    const edges = await runThreeWindows(false);
    const everyPoll = await runThreeWindows(true);

    // Assess: the same windows with the same metrics; the values that do not move with the fake's
    // wall clock (its counters grow in real time, the loop's clock is moved by hand) are equal
    expect(edges.windows.map((w) => [w.kind, w.gpu.index])).toEqual(
      everyPoll.windows.map((w) => [w.kind, w.gpu.index]),
    );
    edges.windows.forEach((window, i) => {
      const reference = everyPoll.windows[i] as GpuWindow;
      expect(Object.keys(window.metrics).sort()).toEqual(Object.keys(reference.metrics).sort());
      const { metrics } = window;
      for (const name of [
        'gpu_util',
        'fb_used_bytes',
        'mem_temp_c',
        'power_limit_w',
        'ecc_sbe_volatile',
        'ecc_dbe_volatile',
        'ecc_sbe_volatile_delta',
        'pcie_replay_count',
        'pcie_replay_delta',
        'nvlink_crc_errors',
        'nvlink_crc_errors_delta',
        'remapped_rows_pending',
        'retired_pages_pending',
        'compute_processes',
      ] as const)
        expect([name, metrics[name]]).toEqual([name, reference.metrics[name]]);
      expect(window.processes).toEqual(reference.processes);
    });
    expect(edges.windows.filter((w) => w.kind === 'flush')).toHaveLength(3 * GPUS);
    for (const w of edges.windows.slice(GPUS)) expect(w.metrics).toHaveProperty('energy_j');
  });

  it('reads at the edges only the columns the loop carries from one window to the next', () => {
    // Assess: an edge row or an edge field id filling an instant column would leave it absent
    // on 9 polls of 10 and wrong in the window
    const edgeRowColumns = NVML_METRIC_ROWS.filter((row) => row.cadence === 'edge').flatMap((row) =>
      row.fields.map((field) => COLUMN_INDEX[field as keyof typeof COLUMN_INDEX]),
    );
    const edgeFieldColumns = [
      COLUMN_INDEX.nvlink_crc_errors,
      COLUMN_INDEX.nvlink_tx_bytes_total,
      COLUMN_INDEX.nvlink_rx_bytes_total,
      COLUMN_INDEX.pcie_tx_bytes_total,
    ];
    for (const column of [...edgeRowColumns, ...edgeFieldColumns]) expect(EDGE_COLUMNS).toContain(column);
    expect(NVML_EDGE_FIELDS).not.toContain(NVML_FIELD.PCIE_COUNT_RX_BYTES);
    expect(NVML_EDGE_FIELDS).not.toContain(NVML_FIELD.MEMORY_TEMP);
  });
});
