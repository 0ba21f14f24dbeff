import {
  AthenaClient,
  GetQueryExecutionCommand,
  GetQueryResultsCommand,
  StartQueryExecutionCommand,
  StopQueryExecutionCommand,
} from '@aws-sdk/client-athena';
import {
  FirehoseClient,
  PutRecordBatchCommand,
  type PutRecordBatchCommandInput,
} from '@aws-sdk/client-firehose';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { partitionFilter } from '../../../lambdas/adapters/athena-sql';
import { AthenaStore } from '../../../lambdas/adapters/athena-store';
import { eventJson, gpuWindowJson, packRecords } from '../../../lambdas/adapters/firehose-records';
import { StoreQueryError, StoreUnavailableError } from '../../../lambdas/domain/port-errors';
import type { TelemetryTable } from '../../../lambdas/domain/store-columns';
import { batchRows, eventRow, gpuRow, ledger } from '../rows';
import { describeTelemetryStoreContract } from '../store-conformance';
import { FAKE_STREAMS, type FakeAthena, fakeAthenaStore } from './athena-fake';
import { expectValidAwsInputs } from './aws-model';
import { firehoseRowColumns } from './firehose-rows';

describeTelemetryStoreContract(
  'AthenaStore (Firehose → Parquet → Athena SQL on DuckDB)',
  async () => {
    const fake = await fakeAthenaStore({ pageSize: 3 });
    const store = new AthenaStore({
      firehose: fake.firehose,
      athena: fake.athena,
      streams: FAKE_STREAMS,
      workGroup: 'gpu-sentinel',
      sleep: async () => undefined,
    });
    return { store, close: () => fake.close() };
  },
  { readBack: true },
);

const STREAMS = FAKE_STREAMS;
/** A record's rows as the delivery stream of `table` reads them (by column name). */
const decode = (table: TelemetryTable, data: Uint8Array | undefined): unknown[] =>
  new TextDecoder()
    .decode(data)
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => firehoseRowColumns(table, l));

