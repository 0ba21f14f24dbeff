import { QueryCommand, TimestreamQueryClient } from '@aws-sdk/client-timestream-query';
import {
  RejectedRecordsException,
  ThrottlingException,
  TimestreamWriteClient,
  WriteRecordsCommand,
} from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TimestreamStore } from '../../../lambdas/adapters/timestream-store';
import { StoreQueryError, StoreUnavailableError } from '../../../lambdas/domain/port-errors';
import { TELEMETRY_TABLE_COLUMNS } from '../../../lambdas/domain/store-columns';
import type { EventRow, GpuWindowRow } from '../../../lambdas/domain/types';
import { efaRow, eventRow, gpuRow, ledger } from '../rows';
import { describeTelemetryStoreContract } from '../store-conformance';
import { expectValidAwsInputs } from './aws-model';
import { fakeTimestream } from './timestream-fake';

describeTelemetryStoreContract(
  'TimestreamStore (write half, fake Timestream)',
  async () => ({ store: new TimestreamStore({ client: fakeTimestream().client, database: 'gpu_sentinel' }) }),
  { readBack: false },
);

const cost = 55.04 / 8 / 360;
/** The query that reads the GPU table's columns (its ColumnInfo), matching no row. */
const SCHEMA_PROBE = 'SELECT * FROM "gpu_sentinel"."gpu_windows" WHERE time < from_milliseconds(0)';
/** Every column of a GPU table that has seen every dimension and measure. */
const EVERY_GPU_COLUMN = ['measure_name', ...TELEMETRY_TABLE_COLUMNS.gpu_windows.map(([n]) => n)];

