import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StoreQueryError, StoreUnavailableError } from '../../../lambdas/domain/port-errors';
import { GPU_WORKLOAD_COLUMNS } from '../../../lambdas/domain/store-columns';
import type { EventRow } from '../../../lambdas/domain/types';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { batchRows, efaRow, eventRow, gpuRow, ledger } from '../rows';

describe('DuckDbStore details', () => {
  let store: DuckDbStore;

  beforeEach(async () => {
    store = await DuckDbStore.open(':memory:');
  });

  afterEach(async () => {
    await store.close();
  });

  it('stores a GPU window with its dimensions, metrics and ledger in columns', async () => {
    // Prepare
    const row = gpuRow();

    // Act
    await store.write({ gpu: [row], efa: [], events: [] });

    // Assess
    const [stored] = await store.readAll('gpu_windows');
    expect(stored).toMatchObject({
      time: '2026-03-10T12:00:10.000Z',
      start: '2026-03-10T12:00:00.000Z',
      instance_id: row.instance_id,
      region: 'us-east-1',
      gpu_index: 0,
      gpu_name: 'NVIDIA H100 80GB HBM3',
      seq: 7,
      sm_active: 0.4,
      fb_used_bytes: 60_000_000_000,
      remapped_rows_failure: false,
      tensor_active: null,
      cost_usd: row.ledger.cost_usd,
      efficiency_source: 'sm_active',
      processes_known: true,
      gpu_count: 8,
    });
  });

  it.each([
    { case: 'energy_j = 1e21 (a whole DOUBLE beyond int64)', metrics: { energy_j: 1e21 } },
    { case: 'the largest finite DOUBLE rate', metrics: { pcie_rx_bytes_per_s: Number.MAX_VALUE } },
    {
      case: 'the largest contract counters (2^53 − 1)',
      metrics: { ecc_sbe_aggregate: Number.MAX_SAFE_INTEGER, clocks_event_reasons: Number.MAX_SAFE_INTEGER },
    },
  ])('stores a contract-valid extreme number: $case', async ({ metrics }) => {
    // Prepare
    const row = gpuRow({ metrics: { ...gpuRow().metrics, ...metrics } });
    const efa = efaRow({ deltas: { rx_bytes: Number.MAX_SAFE_INTEGER } });

    // Act
    const written = await store.write({ gpu: [row], efa: [efa], events: [] });

    // Assess
    expect(written.written).toBe(2);
    const [stored] = await store.readAll('gpu_windows');
    expect(stored).toMatchObject(metrics);
    expect((await store.readAll('efa_windows'))[0]?.deltas).toEqual({ rx_bytes: Number.MAX_SAFE_INTEGER });
  });

  it('stores EFA deltas as a map and events with and without a GPU', async () => {
    // Prepare
    const instanceWide: EventRow = {
      ...eventRow({ kind: 'spot_interruption', source: 'imds' }),
      gpu_index: undefined,
    };

    // Act
    await store.write({ gpu: [], efa: [efaRow()], events: [eventRow(), instanceWide] });

    // Assess
    expect(await store.readAll('efa_windows')).toEqual([
      expect.objectContaining({
        device: 'rdmap16s27',
        port: 1,
        deltas: { rx_drops: 0, rx_pkts: 1200, tx_pkts: 1100 },
      }),
    ]);
    const events = await store.readAll('events');
    expect(events).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'spot_interruption', gpu_index: null, gpu_slot: -1 }),
        expect.objectContaining({ kind: 'xid', gpu_index: 3, xid: 79, time: '2026-03-10T12:00:05.250000Z' }),
      ]),
    );
  });

  it('keeps events a few microseconds apart as distinct rows', async () => {
    // Prepare
    const a = eventRow({ time: '2024-11-15T12:02:03.470068Z', xid: 13 });
    const b = eventRow({ time: '2024-11-15T12:02:03.470157Z', xid: 13 });

    // Act
    const result = await store.write({ gpu: [], efa: [], events: [a, b] });

    // Assess
    expect(result.written).toBe(2);
    expect((await store.readAll('events')).map((r) => r.time)).toEqual([
      '2024-11-15T12:02:03.470068Z',
      '2024-11-15T12:02:03.470157Z',
    ]);
  });

  it('keeps the highest seq when one batch holds the same key twice', async () => {
    // Act
    const result = await store.write({ gpu: [gpuRow({ seq: 9 }), gpuRow({ seq: 8 })], efa: [], events: [] });

    // Assess
    expect(result.written).toBe(2);
    expect((await store.readAll('gpu_windows')).map((r) => r.seq)).toEqual([9]);
  });

  it('writes nothing of a batch when one row fails', async () => {
    // Prepare
    const bad = { ...eventRow(), source: null } as unknown as EventRow;

    // Act
    const result = store.write({ ...batchRows(4), events: [bad] });

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.readAll('gpu_windows')).toEqual([]);
    expect(await store.readAll('efa_windows')).toEqual([]);
  });

  it.each([
    { case: 'to before from', from: '2026-03-10T13:00:00Z', to: '2026-03-10T12:00:00Z' },
    { case: 'an empty range', from: '2026-03-10T12:00:00Z', to: '2026-03-10T12:00:00Z' },
    { case: 'an invalid date', from: 'yesterday', to: '2026-03-10T12:00:00Z' },
  ])('throws StoreQueryError for $case', async ({ from, to }) => {
    // Act
    const result = store.queryWaste({ from: new Date(from), to: new Date(to) });

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreQueryError);
  });

  it('rejects calls after close', async () => {
    // Prepare
    const closed = await DuckDbStore.open(':memory:');
    await closed.close();

    // Act
    const result = closed.write(batchRows(1));

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('DuckDbStore on a file', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-duckdb-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates the parent directories and keeps the data across reopen', async () => {
    // Prepare
    const path = join(dir, 'nested', '.gpu-sentinel', 'store.duckdb');
    const first = await DuckDbStore.open(path);
    await first.write(batchRows(2));
    await first.markBroken('i-0123456789abcdef0', '3', '2026-03-10T12:00:05.250Z');
    await first.close();

    // Act
    const second = await DuckDbStore.open(path);
    const report = await second.queryWaste({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
    });
    const broken = await second.getBrokenSince('i-0123456789abcdef0');
    await second.close();

    // Assess
    expect(report.map((r) => r.gpu_index)).toEqual([0, 1]);
    expect(broken.get('3')).toBe('2026-03-10T12:00:05.250Z');
  });

  it('stores one row per MIG slice of a GPU at one time, with its instance id and profile', async () => {
    // Prepare: GPU 0's instances 7 and 8, and the whole GPU 1, at the same time
    const rows = [
      gpuRow({ gpu_index: 0, gpu_instance_id: 7, gpu_instance_profile: '1g.10gb' }),
      gpuRow({ gpu_index: 0, gpu_instance_id: 8, gpu_instance_profile: '1g.10gb' }),
      gpuRow({ gpu_index: 1 }),
    ];

    const store = await DuckDbStore.open(':memory:');

    // Act: written twice, as a retried batch is
    await store.write({ gpu: rows, efa: [], events: [] });
    await store.write({ gpu: rows, efa: [], events: [] });
    const stored = await store.readAll('gpu_windows');
    await store.close();

    // Assess
    expect(
      stored.map((r) => [r.gpu_index, r.gpu_instance_id, r.gpu_instance_profile, r.gpu_instance_slot]),
    ).toEqual([
      [0, 7, '1g.10gb', 7],
      [0, 8, '1g.10gb', 8],
      [1, null, null, -1],
    ]);
  });

  it('widens the key of a store file made before MIG slices had rows, keeping its rows', async () => {
    // Prepare: a file as an older version wrote it (key instance_id, gpu_index, time; no MIG columns)
    const path = join(dir, 'pre-mig.duckdb');
    const made = await DuckDbStore.open(path);
    await made.write({ gpu: [gpuRow({ gpu_index: 0 })], efa: [], events: [] });
    await made.close();
    const duck = await DuckDBInstance.create(path);
    const raw = await duck.connect();
    await raw.run(
      'CREATE TEMP TABLE keep AS SELECT * EXCLUDE (gpu_instance_id, gpu_instance_profile, gpu_instance_slot) FROM gpu_windows',
    );
    await raw.run('DROP TABLE gpu_windows');
    await raw.run('CREATE TABLE gpu_windows AS SELECT * FROM keep');
    await raw.run('ALTER TABLE gpu_windows ADD PRIMARY KEY (instance_id, gpu_index, time)');
    raw.closeSync();
    duck.closeSync();

    // Act
    const reopened = await DuckDbStore.open(path);
    await reopened.write({
      gpu: [
        gpuRow({ gpu_index: 1, gpu_instance_id: 1, gpu_instance_profile: '3g.40gb' }),
        gpuRow({ gpu_index: 1, gpu_instance_id: 2, gpu_instance_profile: '4g.40gb' }),
      ],
      efa: [],
      events: [],
    });
    const stored = await reopened.readAll('gpu_windows');
    await reopened.close();

    // Assess
    expect(stored.map((r) => [r.gpu_index, r.gpu_instance_slot])).toEqual([
      [0, -1],
      [1, 1],
      [1, 2],
    ]);
  });

  it('gives a store file made before the Kubernetes columns existed those columns, keeping its rows', async () => {
    // Prepare: a file as an older version wrote it (no namespace, pod, container)
    const path = join(dir, 'old.duckdb');
    const made = await DuckDbStore.open(path);
    await made.write({ gpu: [gpuRow({ gpu_index: 0 })], efa: [], events: [] });
    await made.close();
    const duck = await DuckDBInstance.create(path);
    const raw = await duck.connect();
    for (const c of GPU_WORKLOAD_COLUMNS) await raw.run(`ALTER TABLE gpu_windows DROP COLUMN ${c}`);
    raw.closeSync();
    duck.closeSync();

    // Act
    const reopened = await DuckDbStore.open(path);
    await reopened.write({
      gpu: [gpuRow({ gpu_index: 1, namespace: 'ml-train', pod: 'llama-7b-0' })],
      efa: [],
      events: [],
    });
    const groups = await reopened.queryWasteBy({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
      by: 'namespace',
    });
    await reopened.close();

    // Assess
    expect(groups.map((g) => g.group)).toEqual(['ml-train', undefined]);
  });

  it('gives a store file made before throttling was priced power_throttle_ratio and throttled_usd, old rows at 0', async () => {
    // Prepare: a file as an older version wrote it (no power_throttle_ratio, no throttled_usd)
    const path = join(dir, 'before-throttle.duckdb');
    const made = await DuckDbStore.open(path);
    await made.write({ gpu: [gpuRow({ gpu_index: 0 })], efa: [], events: [] });
    await made.close();
    const duck = await DuckDBInstance.create(path);
    const raw = await duck.connect();
    for (const c of ['power_throttle_ratio', 'throttled_usd'])
      await raw.run(`ALTER TABLE gpu_windows DROP COLUMN ${c}`);
    raw.closeSync();
    duck.closeSync();

    // Act
    const reopened = await DuckDbStore.open(path);
    await reopened.write({
      gpu: [
        gpuRow({
          gpu_index: 1,
          metrics: { ...gpuRow().metrics, power_throttle_ratio: 0.5 },
          ledger: ledger({ throttled_usd: 0.25 }),
        }),
      ],
      efa: [],
      events: [],
    });
    const rows = await reopened.queryWaste({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
    });
    const recent = await reopened.recentWindows({
      instance_id: 'i-0123456789abcdef0',
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
    });
    await reopened.close();

    // Assess
    expect(rows.map((r) => [r.gpu_index, r.throttled_usd]).sort()).toEqual([
      [0, 0],
      [1, 0.25],
    ]);
    expect(recent.find((r) => r.gpu_index === 1)?.metrics.power_throttle_ratio).toBe(0.5);
  });
});
