import { QueryCommand, TimestreamQueryClient } from '@aws-sdk/client-timestream-query';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { StoreQueryError, StoreUnavailableError } from '../../../lambdas/adapters/errors';
import {
  queryTimestreamWasteSeries,
  wasteSeriesSql,
} from '../../../lambdas/adapters/timestream-waste-series';

const query = mockClient(TimestreamQueryClient);
const RANGE = { from: new Date('2026-03-10T00:00:00Z'), to: new Date('2026-03-11T00:00:00Z') };
const COLUMNS = [
  'day',
  'diagnosis',
  'team',
  'job',
  'instance_type',
  'price_source',
  'gpu_hours',
  'cost_usd',
  'idle_usd',
  'held_idle_usd',
  'underused_usd',
  'broken_usd',
  'wasted_usd',
  'efficiency_weighted',
  'efficiency_hours',
].map((Name) => ({ Name, Type: { ScalarType: 'VARCHAR' as const } }));

describe('queryTimestreamWasteSeries', () => {
  beforeEach(() => {
    query.reset();
  });

  it('runs the slice SQL page by page and reads NULL tags as absent', async () => {
    // Prepare
    const row = (team: string | null) => ({
      Data: [
        '2026-03-10',
        'idle',
        team,
        null,
        'p5.48xlarge',
        'builtin:t',
        '8',
        '55.04',
        '55.04',
        '0',
        '0',
        '0',
        '55.04',
        '0',
        '8',
      ].map((s) => (s === null ? { NullValue: true } : { ScalarValue: s })),
    });
    query
      .on(QueryCommand)
      .resolvesOnce({ ColumnInfo: COLUMNS, Rows: [row('vision')], NextToken: 't2', QueryId: 'q' })
      .resolvesOnce({ ColumnInfo: COLUMNS, Rows: [row(null)], QueryId: 'q' });
    // Act
    const rows = await queryTimestreamWasteSeries(
      new TimestreamQueryClient({}),
      'gpu_sentinel',
      'gpu_windows',
      RANGE,
    );
    // Assess
    const inputs = query.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(inputs).toEqual([
      { QueryString: wasteSeriesSql('gpu_sentinel', 'gpu_windows', RANGE.from, RANGE.to) },
      { QueryString: wasteSeriesSql('gpu_sentinel', 'gpu_windows', RANGE.from, RANGE.to), NextToken: 't2' },
    ]);
    expect(rows[0]).toEqual({
      day: '2026-03-10',
      diagnosis: 'idle',
      team: 'vision',
      instance_type: 'p5.48xlarge',
      price_source: 'builtin:t',
      gpu_hours: 8,
      cost_usd: 55.04,
      idle_usd: 55.04,
      held_idle_usd: 0,
      underused_usd: 0,
      broken_usd: 0,
      wasted_usd: 55.04,
      efficiency_weighted: 0,
      efficiency_hours: 8,
    });
    expect(rows[1]).not.toHaveProperty('team');
  });

  it('groups per UTC day and per each window’s own tags, in the ledger’s table only', () => {
    // Prepare / Act
    const sql = wasteSeriesSql('gpu_sentinel', 'gpu_windows', RANGE.from, RANGE.to);
    // Assess
    expect(sql).toContain(`date_format(bin(time, 1d), '%Y-%m-%d') AS day`);
    expect(sql).toContain('GROUP BY 1, diagnosis, team, job, instance_type, price_source');
    expect(sql).toContain(`FROM "gpu_sentinel"."gpu_windows"`);
    expect(sql).toContain(`time < from_iso8601_timestamp('2026-03-11T00:00:00.000Z')`);
  });

  it.each([
    ['an empty range', { from: RANGE.to, to: RANGE.to }, StoreQueryError],
    ['Timestream failing', RANGE, StoreUnavailableError],
  ])('throws for %s', async (_name, range, errorClass) => {
    // Prepare
    query.on(QueryCommand).rejects(new Error('ThrottlingException'));
    // Act / Assess
    await expect(
      queryTimestreamWasteSeries(new TimestreamQueryClient({}), 'gpu_sentinel', 'gpu_windows', range),
    ).rejects.toBeInstanceOf(errorClass);
  });
});