describe('TimestreamStore.write', () => {
  const client = new TimestreamWriteClient({ region: 'us-east-1' });
  const mock = mockClient(client);
  let store: TimestreamStore;

  afterEach(() => {
    expectValidAwsInputs(mock, 'timestream-write');
  });

  beforeEach(() => {
    mock.reset();
    mock.on(WriteRecordsCommand).resolves({});
    store = new TimestreamStore({ client, database: 'gpu_sentinel' });
  });

  it('writes a GPU window as one multi-measure record with fixed measure types, time in ms and seq as version', async () => {
    // Act
    await store.write({ gpu: [gpuRow()], efa: [], events: [] });

    // Assess
    expect(mock.commandCalls(WriteRecordsCommand)[0]!.args[0].input).toEqual({
      DatabaseName: 'gpu_sentinel',
      TableName: 'gpu_windows',
      Records: [
        {
          Dimensions: [
            { Name: 'instance_id', Value: 'i-0123456789abcdef0' },
            { Name: 'instance_type', Value: 'p5.48xlarge' },
            { Name: 'gpu_index', Value: '0' },
            { Name: 'gpu_uuid', Value: 'GPU-7f3c2a1e-0000-4000-8000-000000000000' },
            { Name: 'az', Value: 'us-east-1a' },
            { Name: 'team', Value: 'vision' },
            { Name: 'job', Value: 'train-42' },
          ],
          MeasureName: 'gpu',
          MeasureValueType: 'MULTI',
          MeasureValues: [
            { Name: 'gpu_util', Value: '0.97', Type: 'DOUBLE' },
            { Name: 'sm_active', Value: '0.4', Type: 'DOUBLE' },
            { Name: 'fb_used_bytes', Value: '60000000000', Type: 'BIGINT' },
            { Name: 'fb_total_bytes', Value: '85520809984', Type: 'BIGINT' },
            { Name: 'max_gpu_temp_c', Value: '71', Type: 'DOUBLE' },
            { Name: 'power_w', Value: '512.5', Type: 'DOUBLE' },
            { Name: 'ecc_dbe_volatile', Value: '0', Type: 'BIGINT' },
            { Name: 'remapped_rows_failure', Value: 'false', Type: 'BOOLEAN' },
            { Name: 'compute_processes', Value: '1', Type: 'BIGINT' },
            { Name: 'window_s', Value: '10', Type: 'DOUBLE' },
            { Name: 'gpu_hours', Value: String(10 / 3600), Type: 'DOUBLE' },
            { Name: 'price_usd_per_hour', Value: '55.04', Type: 'DOUBLE' },
            { Name: 'price_source', Value: 'builtin:aws-2025-06', Type: 'VARCHAR' },
            { Name: 'gpu_count', Value: '8', Type: 'BIGINT' },
            { Name: 'cost_usd', Value: String(cost), Type: 'DOUBLE' },
            { Name: 'efficiency', Value: '0.4', Type: 'DOUBLE' },
            { Name: 'efficiency_source', Value: 'sm_active', Type: 'VARCHAR' },
            { Name: 'processes_known', Value: 'true', Type: 'BOOLEAN' },
            { Name: 'waste_class', Value: 'underused', Type: 'VARCHAR' },
            { Name: 'idle_usd', Value: '0', Type: 'DOUBLE' },
            { Name: 'held_idle_usd', Value: '0', Type: 'DOUBLE' },
            { Name: 'underused_usd', Value: String(cost * 0.6), Type: 'DOUBLE' },
            { Name: 'broken_usd', Value: '0', Type: 'DOUBLE' },
            { Name: 'wasted_usd', Value: String(cost * 0.6), Type: 'DOUBLE' },
            { Name: 'throttled_usd', Value: '0', Type: 'DOUBLE' },
          ],
          Time: '1773144010000',
          TimeUnit: 'MILLISECONDS',
          Version: 7,
        },
      ],
    });
  });

  it('writes the pod holding the GPU as VARCHAR measures, keeping the window’s dimensions', async () => {
    // Prepare
    const row = gpuRow({ namespace: 'ml-train', pod: 'llama-7b-0', container: 'trainer' });

    // Act
    await store.write({ gpu: [row], efa: [], events: [] });

    // Assess
    const record = mock.commandCalls(WriteRecordsCommand)[0]!.args[0].input.Records![0]!;
    expect(record.Dimensions?.map((d) => d.Name)).toEqual([
      'instance_id',
      'instance_type',
      'gpu_index',
      'gpu_uuid',
      'az',
      'team',
      'job',
    ]);
    expect(record.MeasureValues?.slice(0, 3)).toEqual([
      { Name: 'namespace', Value: 'ml-train', Type: 'VARCHAR' },
      { Name: 'pod', Value: 'llama-7b-0', Type: 'VARCHAR' },
      { Name: 'container', Value: 'trainer', Type: 'VARCHAR' },
    ]);
  });

  it('omits optional dimensions and measures that are unknown', async () => {
    // Prepare
    const {
      az: _az,
      team: _team,
      job: _job,
      gpu_uuid: _uuid,
      ...bare
    } = gpuRow({ ledger: ledger({ efficiency: undefined }) });

    // Act
    await store.write({ gpu: [bare], efa: [], events: [] });

    // Assess
    const record = mock.commandCalls(WriteRecordsCommand)[0]!.args[0].input.Records![0]!;
    expect(record.Dimensions).toEqual([
      { Name: 'instance_id', Value: 'i-0123456789abcdef0' },
      { Name: 'instance_type', Value: 'p5.48xlarge' },
      { Name: 'gpu_index', Value: '0' },
    ]);
    expect(record.MeasureValues?.map((m) => m.Name)).not.toContain('efficiency');
  });

  it('writes EFA windows and events to their tables with their dimensions and measures', async () => {
    // Prepare
    const bare: EventRow = {
      time: '2026-03-10T12:00:01.000Z',
      instance_id: 'i-0123456789abcdef0',
      instance_type: 'p5.48xlarge',
      kind: 'agent_start',
      source: 'nvml',
      batch_id: 'b',
      seq: 3,
    };

    // Act
    await store.write({
      gpu: [],
      efa: [efaRow()],
      events: [eventRow({ pid: 4242, process_name: 'python' }), bare],
    });

    // Assess
    const calls = mock.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input);
    expect(calls).toEqual([
      {
        DatabaseName: 'gpu_sentinel',
        TableName: 'efa_windows',
        Records: [
          {
            Dimensions: [
              { Name: 'instance_id', Value: 'i-0123456789abcdef0' },
              { Name: 'instance_type', Value: 'p5.48xlarge' },
              { Name: 'device', Value: 'rdmap16s27' },
              { Name: 'port', Value: '1' },
            ],
            MeasureName: 'efa',
            MeasureValueType: 'MULTI',
            MeasureValues: [
              { Name: 'rx_drops', Value: '0', Type: 'BIGINT' },
              { Name: 'rx_pkts', Value: '1200', Type: 'BIGINT' },
              { Name: 'tx_pkts', Value: '1100', Type: 'BIGINT' },
            ],
            Time: '1773144010000',
            TimeUnit: 'MILLISECONDS',
            Version: 7,
          },
        ],
      },
      {
        DatabaseName: 'gpu_sentinel',
        TableName: 'events',
        Records: [
          {
            Dimensions: [
              { Name: 'instance_id', Value: 'i-0123456789abcdef0' },
              { Name: 'gpu_index', Value: '3' },
              { Name: 'kind', Value: 'xid' },
            ],
            MeasureName: 'event',
            MeasureValueType: 'MULTI',
            MeasureValues: [
              { Name: 'source', Value: 'kmsg', Type: 'VARCHAR' },
              { Name: 'xid', Value: '79', Type: 'BIGINT' },
              { Name: 'pid', Value: '4242', Type: 'BIGINT' },
              { Name: 'detail', Value: 'GPU has fallen off the bus.', Type: 'VARCHAR' },
              { Name: 'pci_bus_id', Value: '0000:53:00.0', Type: 'VARCHAR' },
              { Name: 'process_name', Value: 'python', Type: 'VARCHAR' },
            ],
            Time: '1773144005250000',
            TimeUnit: 'MICROSECONDS',
            Version: 7,
          },
          {
            Dimensions: [
              { Name: 'instance_id', Value: 'i-0123456789abcdef0' },
              { Name: 'kind', Value: 'agent_start' },
            ],
            MeasureName: 'event',
            MeasureValueType: 'MULTI',
            MeasureValues: [{ Name: 'source', Value: 'nvml', Type: 'VARCHAR' }],
            Time: '1773144001000000',
            TimeUnit: 'MICROSECONDS',
            Version: 3,
          },
        ],
      },
    ]);
  });

  it.each([
    { rows: 1, sizes: [1] },
    { rows: 100, sizes: [100] },
    { rows: 101, sizes: [100, 1] },
    { rows: 250, sizes: [100, 100, 50] },
  ])('writes $rows GPU windows in calls of $sizes records', async ({ rows, sizes }) => {
    // Prepare
    const gpu = Array.from({ length: rows }, (_, i) =>
      gpuRow({
        gpu_index: i % 64,
        time: new Date(1_773_144_010_000 + Math.floor(i / 64) * 10_000).toISOString(),
      }),
    );

    // Act
    const result = await store.write({ gpu, efa: [], events: [] });

    // Assess
    expect(mock.commandCalls(WriteRecordsCommand).map((c) => c.args[0].input.Records?.length)).toEqual(sizes);
    expect(result).toEqual({ written: rows, rejected: [] });
  });

  it('writes to the configured table names', async () => {
    // Prepare
    const named = new TimestreamStore({
      client,
      database: 'db',
      tables: { gpu: 'g', efa: 'e', events: 'v' },
    });

    // Act
    await named.write({ gpu: [gpuRow()], efa: [efaRow()], events: [eventRow()] });

    // Assess
    expect(
      mock
        .commandCalls(WriteRecordsCommand)
        .map((c) => [c.args[0].input.DatabaseName, c.args[0].input.TableName]),
    ).toEqual([
      ['db', 'g'],
      ['db', 'e'],
      ['db', 'v'],
    ]);
  });

  it('refuses an EFA window without counters without sending it', async () => {
    // Act
    const result = await store.write({ gpu: [], efa: [efaRow({ deltas: {} })], events: [] });

    // Assess
    expect(mock.commandCalls(WriteRecordsCommand)).toHaveLength(0);
    expect(result).toEqual({
      written: 0,
      rejected: [{ table: 'efa_windows', index: 0, reason: expect.stringContaining('no measure values') }],
    });
  });

  it('maps rejected records back to their row index, counting version duplicates as written', async () => {
    // Prepare
    const gpu: GpuWindowRow[] = Array.from({ length: 150 }, (_, i) =>
      gpuRow({
        gpu_index: i % 50,
        time: new Date(1_773_144_010_000 + Math.floor(i / 50) * 10_000).toISOString(),
      }),
    );
    mock
      .on(WriteRecordsCommand)
      .resolvesOnce({})
      .rejectsOnce(
        new RejectedRecordsException({
          message: 'One or more records have been rejected.',
          $metadata: {},
          RejectedRecords: [
            {
              RecordIndex: 3,
              Reason: 'The record timestamp is outside the time range of the data ingestion window.',
            },
            { RecordIndex: 7, Reason: 'A record with a higher version exists', ExistingVersion: 9 },
            { RecordIndex: 8, Reason: 'Same version, different value', ExistingVersion: 7 },
            { RecordIndex: 9, Reason: 'Older version exists with different value', ExistingVersion: 6 },
          ],
        }),
      );

    // Act
    const result = await store.write({ gpu, efa: [], events: [] });

    // Assess
    expect(result).toEqual({
      written: 148,
      rejected: [
        {
          table: 'gpu_windows',
          index: 103,
          reason: 'The record timestamp is outside the time range of the data ingestion window.',
        },
        { table: 'gpu_windows', index: 109, reason: 'Older version exists with different value' },
      ],
    });
  });

  it.each([
    {
      case: 'throttling',
      error: new ThrottlingException({ message: 'Rate exceeded', Message: 'Rate exceeded', $metadata: {} }),
    },
    { case: 'a network error', error: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) },
    {
      case: 'a RecordIndex out of range',
      error: new RejectedRecordsException({
        message: 'x',
        $metadata: {},
        RejectedRecords: [{ RecordIndex: 5, Reason: 'r' }],
      }),
    },
  ])('throws StoreUnavailableError with the cause on $case', async ({ error }) => {
    // Prepare
    mock.on(WriteRecordsCommand).rejects(error);

    // Act
    const result = store.write({ gpu: [gpuRow()], efa: [], events: [] });

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(result).rejects.toMatchObject({ cause: error, operation: 'WriteRecords gpu_windows' });
  });
});