describe('AthenaStore.write', () => {
  const firehose = new FirehoseClient({ region: 'us-east-1' });
  const mock = mockClient(firehose);
  let sleeps: number[];
  let store: AthenaStore;

  afterEach(() => {
    expectValidAwsInputs(mock, 'firehose');
  });

  beforeEach(() => {
    mock.reset();
    mock.on(PutRecordBatchCommand).callsFake((input: PutRecordBatchCommandInput) => ({
      FailedPutCount: 0,
      RequestResponses: (input.Records ?? []).map((_, i) => ({ RecordId: `r${i}` })),
    }));
    sleeps = [];
    store = new AthenaStore({
      firehose,
      streams: STREAMS,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 1,
    });
  });

  it('packs a batch into one newline-separated JSON record per stream, with the table columns', async () => {
    // Prepare
    const rows = batchRows(2);

    // Act
    const result = await store.write(rows);

    // Assess
    expect(result).toEqual({ written: 4, rejected: [] });
    const calls = mock.commandCalls(PutRecordBatchCommand).map((c) => c.args[0].input);
    expect(calls.map((c) => [c.DeliveryStreamName, c.Records?.length])).toEqual([
      ['gpu-sentinel-gpu-windows', 1],
      ['gpu-sentinel-efa-windows', 1],
      ['gpu-sentinel-events', 1],
    ]);
    expect(decode('gpu_windows', calls[0]?.Records?.[0]?.Data)).toEqual([
      firehoseRowColumns('gpu_windows', gpuWindowJson(rows.gpu[0]!)),
      firehoseRowColumns('gpu_windows', gpuWindowJson(rows.gpu[1]!)),
    ]);
    expect(decode('efa_windows', calls[1]?.Records?.[0]?.Data)).toEqual([
      {
        time: Date.parse('2026-03-10T12:00:10.000Z'),
        start: Date.parse('2026-03-10T12:00:00.000Z'),
        instance_id: 'i-0123456789abcdef0',
        instance_type: 'p5.48xlarge',
        device: 'rdmap16s27',
        port: 1,
        seq: 7,
        deltas: { rx_drops: 0, rx_pkts: 1200, tx_pkts: 1100 },
      },
    ]);
    expect(decode('events', calls[2]?.Records?.[0]?.Data)).toEqual([
      {
        time: '2026-03-10T12:00:05.250000Z',
        instance_id: 'i-0123456789abcdef0',
        instance_type: 'p5.48xlarge',
        gpu_index: 3,
        gpu_slot: 3,
        pci_bus_id: '0000:53:00.0',
        kind: 'xid',
        xid: 79,
        source: 'kmsg',
        detail: 'GPU has fallen off the bus.',
        batch_id: '0b7e6f7a-1f2b-4c3d-8e9f-000000000007',
        seq: 7,
      },
    ]);
  });

  it('writes a GPU row with every present metric and ledger field, and leaves absent ones out', async () => {
    // Prepare
    const { team: _t, az: _a, ...row } = gpuRow({ ledger: ledger({ efficiency: undefined }) });

    // Act
    await store.write({ gpu: [row], efa: [], events: [] });

    // Assess
    const [json] = decode(
      'gpu_windows',
      mock.commandCalls(PutRecordBatchCommand)[0]?.args[0].input.Records?.[0]?.Data,
    ) as Array<Record<string, unknown>>;
    expect(Object.keys(json ?? {})).not.toContain('team');
    expect(Object.keys(json ?? {})).not.toContain('az');
    expect(Object.keys(json ?? {})).not.toContain('efficiency');
    expect(Object.keys(json ?? {})).not.toContain('sm_occupancy');
    expect(json).toMatchObject({
      sm_active: 0.4,
      remapped_rows_failure: false,
      efficiency_source: 'none',
      seq: 7,
    });
  });

  it('keeps every event time to the microsecond', () => {
    // Prepare / Act / Assess
    expect(
      firehoseRowColumns('events', eventJson(eventRow({ time: '2026-03-10T12:00:05.123456Z' }))).time,
    ).toBe('2026-03-10T12:00:05.123456Z');
    expect(
      firehoseRowColumns('events', eventJson(eventRow({ time: '2026-03-10T13:00:05+01:00' }))).time,
    ).toBe('2026-03-10T12:00:05.000000Z');
  });

  it.each([
    ['quotes and backslashes', 'Xid 79: "fell off the bus" at C:\\gpu'],
    ['newlines and control characters', 'line one\nline two\t\u0001'],
    ['non-ASCII and emoji', 'GPU 温度 🔥 überhitzt'],
    ['lone surrogates', 'bad \ud800 half'],
  ])('writes a detail with %s as JSON text that reads back exactly', (_, detail) => {
    // Prepare
    const row = eventRow({ detail, process_name: detail });
    // Act
    const text = eventJson(row);
    // Assess
    expect(firehoseRowColumns('events', text)).toMatchObject({ detail, process_name: detail });
    expect(text).not.toContain('\n');
  });

  it('sends again exactly the records a 200 answer reports as failed, with growing backoff', async () => {
    // Prepare
    const big = Array.from({ length: 3 }, (_, i) => gpuRow({ gpu_index: i, gpu_name: 'x'.repeat(600_000) }));
    mock
      .on(PutRecordBatchCommand)
      .resolvesOnce({
        FailedPutCount: 2,
        RequestResponses: [
          { ErrorCode: 'ServiceUnavailableException', ErrorMessage: 'Slow down.' },
          { RecordId: 'ok-1' },
          { ErrorCode: 'InternalFailure', ErrorMessage: 'Internal' },
        ],
      })
      .resolvesOnce({
        FailedPutCount: 1,
        RequestResponses: [
          { RecordId: 'ok-0' },
          { ErrorCode: 'ServiceUnavailableException', ErrorMessage: 'x' },
        ],
      })
      .resolvesOnce({ FailedPutCount: 0, RequestResponses: [{ RecordId: 'ok-2' }] });

    // Act
    const result = await store.write({ gpu: big, efa: [], events: [] });

    // Assess
    const sent = mock
      .commandCalls(PutRecordBatchCommand)
      .map((c) =>
        (c.args[0].input.Records ?? []).map(
          (r) => (decode('gpu_windows', r.Data)[0] as { gpu_index: number }).gpu_index,
        ),
      );
    expect(sent).toEqual([[0, 1, 2], [0, 2], [2]]);
    expect(sleeps).toEqual([100, 200]);
    expect(result).toEqual({ written: 3, rejected: [] });
  });

  it('throws StoreUnavailableError when records still fail after every attempt, naming the error', async () => {
    // Prepare
    mock.on(PutRecordBatchCommand).resolves({
      FailedPutCount: 1,
      RequestResponses: [{ ErrorCode: 'ServiceUnavailableException', ErrorMessage: 'Slow down.' }],
    });

    // Act
    const write = store.write({ gpu: [gpuRow()], efa: [], events: [] });

    // Assess
    await expect(write).rejects.toThrow(StoreUnavailableError);
    await expect(store.write({ gpu: [gpuRow()], efa: [], events: [] })).rejects.toThrow(
      /4 attempts \(ServiceUnavailableException: Slow down\.\)/,
    );
    expect(mock.commandCalls(PutRecordBatchCommand)).toHaveLength(8);
  });

  it('throws StoreUnavailableError when a call fails as a whole', async () => {
    // Prepare
    mock.on(PutRecordBatchCommand).rejects(new Error('ThrottlingException'));

    // Act / Assess
    await expect(store.write(batchRows(1))).rejects.toThrow(StoreUnavailableError);
  });

  it('rejects, unsent, a row larger than a Firehose record, and sends the others', async () => {
    // Prepare
    const rows = [gpuRow({ gpu_index: 0 }), gpuRow({ gpu_index: 1, gpu_name: 'x'.repeat(1_100_000) })];

    // Act
    const result = await store.write({ gpu: rows, efa: [], events: [] });

    // Assess
    expect(result.written).toBe(1);
    expect(result.rejected).toEqual([
      { table: 'gpu_windows', index: 1, reason: expect.stringMatching(/1,000 KiB/) },
    ]);
    expect(mock.commandCalls(PutRecordBatchCommand)).toHaveLength(1);
  });

  it('splits records into calls of at most 4 MiB', async () => {
    // Prepare: 9 rows of ~600 KB: one row per record (two would pass 1,000 KiB), 6 records per 4 MiB call
    const rows = Array.from({ length: 9 }, (_, i) => gpuRow({ gpu_index: i, gpu_name: 'x'.repeat(600_000) }));

    // Act
    await store.write({ gpu: rows, efa: [], events: [] });

    // Assess
    const calls = mock.commandCalls(PutRecordBatchCommand).map((c) => c.args[0].input.Records ?? []);
    expect(calls.map((c) => c.length)).toEqual([6, 3]);
    for (const c of calls)
      expect(c.reduce((n, r) => n + (r.Data?.length ?? 0), 0)).toBeLessThanOrEqual(4 * 1024 * 1024);
  });
});

