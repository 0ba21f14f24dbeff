import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Batch } from '../../lambdas/contract';
import { efaRowsOf } from '../../lambdas/domain/efa-rows';
import { meansByNodeAndJob } from '../../lambdas/domain/fleet/job-straggler';
import { type TelemetryStore, WASTE_GROUPS, type WasteGroup } from '../../lambdas/domain/ports';
import { STRAGGLER_METRICS } from '../../lambdas/domain/rules/straggler';
import type { Diagnosis, EfaWindowRow, GpuWindowRow, StoreRows } from '../../lambdas/domain/types';
import { batchRows, efaRow, gpuRow, ledger } from './rows';

/** What a conformance run needs: a fresh, empty store, and how to dispose of it. */
export type MakeTelemetryStore = () => Promise<{ store: TelemetryStore; close?: () => Promise<void> }>;

const T0 = Date.parse('2026-03-10T12:00:00.000Z');
const at = (s: number): string => new Date(T0 + s * 1000).toISOString();
/** A batch carrying `rows` as its contract `efa[]` entries (what `efaRowsOf` reads). */
const batchOf = (rows: readonly EfaWindowRow[]): Batch => ({
  schema: 'gpu-sentinel/v1',
  batch_id: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
  seq: 7,
  sent_at: at(61),
  host: { instance_id: 'i-0123456789abcdef0', instance_type: 'p5.48xlarge', region: 'us-east-1' },
  agent: { version: '0.1.0', profiling_source: 'gpm' },
  windows: [],
  efa: rows.map((r) => ({ start: r.start, end: r.time, device: r.device, port: r.port, deltas: r.deltas })),
});
const only = (gpu: GpuWindowRow[]): StoreRows => ({ gpu, efa: [], events: [] });
const sum = (rows: readonly GpuWindowRow[], f: (r: GpuWindowRow) => number): number =>
  rows.reduce((a, r) => a + f(r), 0);

/**
 * The `TelemetryStore` contract (docs/design.md §4), run against every store adapter: batch writes count
 * every row, retried batches are stored once, a newer seq replaces, optional dimensions may be
 * absent, and (with `readBack`) `queryWaste` sums the stored ledger over [from, to).
 *
 * @param name - adapter name shown in the test report
 * @param makeStore - makes a fresh, empty store per test
 * @param opts - `readBack`: the store can answer `queryWaste` (false for a write-only mock)
 */
