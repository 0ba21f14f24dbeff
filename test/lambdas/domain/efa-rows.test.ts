import { describe, expect, it } from 'vitest';
import { efaRowsOf, priceFor, storeRowsOf } from '../../../lambdas/domain';
import {
  DEVICE_COUNTERS,
  P5_EFA_DEVICES,
  PORT_COUNTERS_BASE,
  PORT_COUNTERS_R2_17,
} from '../../fixtures/efa/make-sysfs';
import { HOST, makeBatch } from './batch-builder';

const T0 = Date.parse('2026-03-10T10:00:00Z');
const WINDOW_MS = 10_000;
const PORT_COUNTERS = [...PORT_COUNTERS_BASE, ...PORT_COUNTERS_R2_17];

/** Window `i` (10 s each from T0) of one device/port, each counter's delta `base + i`. */
function entry(device: string, port: number, i: number, base = 1): Record<string, unknown> {
  const names = port === 0 ? DEVICE_COUNTERS : PORT_COUNTERS;
  return {
    start: new Date(T0 + i * WINDOW_MS).toISOString(),
    end: new Date(T0 + (i + 1) * WINDOW_MS).toISOString(),
    device,
    port,
    deltas: Object.fromEntries(names.map((n, k) => [n, base * (k + 1) + i])),
  };
}

/** What a p5.48xlarge agent merges into one 60 s request: 6 windows × (32 devices × ports 0 and 1), window by window. */
function p5Minute(windows: readonly number[] = [0, 1, 2, 3, 4, 5]): Record<string, unknown>[] {
  return windows.flatMap((i) => P5_EFA_DEVICES.flatMap((d) => [entry(d, 0, i), entry(d, 1, i)]));
}