describe('packRecords', () => {
  it.each([
    { rows: 1, size: 200, max: 1000, records: [1] },
    { rows: 5, size: 200, max: 1000, records: [5] },
    { rows: 5, size: 200, max: 999, records: [4, 1] },
    { rows: 10, size: 200, max: 400, records: [2, 2, 2, 2, 2] },
  ])(
    'packs $rows rows of $size bytes into records of ≤ $max bytes: $records',
    ({ rows, size, max, records }) => {
      // Prepare: `{"i":N,"pad":"…"}` and its newline are exactly `size` bytes
      const json = Array.from({ length: rows }, (_, i) =>
        JSON.stringify({ i, pad: 'x'.repeat(size - 16 - String(i).length) }),
      );

      // Act
      const packed = packRecords(json, max);

      // Assess
      expect(packed.records.map((r) => r.rows.length)).toEqual(records);
      for (const r of packed.records) expect(r.data.length).toBeLessThanOrEqual(max);
      expect(packed.records.flatMap((r) => r.rows)).toEqual(json.map((_, i) => i));
    },
  );

  it('sizes rows in UTF-8 bytes, not characters, and writes each row and its newline as UTF-8', () => {
    // Prepare: 3 rows of 22, 22 and 18 characters with the newline, but 35, 35 and 36 bytes
    const json = ['é', 'µ', '€'].map((c) => JSON.stringify({ t: c.repeat(c === '€' ? 9 : 13) }));
    expect(json.map((j) => Buffer.byteLength(j) + 1)).toEqual([35, 35, 36]);

    // Act: 70 bytes hold all three by characters (62), two by bytes
    const packed = packRecords(json, 70);

    // Assess
    expect(packed.records.map((r) => r.rows)).toEqual([[0, 1], [2]]);
    expect(packed.records.map((r) => new TextDecoder().decode(r.data))).toEqual([
      `${json[0]}\n${json[1]}\n`,
      `${json[2]}\n`,
    ]);
    expect(packed.records.map((r) => r.data.length)).toEqual([70, 36]);
  });
});