describe('TimestreamStore.queryWaste', () => {
  const client = new TimestreamWriteClient({ region: 'us-east-1' });
  const queryClient = new TimestreamQueryClient({ region: 'us-east-1' });
  const queryMock = mockClient(queryClient);
  const columns = [
    'instance_id',
    'gpu_index',
    'instance_type',
    'team',
    'job',
    'gpu_hours',
    'cost_usd',
    'idle_usd',
    'held_idle_usd',
    'underused_usd',
    'broken_usd',
    'wasted_usd',
    'efficiency_weighted',
    'efficiency_hours',
    'source_count',
    'any_source',
    'price_usd_per_hour',
    'price_source',
    'processes_unknown',
    'wasted_idle_usd',
    'wasted_tensor_idle_usd',
  ].map((Name) => ({ Name, Type: {} }));
  const row = (values: (string | undefined)[]) => ({
    Data: values.map((v) => (v === undefined ? { NullValue: true } : { ScalarValue: v })),
  });

  afterEach(() => {
    expectValidAwsInputs(queryMock, 'timestream-query');
  });

  beforeEach(() => {
    queryMock.reset();
  });

  it('reads every page and returns report rows, most wasted first', async () => {
    // Prepare
    queryMock
      .on(QueryCommand)
      // First the table's columns (the schema probe), then the report's two pages.
      .resolvesOnce({
        QueryId: 'p',
        Rows: [],
        ColumnInfo: EVERY_GPU_COLUMN.map((Name) => ({ Name, Type: {} })),
      })
      .resolvesOnce({
        ColumnInfo: columns,
        Rows: [
          row([
            'i-a',
            '0',
            'p5.48xlarge',
            'vision',
            undefined,
            '1',
            '6.88',
            '0',
            '0',
            '1',
            '0',
            '1',
            '0.45',
            '1',
            '1',
            'sm_active',
            '55.04',
            'builtin',
            '0',
            '0',
            '1',
          ]),
        ],
        NextToken: 'page-2',
        QueryId: 'q',
      })
      .resolvesOnce({
        ColumnInfo: columns,
        Rows: [
          row([
            'i-b',
            '1',
            'p4d.24xlarge',
            undefined,
            undefined,
            '2',
            '5.49',
            '5.49',
            '0',
            '0',
            '0',
            '5.49',
            '0',
            '0',
            '0',
            undefined,
            '21.96',
            'override',
            '1',
            '5.49',
            undefined,
          ]),
        ],
        QueryId: 'q',
      });
    const store = new TimestreamStore({ client, queryClient, database: 'gpu_sentinel' });

    // Act
    const report = await store.queryWaste({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
    });

    // Assess
    const calls = queryMock
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input)
      .filter((i) => i.QueryString !== SCHEMA_PROBE);
    expect(calls[1]).toEqual({ QueryString: calls[0]!.QueryString, NextToken: 'page-2' });
    expect(calls[0]!.QueryString).toContain('FROM "gpu_sentinel"."gpu_windows"');
    expect(calls[0]!.QueryString).toContain("time >= from_iso8601_timestamp('2026-03-10T00:00:00.000Z')");
    expect(calls[0]!.QueryString).toContain("time < from_iso8601_timestamp('2026-03-11T00:00:00.000Z')");
    expect(calls[0]!.QueryString).toContain(
      "sum(CASE WHEN diagnosis = 'tensor_idle' THEN wasted_usd END) AS wasted_tensor_idle_usd",
    );
    expect(report).toEqual([
      {
        instance_id: 'i-b',
        instance_type: 'p4d.24xlarge',
        gpu_index: 1,
        gpu_hours: 2,
        cost_usd: 5.49,
        idle_usd: 5.49,
        held_idle_usd: 0,
        underused_usd: 0,
        broken_usd: 0,
        wasted_usd: 5.49,
        throttled_usd: 0,
        efficiency_source: 'none',
        price_usd_per_hour: 21.96,
        price_source: 'override',
        processes_unknown: true,
        wasted_by_diagnosis_usd: { idle: 5.49 },
      },
      {
        instance_id: 'i-a',
        instance_type: 'p5.48xlarge',
        gpu_index: 0,
        team: 'vision',
        gpu_hours: 1,
        cost_usd: 6.88,
        idle_usd: 0,
        held_idle_usd: 0,
        underused_usd: 1,
        broken_usd: 0,
        wasted_usd: 1,
        throttled_usd: 0,
        efficiency: 0.45,
        efficiency_source: 'sm_active',
        price_usd_per_hour: 55.04,
        price_source: 'builtin',
        processes_unknown: false,
        wasted_by_diagnosis_usd: { tensor_idle: 1 },
      },
    ]);
  });

  it('throws StoreQueryError without a query client', async () => {
    // Prepare
    const store = new TimestreamStore({ client, database: 'gpu_sentinel' });

    // Act
    const result = store.queryWaste({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
    });

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreQueryError);
  });

  it('throws StoreUnavailableError when the query fails', async () => {
    // Prepare
    queryMock.on(QueryCommand).rejects(new Error('ThrottlingException'));
    const store = new TimestreamStore({ client, queryClient, database: 'gpu_sentinel' });

    // Act
    const result = store.queryWaste({
      from: new Date('2026-03-10T00:00:00Z'),
      to: new Date('2026-03-11T00:00:00Z'),
    });

    // Assess
    await expect(result).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});