export function describeTelemetryStoreContract(
  name: string,
  makeStore: MakeTelemetryStore,
  opts: { readBack: boolean },
): void {
  describe(`TelemetryStore contract: ${name}`, () => {
    let store: TelemetryStore;
    let close: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      const made = await makeStore();
      store = made.store;
      close = made.close;
    });

    afterEach(async () => {
      await close?.();
    });

    it('writes all rows of a batch', async () => {
      // Prepare
      const rows = batchRows(8);

      // Act
      const result = await store.write(rows);

      // Assess
      expect(result).toEqual({ written: 10, rejected: [] });
    });

    it("writes a batch's EFA rows as efaRowsOf builds them: one per device and port spanning the minute, deltas summed", async () => {
      // Prepare: a p5 minute (6 windows × 32 devices × ports 0 and 1), the sums near 2^53
      const efa = Array.from({ length: 6 }, (_, w) =>
        Array.from({ length: 64 }, (_, e) =>
          efaRow({
            start: at(10 * w),
            time: at(10 * (w + 1)),
            device: `rdmap${16 + (e >> 1)}s27`,
            port: e & 1,
            deltas: { tx_bytes: Math.floor(Number.MAX_SAFE_INTEGER / 6), rx_drops: w },
          }),
        ),
      ).flat();
      const rows = efaRowsOf(batchOf(efa));

      // Act
      const result = await store.write({ gpu: [], efa: rows, events: [] });

      // Assess
      expect(rows).toHaveLength(64);
      expect(rows[0]).toMatchObject({ start: at(0), time: at(60), deltas: { rx_drops: 15 } });
      expect(result).toEqual({ written: 64, rejected: [] });
    });

    it('stores a retried batch (same seq) once', async () => {
      // Prepare
      const rows = batchRows(8);
      await store.write(rows);

      // Act
      const again = await store.write(rows);

      // Assess
      expect(again).toEqual({ written: 10, rejected: [] });
      if (opts.readBack) {
        const report = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 60_000) });
        expect(report).toHaveLength(8);
        for (const r of report) expect(r.cost_usd).toBeCloseTo(rows.gpu[0]!.ledger.cost_usd, 12);
      }
    });

    it('overwrites a row when a newer seq comes for the same key', async () => {
      // Prepare
      const old = gpuRow({ seq: 7, ledger: ledger({ efficiency: 0.4 }) });
      const newer = gpuRow({ seq: 8, ledger: ledger({ efficiency: 0.9 }) });
      await store.write(only([old]));

      // Act
      const result = await store.write(only([newer]));

      // Assess
      expect(result).toEqual({ written: 1, rejected: [] });
      if (opts.readBack) {
        const [row] = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 60_000) });
        expect(row?.efficiency).toBeCloseTo(0.9, 12);
        expect(row?.wasted_usd).toBeCloseTo(newer.ledger.wasted_usd, 12);
      }
    });

    it('keeps the newer row when an older seq comes late, and counts it as written', async () => {
      // Prepare
      const newer = gpuRow({ seq: 8, ledger: ledger({ efficiency: 0.9 }) });
      const old = gpuRow({ seq: 7, ledger: ledger({ efficiency: 0.4 }) });
      await store.write(only([newer]));

      // Act
      const result = await store.write(only([old]));

      // Assess
      expect(result).toEqual({ written: 1, rejected: [] });
      if (opts.readBack) {
        const [row] = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 60_000) });
        expect(row?.efficiency).toBeCloseTo(0.9, 12);
      }
    });

    it('accepts rows whose optional dimensions are absent', async () => {
      // Prepare
      const { az: _az, team: _team, job: _job, gpu_uuid: _uuid, gpu_name: _name, ...bare } = gpuRow();
      const rows: StoreRows = {
        gpu: [bare],
        efa: [],
        events: [
          {
            time: at(5),
            instance_id: bare.instance_id,
            instance_type: bare.instance_type,
            kind: 'agent_start',
            source: 'nvml',
            batch_id: bare.batch_id,
            seq: 7,
          },
        ],
      };

      // Act
      const result = await store.write(rows);

      // Assess
      expect(result).toEqual({ written: 2, rejected: [] });
      if (opts.readBack) {
        const [row] = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 60_000) });
        expect(row?.team).toBeUndefined();
        expect(row?.job).toBeUndefined();
        expect(row?.instance_id).toBe(bare.instance_id);
      }
    });

    if (opts.readBack) {
      it('sums the ledger of the windows in [from, to) per GPU, most wasted first', async () => {
        // Prepare
        const rows = [0, 10, 20, 30].flatMap((s, i) => [
          gpuRow({
            time: at(s + 10),
            gpu_index: 0,
            seq: i,
            ledger: ledger({ efficiency: 0.5, throttled_usd: 0.001 * (i + 1) }),
          }),
          gpuRow({ time: at(s + 10), gpu_index: 1, seq: i, ledger: ledger({ efficiency: 0.1 }) }),
        ]);
        await store.write(only(rows));
        const from = new Date(T0 + 20_000);
        const to = new Date(T0 + 40_000);
        const inRange = rows.filter(
          (r) => Date.parse(r.time) >= from.getTime() && Date.parse(r.time) < to.getTime(),
        );

        // Act
        const report = await store.queryWaste({ from, to });

        // Assess
        expect(report.map((r) => r.gpu_index)).toEqual([1, 0]);
        for (const r of report) {
          const mine = inRange.filter((w) => w.gpu_index === r.gpu_index);
          expect(mine).toHaveLength(2);
          expect(Math.abs(r.cost_usd - sum(mine, (w) => w.ledger.cost_usd))).toBeLessThan(1e-9);
          expect(Math.abs(r.wasted_usd - sum(mine, (w) => w.ledger.wasted_usd))).toBeLessThan(1e-9);
          expect(Math.abs(r.underused_usd - sum(mine, (w) => w.ledger.underused_usd))).toBeLessThan(1e-9);
          expect(Math.abs(r.gpu_hours - sum(mine, (w) => w.ledger.gpu_hours))).toBeLessThan(1e-9);
          expect(Math.abs(r.throttled_usd - sum(mine, (w) => w.ledger.throttled_usd))).toBeLessThan(1e-9);
          expect(r).toMatchObject({
            instance_id: 'i-0123456789abcdef0',
            instance_type: 'p5.48xlarge',
            team: 'vision',
            job: 'train-42',
            efficiency_source: 'sm_active',
            price_usd_per_hour: 55.04,
            price_source: 'builtin:aws-2025-06',
            processes_unknown: false,
            idle_usd: 0,
            held_idle_usd: 0,
            broken_usd: 0,
          });
        }
        expect(report[1]?.efficiency).toBeCloseTo(0.5, 12);
      });

      it.each([
        {
          case: 'sm_active only',
          sources: ['sm_active', 'sm_active'],
          effs: [0.2, 0.6],
          hours: [10, 30],
          source: 'sm_active',
          efficiency: 0.5,
        },
        {
          case: 'gpu_util and sm_active',
          sources: ['gpu_util', 'sm_active'],
          effs: [0.2, 0.6],
          hours: [10, 30],
          source: 'mixed',
          efficiency: 0.5,
        },
        {
          case: 'a window without measurement',
          sources: ['none', 'gpu_util'],
          effs: [undefined, 0.6],
          hours: [10, 30],
          source: 'gpu_util',
          efficiency: 0.6,
        },
        {
          case: 'never measured',
          sources: ['none', 'none'],
          effs: [undefined, undefined],
          hours: [10, 30],
          source: 'none',
          efficiency: undefined,
        },
      ] as const)(
        'reports efficiency weighted by GPU-hours and its source: $case',
        async ({ sources, effs, hours, source, efficiency }) => {
          // Prepare
          const rows = sources.map((efficiency_source, i) =>
            gpuRow({
              time: at(100 * (i + 1)),
              seq: i,
              ledger: ledger({ window_s: hours[i]!, efficiency: effs[i], efficiency_source }),
            }),
          );
          await store.write(only(rows));

          // Act
          const [row] = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 3_600_000) });

          // Assess
          expect(row?.efficiency_source).toBe(source);
          if (efficiency === undefined) expect(row?.efficiency).toBeUndefined();
          else expect(row?.efficiency).toBeCloseTo(efficiency, 12);
        },
      );

      it('reports the latest price and whether any window had unknown processes', async () => {
        // Prepare
        await store.write(
          only([
            gpuRow({
              time: at(10),
              seq: 1,
              ledger: ledger({ price_usd_per_hour: 98.32, price_source: 'override', processes_known: false }),
            }),
            gpuRow({ time: at(20), seq: 2, ledger: ledger() }),
          ]),
        );

        // Act
        const [row] = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 60_000) });

        // Assess
        expect(row).toMatchObject({
          price_usd_per_hour: 55.04,
          price_source: 'builtin:aws-2025-06',
          processes_unknown: true,
        });
      });

      /**
       * Two instances, two teams (one untagged), two jobs, three diagnoses (one window without), over
       * 40 s; the p5 is a Kubernetes node whose GPU 1 moves from one pod to another of the same
       * namespace halfway, the p4d is not (no namespace, no pod).
       */
      const fleet = (): GpuWindowRow[] =>
        [0, 10, 20, 30].flatMap((s, i) => [
          gpuRow({
            time: at(s + 10),
            gpu_index: 0,
            seq: i,
            namespace: 'ml-train',
            pod: 'llama-7b-0',
            container: 'trainer',
            ledger: ledger({ efficiency: 0.2, diagnosis: 'input_bound' }),
          }),
          gpuRow({
            time: at(s + 10),
            gpu_index: 1,
            seq: i,
            namespace: 'ml-train',
            pod: i < 2 ? 'llama-7b-1' : 'eval-3',
            ledger: ledger({ efficiency: 0.6, ...(i < 2 ? { diagnosis: 'tensor_idle' as const } : {}) }),
          }),
          gpuRow({
            time: at(s + 10),
            instance_id: 'i-0fedcba9876543210',
            instance_type: 'p4d.24xlarge',
            gpu_index: 0,
            team: undefined,
            job: 'eval-7',
            seq: 100 + i,
            ledger: ledger({
              efficiency: 0,
              idle_usd: 0.01,
              underused_usd: 0,
              wasted_usd: 0.01,
              diagnosis: 'idle',
            }),
          }),
        ]);
      const groupOf = (r: GpuWindowRow, by: WasteGroup): string | undefined =>
        by === 'instance' ? r.instance_id : by === 'diagnosis' ? r.ledger.diagnosis : r[by];

      it('reports each GPU’s wasted dollars split by diagnosis', async () => {
        // Prepare
        const rows = fleet();
        await store.write(only(rows));

        // Act
        const report = await store.queryWaste({ from: new Date(T0), to: new Date(T0 + 60_000) });

        // Assess
        for (const r of report) {
          const mine = rows.filter((w) => w.instance_id === r.instance_id && w.gpu_index === r.gpu_index);
          const expected: Partial<Record<Diagnosis, number>> = {};
          for (const w of mine) {
            const d = w.ledger.diagnosis;
            if (d !== undefined) expected[d] = (expected[d] ?? 0) + w.ledger.wasted_usd;
          }
          expect(Object.keys(r.wasted_by_diagnosis_usd).sort()).toEqual(Object.keys(expected).sort());
          for (const [d, usd] of Object.entries(expected)) {
            expect(r.wasted_by_diagnosis_usd[d as Diagnosis]).toBeCloseTo(usd, 12);
          }
        }
      });

      it.each(WASTE_GROUPS)(
        'sums the ledger by %s, most wasted first, windows without a value as one group',
        async (by) => {
          // Prepare
          const rows = fleet();
          await store.write(only(rows));
          await store.write(only(rows));

          // Act
          const report = await store.queryWasteBy({ from: new Date(T0), to: new Date(T0 + 60_000), by });

          // Assess
          const groups = [...new Set(rows.map((r) => groupOf(r, by)))];
          expect(report).toHaveLength(groups.length);
          for (const g of groups) {
            const mine = rows.filter((r) => groupOf(r, by) === g);
            const row = report.find((r) => r.group === g);
            expect(row).toBeDefined();
            expect(row?.gpu_hours).toBeCloseTo(
              sum(mine, (w) => w.ledger.gpu_hours),
              12,
            );
            expect(row?.cost_usd).toBeCloseTo(
              sum(mine, (w) => w.ledger.cost_usd),
              12,
            );
            expect(row?.idle_usd).toBeCloseTo(
              sum(mine, (w) => w.ledger.idle_usd),
              12,
            );
            expect(row?.wasted_usd).toBeCloseTo(
              sum(mine, (w) => w.ledger.wasted_usd),
              12,
            );
            const diagnosed = mine.filter((w) => w.ledger.diagnosis === 'input_bound');
            if (diagnosed.length > 0) {
              expect(row?.wasted_by_diagnosis_usd.input_bound).toBeCloseTo(
                sum(diagnosed, (w) => w.ledger.wasted_usd),
                12,
              );
            } else {
              expect(row?.wasted_by_diagnosis_usd.input_bound).toBeUndefined();
            }
          }
          const wasted = report.map((r) => r.wasted_usd);
          expect(wasted).toEqual([...wasted].sort((a, b) => b - a));
        },
      );

      it('counts the unpriced GPU-hours of each group, absent where every window was priced', async () => {
        // Prepare
        const unpriced = ledger({ price_usd_per_hour: 0, price_source: 'unpriced', efficiency: 0.5 });
        await store.write(
          only([
            gpuRow({ time: at(10), gpu_index: 0, team: 'vision', seq: 1 }),
            gpuRow({ time: at(10), gpu_index: 1, team: 'vision', seq: 1, ledger: unpriced }),
            gpuRow({ time: at(10), gpu_index: 2, team: 'nlp', seq: 1 }),
          ]),
        );

        // Act
        const report = await store.queryWasteBy({
          from: new Date(T0),
          to: new Date(T0 + 60_000),
          by: 'team',
        });

        // Assess
        expect(report.find((g) => g.group === 'vision')?.unpriced_gpu_hours).toBeCloseTo(10 / 3600, 12);
        expect(report.find((g) => g.group === 'nlp')).not.toHaveProperty('unpriced_gpu_hours');
      });

      it('gives back one instance’s windows as written, newest first, each once, at most `limit`', async () => {
        // Prepare
        const rows = fleet();
        await store.write(only(rows));
        await store.write(only(rows));
        const mine = rows
          .filter((r) => r.instance_id === 'i-0123456789abcdef0')
          .sort((a, b) => b.time.localeCompare(a.time) || a.gpu_index - b.gpu_index);

        // Act
        const all = await store.recentWindows({
          instance_id: 'i-0123456789abcdef0',
          from: new Date(T0),
          to: new Date(T0 + 60_000),
        });
        const limited = await store.recentWindows({
          instance_id: 'i-0123456789abcdef0',
          from: new Date(T0 + 20_000),
          to: new Date(T0 + 60_000),
          limit: 3,
        });

        // Assess
        expect(all).toEqual(mine);
        expect(limited).toEqual(mine.slice(0, 3));
      });

      it('gives per instance and job the straggler means of its windows, each window once, untagged ones left out', async () => {
        // Prepare: the fleet written twice, and a newer seq that replaces one window's SM activity
        const rows = [
          ...fleet(),
          gpuRow({ time: at(50), gpu_index: 2, job: undefined, seq: 1 }),
          gpuRow({
            time: at(50),
            gpu_index: 3,
            job: 'eval-7',
            seq: 1,
            metrics: { gpu_temp_c: 64, sm_active: 0.9 },
          }),
        ];
        await store.write(only(rows));
        await store.write(only(rows));
        const newer = { ...(rows[0] as GpuWindowRow), seq: 50 };
        const replaced = { ...newer, metrics: { ...newer.metrics, sm_active: 0.05 } };
        await store.write(only([replaced]));
        const stored = [replaced, ...rows.slice(1)];

        // Act
        const means = await store.nodeJobMeans({ from: new Date(T0), to: new Date(T0 + 60_000) });

        // Assess
        const expected = meansByNodeAndJob(stored);
        expect(means.map((m) => [m.instance_id, m.job, Object.keys(m).sort()])).toEqual(
          expected.map((m) => [m.instance_id, m.job, Object.keys(m).sort()]),
        );
        means.forEach((m, k) => {
          for (const metric of STRAGGLER_METRICS) {
            if (m[metric] !== undefined) expect(m[metric]).toBeCloseTo(expected[k]?.[metric] as number, 9);
          }
        });
        expect(means.map((m) => [m.instance_id, m.job, Object.keys(m).sort()])).toEqual([
          ['i-0123456789abcdef0', 'eval-7', ['gpu_temp_c', 'instance_id', 'job', 'sm_active']],
          ['i-0123456789abcdef0', 'train-42', ['instance_id', 'job', 'power_w', 'sm_active']],
          ['i-0fedcba9876543210', 'eval-7', ['instance_id', 'job', 'power_w', 'sm_active']],
        ]);
      });

      it('tells when each instance last sent a window in the range', async () => {
        // Prepare
        await store.write(only(fleet()));

        // Act
        const seen = await store.lastSeen({ from: new Date(T0), to: new Date(T0 + 30_000) });

        // Assess
        expect(seen).toEqual([
          { instance_id: 'i-0123456789abcdef0', instance_type: 'p5.48xlarge', last_seen: at(20) },
          { instance_id: 'i-0fedcba9876543210', instance_type: 'p4d.24xlarge', last_seen: at(20) },
        ]);
      });

      it('returns nothing for a range without windows', async () => {
        // Prepare
        await store.write(batchRows(2));

        // Act
        const report = await store.queryWaste({
          from: new Date(T0 + 3_600_000),
          to: new Date(T0 + 7_200_000),
        });

        // Assess
        expect(report).toEqual([]);
      });
    }
  });
}