describe('AthenaStore reads', () => {
  const athena = new AthenaClient({ region: 'us-east-1' });
  const mock = mockClient(athena);
  let sleeps: number[];
  let store: AthenaStore;

  afterEach(() => {
    expectValidAwsInputs(mock, 'athena');
  });
  const from = new Date('2026-03-10T00:00:00.000Z');
  const to = new Date('2026-03-11T00:00:00.000Z');

  beforeEach(() => {
    mock.reset();
    sleeps = [];
    mock.on(StartQueryExecutionCommand).resolves({ QueryExecutionId: 'q-1' });
    mock.on(GetQueryResultsCommand).resolves({
      ResultSet: {
        ResultSetMetadata: { ColumnInfo: [{ Name: 'instance_id', Type: 'varchar' }] },
        Rows: [{ Data: [{ VarCharValue: 'instance_id' }] }],
      },
    });
    store = new AthenaStore({
      firehose: new FirehoseClient({ region: 'us-east-1' }),
      athena,
      streams: STREAMS,
      database: 'gpu_sentinel',
      workGroup: 'gpu-sentinel',
      queryTimeoutMs: 3000,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
    });
  });

  it('starts the query in the workgroup and database, polls with backoff, and pages the results', async () => {
    // Prepare
    mock
      .on(GetQueryExecutionCommand)
      .resolvesOnce({ QueryExecution: { Status: { State: 'QUEUED' } } })
      .resolvesOnce({ QueryExecution: { Status: { State: 'RUNNING' } } })
      .resolves({ QueryExecution: { Status: { State: 'SUCCEEDED' } } });
    mock
      .on(GetQueryResultsCommand)
      .resolvesOnce({
        ResultSet: {
          ResultSetMetadata: {
            ColumnInfo: [
              { Name: 'a', Type: 'integer' },
              { Name: 'b', Type: 'varchar' },
            ],
          },
          Rows: [
            { Data: [{ VarCharValue: 'a' }, { VarCharValue: 'b' }] },
            { Data: [{ VarCharValue: '1' }, {}] },
          ],
        },
        NextToken: 'page-2',
      })
      .resolvesOnce({ ResultSet: { Rows: [{ Data: [{ VarCharValue: '2' }, { VarCharValue: 'x' }] }] } });

    // Act
    const result = await store.query('SELECT 1');

    // Assess
    expect(mock.commandCalls(StartQueryExecutionCommand)[0]?.args[0].input).toEqual({
      QueryString: 'SELECT 1',
      QueryExecutionContext: { Catalog: 'AwsDataCatalog', Database: 'gpu_sentinel' },
      WorkGroup: 'gpu-sentinel',
    });
    expect(mock.commandCalls(GetQueryExecutionCommand).map((c) => c.args[0].input)).toEqual([
      { QueryExecutionId: 'q-1' },
      { QueryExecutionId: 'q-1' },
      { QueryExecutionId: 'q-1' },
    ]);
    expect(sleeps).toEqual([200, 400]);
    expect(mock.commandCalls(GetQueryResultsCommand).map((c) => c.args[0].input)).toEqual([
      { QueryExecutionId: 'q-1', MaxResults: 1000 },
      { QueryExecutionId: 'q-1', MaxResults: 1000, NextToken: 'page-2' },
    ]);
    expect(result).toEqual({
      columns: ['a', 'b'],
      rows: [
        ['1', undefined],
        ['2', 'x'],
      ],
    });
  });

  it.each([
    { retryable: false, error: StoreQueryError },
    { retryable: true, error: StoreUnavailableError },
  ])('throws $error.name when the query fails (retryable: $retryable)', async ({ retryable, error }) => {
    // Prepare
    mock.on(GetQueryExecutionCommand).resolves({
      QueryExecution: {
        Status: {
          State: 'FAILED',
          StateChangeReason: 'COLUMN_NOT_FOUND',
          AthenaError: { Retryable: retryable },
        },
      },
    });

    // Act / Assess
    await expect(store.query('SELECT nope')).rejects.toThrow(error);
    await expect(store.query('SELECT nope')).rejects.toThrow(/COLUMN_NOT_FOUND/);
  });

  it('stops a query that runs past the timeout and throws StoreUnavailableError', async () => {
    // Prepare
    mock.on(GetQueryExecutionCommand).resolves({ QueryExecution: { Status: { State: 'RUNNING' } } });
    mock.on(StopQueryExecutionCommand).resolves({});

    // Act
    const query = store.query('SELECT 1');

    // Assess
    await expect(query).rejects.toThrow(StoreUnavailableError);
    expect(mock.commandCalls(StopQueryExecutionCommand)[0]?.args[0].input).toEqual({
      QueryExecutionId: 'q-1',
    });
    expect(sleeps.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3000);
  });

  it('throws StoreQueryError without an Athena client', async () => {
    // Prepare
    const writeOnly = new AthenaStore({
      firehose: new FirehoseClient({ region: 'us-east-1' }),
      streams: STREAMS,
    });

    // Act / Assess
    await expect(writeOnly.queryWaste({ from, to })).rejects.toThrow(StoreQueryError);
  });

  it('filters the waste query on the partitions a row of the range can be in, and keeps the latest seq per window', async () => {
    // Prepare
    mock.on(GetQueryExecutionCommand).resolves({ QueryExecution: { Status: { State: 'SUCCEEDED' } } });

    // Act
    await store.queryWaste({ from, to });

    // Assess
    const sql = mock.commandCalls(StartQueryExecutionCommand)[0]?.args[0].input.QueryString ?? '';
    expect(sql).toContain(`datehour BETWEEN '2026/03/09/23' AND '2026/03/18/00'`);
    expect(sql).toContain(`"time" >= TIMESTAMP '2026-03-10 00:00:00.000'`);
    expect(sql).toContain(`"time" < TIMESTAMP '2026-03-11 00:00:00.000'`);
    expect(sql).toContain(
      'row_number() OVER (PARTITION BY "instance_id", "gpu_index", "gpu_instance_slot", "time" ORDER BY seq DESC)',
    );
    expect(sql).toContain('FROM "gpu_sentinel"."gpu_windows"');
  });

  it('reads the straggler means of the whole fleet in one query, grouped per instance and job in SQL', async () => {
    // Prepare
    mock.on(GetQueryExecutionCommand).resolves({ QueryExecution: { Status: { State: 'SUCCEEDED' } } });

    // Act
    await store.nodeJobMeans({ from, to });

    // Assess
    const calls = mock.commandCalls(StartQueryExecutionCommand);
    expect(calls).toHaveLength(1);
    const sql = calls[0]?.args[0].input.QueryString ?? '';
    expect(sql).toContain(
      'avg(sm_active) AS sm_active, avg(power_w) AS power_w, avg(gpu_temp_c) AS gpu_temp_c',
    );
    expect(sql).toContain('GROUP BY instance_id, job');
    expect(sql).toContain(`datehour BETWEEN '2026/03/09/23' AND '2026/03/18/00'`);
    expect(sql).toContain('ORDER BY seq DESC');
    expect(sql).not.toContain('instance_id =');
  });
});