describe('efaRowsOf', () => {
  it("stores a p5's merged minute as one row per device and port, spanning the minute, each delta summed", () => {
    // Prepare
    const batch = makeBatch({ efa: p5Minute() });
    expect(batch.efa).toHaveLength(384);

    // Act
    const rows = efaRowsOf(batch);

    // Assess: 64 rows instead of 384, every (device, port) once
    expect(rows).toHaveLength(64);
    expect(new Set(rows.map((r) => `${r.device}/${r.port}`)).size).toBe(64);
    for (const r of rows) {
      expect(r).toMatchObject({
        start: '2026-03-10T10:00:00.000Z',
        time: '2026-03-10T10:01:00.000Z',
        instance_id: HOST.instance_id,
        instance_type: HOST.instance_type,
        seq: 1,
      });
    }
    const port1 = rows.find((r) => r.device === P5_EFA_DEVICES[3] && r.port === 1);
    // counter k's delta in window i is (k + 1) + i: summed over i = 0..5 → 6 (k + 1) + 15
    expect(port1?.deltas).toEqual(Object.fromEntries(PORT_COUNTERS.map((n, k) => [n, 6 * (k + 1) + 15])));
    const device = rows.find((r) => r.device === P5_EFA_DEVICES[31] && r.port === 0);
    expect(Object.keys(device?.deltas ?? {})).toEqual([...DEVICE_COUNTERS]);
    expect(device?.deltas.submitted_cmds).toBe(6 + 15);
  });

  it('starts a new row after a gap (a window not measured), so no time is claimed that was not', () => {
    // Prepare: windows 0, 1, then 4, 5 (the agent restarted between 10:00:20 and 10:00:40)
    const batch = makeBatch({ efa: p5Minute([0, 1, 4, 5]) });

    // Act
    const rows = efaRowsOf(batch).filter((r) => r.device === P5_EFA_DEVICES[0] && r.port === 1);

    // Assess
    expect(rows.map((r) => [r.start, r.time, r.deltas.tx_bytes])).toEqual([
      ['2026-03-10T10:00:00.000Z', '2026-03-10T10:00:20.000Z', 1 + 2],
      ['2026-03-10T10:00:40.000Z', '2026-03-10T10:01:00.000Z', 5 + 6],
    ]);
    expect(efaRowsOf(batch)).toHaveLength(128);
  });

  it('sums windows given out of order and only those of the same device and port', () => {
    // Prepare: a replay's windows in reverse order, two devices
    const efa = [2, 1, 0].flatMap((i) => [entry('rdmap16s27', 1, i), entry('rdmap32s27', 1, i, 100)]);

    // Act
    const rows = efaRowsOf(makeBatch({ efa }));

    // Assess
    expect(rows.map((r) => [r.device, r.start, r.time, r.deltas.tx_pkts])).toEqual([
      ['rdmap16s27', '2026-03-10T10:00:00.000Z', '2026-03-10T10:00:30.000Z', 2 * 3 + 3],
      ['rdmap32s27', '2026-03-10T10:00:00.000Z', '2026-03-10T10:00:30.000Z', 200 * 3 + 3],
    ]);
  });

  it('starts a new row when the counters change, so a counter in a row covers its whole span', () => {
    // Prepare: the first window lacks rx_drops (not yet read twice), the next two have it
    const first = entry('rdmap16s27', 1, 0);
    const { rx_drops: _dropped, ...without } = first.deltas as Record<string, number>;
    const efa = [{ ...first, deltas: without }, entry('rdmap16s27', 1, 1), entry('rdmap16s27', 1, 2)];

    // Act
    const rows = efaRowsOf(makeBatch({ efa }));

    // Assess
    expect(rows.map((r) => [r.start, r.time, r.deltas.rx_drops, r.deltas.tx_bytes])).toEqual([
      ['2026-03-10T10:00:00.000Z', '2026-03-10T10:00:10.000Z', undefined, 1],
      ['2026-03-10T10:00:10.000Z', '2026-03-10T10:00:30.000Z', 5 * 2 + 1 + 2, 2 + 3],
    ]);
  });

  it('starts a new row rather than sum past a safe integer', () => {
    // Prepare: two windows whose tx_bytes sum exceeds 2^53 − 1
    const big = (i: number): Record<string, unknown> => ({
      ...entry('rdmap16s27', 1, i),
      deltas: { tx_bytes: Number.MAX_SAFE_INTEGER - 1 },
    });

    // Act
    const rows = efaRowsOf(makeBatch({ efa: [big(0), big(1)] }));

    // Assess
    expect(rows.map((r) => r.deltas.tx_bytes)).toEqual([
      Number.MAX_SAFE_INTEGER - 1,
      Number.MAX_SAFE_INTEGER - 1,
    ]);
  });

  it('gives a batch retried merged with a newer window the same row starts, each ending later (the rule a query dedupes by)', () => {
    // Prepare: the agent resends its spooled windows oldest first after a 5xx that came after the
    // store write, now with one more window, and a gap in both
    const first = efaRowsOf(makeBatch({ efa: p5Minute([0, 1, 3, 4]) }));
    const retried = efaRowsOf(makeBatch({ efa: p5Minute([0, 1, 3, 4, 5]) }));

    // Assess
    const key = (r: (typeof first)[number]): string => `${r.device}/${r.port}/${r.start}`;
    expect(retried.map(key)).toEqual(first.map(key));
    const later = new Map(retried.map((r) => [key(r), r.time]));
    for (const r of first)
      expect(Date.parse(later.get(key(r)) ?? '')).toBeGreaterThanOrEqual(Date.parse(r.time));
    expect(retried.filter((r) => r.time === '2026-03-10T10:01:00.000Z')).toHaveLength(64);
  });

  it('is what storeRowsOf writes, and nothing without EFA entries', () => {
    // Prepare
    const price = priceFor('p5.48xlarge', 'us-east-1', undefined, 8);
    const input = { price, broken: new Map(), diagnoses: new Map() };
    const batch = makeBatch({ efa: p5Minute() });

    // Act + Assess
    expect(storeRowsOf(batch, input).efa).toEqual(efaRowsOf(batch));
    expect(storeRowsOf(makeBatch({}), input).efa).toEqual([]);
  });
});