describe('TimestreamStore reads', () => {
  const queryClient = new TimestreamQueryClient({ region: 'us-east-1' });
  const queryMock = mockClient(queryClient);
  const client = new TimestreamWriteClient({ region: 'us-east-1' });
  const range = { from: new Date('2026-03-10T00:00:00Z'), to: new Date('2026-03-11T00:00:00Z') };
  const answer = (names: string[], rows: Array<Array<string | undefined>>) => ({
    QueryId: 'q',
    ColumnInfo: names.map((Name) => ({ Name, Type: { ScalarType: 'VARCHAR' as const } })),
    Rows: rows.map((r) => ({
      Data: r.map((v) => (v === undefined ? { NullValue: true } : { ScalarValue: v })),
    })),
  });
  let store: TimestreamStore;
  /** The GPU table as Timestream builds it from what was written: dimensions, `measure_name`, `time`, measures. */
  const schema = (columns: readonly string[]) =>
    queryMock.on(QueryCommand, { QueryString: SCHEMA_PROBE }).resolves(answer([...columns], []));
  /** The report query sent (not the schema probe). */
  const reportSql = () =>
    queryMock
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input.QueryString ?? '')
      .find((q) => q !== SCHEMA_PROBE) ?? '';

  beforeEach(() => {
    queryMock.reset();
    store = new TimestreamStore({ client, queryClient, database: 'gpu_sentinel' });
  });

  it('groups by a column no record ever had as one group without a value, instead of failing the query', async () => {
    // Prepare: a fleet off Kubernetes never wrote `namespace`, and no horizon ever gave a `diagnosis`
    queryMock
      .on(QueryCommand)
      .resolves(answer(['group_key', 'gpu_hours', 'cost_usd', 'wasted_usd'], [[undefined, '1', '2', '0.5']]));
    schema(EVERY_GPU_COLUMN.filter((c) => !['namespace', 'pod', 'container', 'diagnosis'].includes(c)));

    // Act
    const rows = await store.queryWasteBy({ ...range, by: 'namespace' });

    // Assess
    const sql = reportSql();
    expect(sql).toContain(
      'SELECT *, CAST(NULL AS varchar) AS namespace, CAST(NULL AS varchar) AS diagnosis FROM "gpu_sentinel"."gpu_windows"',
    );
    expect(rows).toEqual([
      expect.objectContaining({ gpu_hours: 1, cost_usd: 2, wasted_usd: 0.5, wasted_by_diagnosis_usd: {} }),
    ]);
    expect(rows[0]).not.toHaveProperty('group');
  });

  it.each([
    {
      case: 'once, when every column the groupings need exists',
      columns: EVERY_GPU_COLUMN,
      probes: 1,
    },
    {
      case: 'again on each read while one is missing (the next batch may bring it)',
      columns: EVERY_GPU_COLUMN.filter((c) => c !== 'namespace'),
      probes: 2,
    },
  ])('reads the table’s columns $case', async ({ columns, probes }) => {
    // Prepare
    queryMock.on(QueryCommand).resolves(answer(['group_key', 'gpu_hours'], []));
    schema(columns);

    // Act
    for (const by of ['namespace', 'namespace', 'team'] as const) await store.queryWasteBy({ ...range, by });

    // Assess
    const sent = queryMock.commandCalls(QueryCommand).map((c) => c.args[0].input.QueryString);
    expect(sent.filter((q) => q === SCHEMA_PROBE)).toHaveLength(probes);
  });

  it('sums waste by team with the per-diagnosis split, over the gpu records of the range', async () => {
    // Prepare
    queryMock.on(QueryCommand).resolves(
      answer(
        [
          'group_key',
          'gpu_hours',
          'cost_usd',
          'idle_usd',
          'held_idle_usd',
          'underused_usd',
          'broken_usd',
          'wasted_usd',
          'wasted_idle_usd',
          'wasted_input_bound_usd',
        ],
        [
          [undefined, '1', '2', '0', '0', '0.5', '0', '0.5', undefined, '0.5'],
          ['vision', '3', '6', '2', '0', '1', '0', '3', '2', '1'],
        ],
      ),
    );

    schema(EVERY_GPU_COLUMN);

    // Act
    const rows = await store.queryWasteBy({ ...range, by: 'team' });

    // Assess
    const sql = reportSql();
    expect(sql).toContain("measure_name = 'gpu'");
    expect(sql).toContain('GROUP BY team');
    expect(sql).toContain(
      "sum(CASE WHEN diagnosis = 'fake_load' THEN wasted_usd END) AS wasted_fake_load_usd",
    );
    expect(rows).toEqual([
      {
        group: 'vision',
        gpu_hours: 3,
        cost_usd: 6,
        idle_usd: 2,
        held_idle_usd: 0,
        underused_usd: 1,
        broken_usd: 0,
        wasted_usd: 3,
        throttled_usd: 0,
        wasted_by_diagnosis_usd: { idle: 2, input_bound: 1 },
      },
      {
        gpu_hours: 1,
        cost_usd: 2,
        idle_usd: 0,
        held_idle_usd: 0,
        underused_usd: 0.5,
        broken_usd: 0,
        wasted_usd: 0.5,
        throttled_usd: 0,
        wasted_by_diagnosis_usd: { input_bound: 0.5 },
      },
    ]);
  });

  it.each(['namespace', 'pod'] as const)(
    'sums waste by Kubernetes %s, a column of the gpu records (a VARCHAR measure)',
    async (by) => {
      // Prepare
      queryMock
        .on(QueryCommand)
        .resolves(
          answer(
            ['group_key', 'gpu_hours', 'cost_usd', 'held_idle_usd', 'wasted_usd', 'wasted_held_idle_usd'],
            [['ml-train', '2', '4', '4', '4', '4']],
          ),
        );

      schema(EVERY_GPU_COLUMN);

      // Act
      const [row] = await store.queryWasteBy({ ...range, by });

      // Assess
      const sql = reportSql();
      expect(sql).toContain(`SELECT ${by} AS group_key`);
      expect(sql).toContain(`GROUP BY ${by}`);
      expect(row).toMatchObject({
        group: 'ml-train',
        held_idle_usd: 4,
        wasted_usd: 4,
        wasted_by_diagnosis_usd: { held_idle: 4 },
      });
    },
  );

  it('reads recent windows of one instance, typed, with start from window_s and no batch id or seq', async () => {
    // Prepare
    queryMock
      .on(QueryCommand)
      .resolves(
        answer(
          [
            'instance_id',
            'instance_type',
            'gpu_index',
            'time',
            'measure_name',
            'sm_active',
            'fb_used_bytes',
            'remapped_rows_failure',
            'window_s',
            'waste_class',
            'team',
          ],
          [
            [
              'i-0123456789abcdef0',
              'p5.48xlarge',
              '3',
              '2026-03-10 12:00:10.000000000',
              'gpu',
              '0.4',
              '60000000000',
              'false',
              '10',
              'underused',
              undefined,
            ],
          ],
        ),
      );

    // Act
    const rows = await store.recentWindows({ ...range, instance_id: "i-0123456789abcdef0'", limit: 5 });

    // Assess
    const sql = queryMock.commandCalls(QueryCommand)[0]?.args[0].input.QueryString ?? '';
    expect(sql).toContain("WHERE instance_id = 'i-0123456789abcdef0'''");
    expect(sql).toContain('LIMIT 5');
    expect(rows).toEqual([
      {
        time: '2026-03-10T12:00:10.000Z',
        start: '2026-03-10T12:00:00.000Z',
        instance_id: 'i-0123456789abcdef0',
        instance_type: 'p5.48xlarge',
        gpu_index: 3,
        metrics: { sm_active: 0.4, fb_used_bytes: 60_000_000_000, remapped_rows_failure: false },
        ledger: { window_s: 10, waste_class: 'underused' },
      },
    ]);
  });

  it('reads the last window time per instance', async () => {
    // Prepare
    queryMock
      .on(QueryCommand)
      .resolves(
        answer(
          ['instance_id', 'instance_type', 'last_seen'],
          [['i-a', 'p5.48xlarge', '2026-03-10 12:04:50.000000000']],
        ),
      );

    // Act
    const seen = await store.lastSeen(range);

    // Assess
    expect(queryMock.commandCalls(QueryCommand)[0]?.args[0].input.QueryString).toContain(
      'max("time") AS last_seen',
    );
    expect(seen).toEqual([
      { instance_id: 'i-a', instance_type: 'p5.48xlarge', last_seen: '2026-03-10T12:04:50.000Z' },
    ]);
  });

  it('reads the straggler means per instance and job in one query, a metric no record had read as absent', async () => {
    // Prepare: no record ever carried gpu_temp_c
    queryMock
      .on(QueryCommand)
      .resolves(
        answer(
          ['instance_id', 'job', 'sm_active', 'power_w', 'gpu_temp_c'],
          [['i-a', 'train-42', '0.8', '650.5', undefined]],
        ),
      );
    schema(EVERY_GPU_COLUMN.filter((c) => c !== 'gpu_temp_c'));

    // Act
    const means = await store.nodeJobMeans(range);

    // Assess
    const sql = reportSql();
    expect(sql).toContain('CAST(NULL AS double) AS gpu_temp_c');
    expect(sql).toContain('GROUP BY instance_id, job');
    expect(
      queryMock.commandCalls(QueryCommand).filter((c) => c.args[0].input.QueryString !== SCHEMA_PROBE),
    ).toHaveLength(1);
    expect(means).toEqual([{ instance_id: 'i-a', job: 'train-42', sm_active: 0.8, power_w: 650.5 }]);
  });

  it('throws StoreQueryError for a bad limit', async () => {
    // Prepare / Act / Assess
    await expect(store.recentWindows({ ...range, instance_id: 'i-a', limit: 0 })).rejects.toThrow(
      StoreQueryError,
    );
  });
});