describe('AthenaStore over the Parquet layout', () => {
  let fake: FakeAthena;
  let store: AthenaStore;

  beforeEach(async () => {
    fake = await fakeAthenaStore();
    store = new AthenaStore({
      firehose: fake.firehose,
      athena: fake.athena,
      streams: FAKE_STREAMS,
      sleep: async () => undefined,
    });
  });

  afterEach(async () => {
    await fake.close();
  });

  it('files each record under its arrival hour, as Firehose does', async () => {
    // Prepare / Act
    await store.write(batchRows(2));

    // Assess
    expect(fake.files.map((f) => f.split('/').slice(0, 5).join('/')).sort()).toEqual([
      'efa_windows/2026/03/10/12',
      'events/2026/03/10/12',
      'gpu_windows/2026/03/10/12',
    ]);
  });

  it('reads a batch stored twice and a late older seq once, the newest seq winning', async () => {
    // Prepare
    await store.write({
      gpu: [gpuRow({ seq: 8, ledger: ledger({ efficiency: 0.9 }) })],
      efa: [],
      events: [],
    });
    await store.write({
      gpu: [gpuRow({ seq: 8, ledger: ledger({ efficiency: 0.9 }) })],
      efa: [],
      events: [],
    });
    await store.write({
      gpu: [gpuRow({ seq: 7, ledger: ledger({ efficiency: 0.1 }) })],
      efa: [],
      events: [],
    });

    // Act
    const report = await store.queryWaste({
      from: new Date('2026-03-10T12:00:00Z'),
      to: new Date('2026-03-10T13:00:00Z'),
    });

    // Assess
    expect(fake.files.filter((f) => f.startsWith('gpu_windows/2026'))).toHaveLength(3);
    expect(report).toHaveLength(1);
    expect(report[0]?.efficiency).toBeCloseTo(0.9, 12);
    expect(report[0]?.gpu_hours).toBeCloseTo(10 / 3600, 12);
  });
});

describe('partitionFilter', () => {
  it.each([
    {
      case: 'a window early in the hour can sit in the previous hour’s object',
      from: '2026-03-10T12:10:00Z',
      to: '2026-03-10T13:00:00Z',
      first: '2026/03/10/11',
      last: '2026/03/17/13',
    },
    {
      case: 'skew plus one buffer interval stays in the hour',
      from: '2026-03-10T12:21:00Z',
      to: '2026-03-10T12:30:00Z',
      first: '2026/03/10/12',
      last: '2026/03/17/12',
    },
    {
      case: 'a day, with 7 days of late arrivals',
      from: '2026-03-10T00:00:00Z',
      to: '2026-03-11T00:00:00Z',
      first: '2026/03/09/23',
      last: '2026/03/18/00',
    },
  ])('covers every hour a row of the range can be filed under: $case', ({ from, to, first, last }) => {
    // Prepare / Act
    const sql = partitionFilter(new Date(from), new Date(to));

    // Assess
    expect(sql).toBe(`datehour BETWEEN '${first}' AND '${last}'`);
  });
});
