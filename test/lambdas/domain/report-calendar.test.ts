import { describe, expect, it } from 'vitest';
import {
  previousReportPeriod,
  ReportInputError,
  reportDays,
  reportLocalDate,
  reportPeriod,
  reportTimeZone,
} from '../../../lambdas/domain';

describe('reportPeriod', () => {
  it.each([
    // kind, at, zone, from, to
    ['day', '2026-03-11T06:00:00.000Z', 'UTC', '2026-03-10T00:00:00.000Z', '2026-03-11T00:00:00.000Z'],
    ['day', '2026-03-11T00:00:00.000Z', 'UTC', '2026-03-10T00:00:00.000Z', '2026-03-11T00:00:00.000Z'],
    // 2026-03-11 is a Wednesday: the last whole ISO week is Monday 2 to Monday 9 March
    ['week', '2026-03-11T06:00:00.000Z', 'UTC', '2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z'],
    ['week', '2026-03-09T00:20:00.000Z', 'UTC', '2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z'],
    ['month', '2026-03-11T06:00:00.000Z', 'UTC', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
    ['month', '2026-01-01T00:35:00.000Z', 'UTC', '2025-12-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'],
    // New York is UTC-5 until the second Sunday of March 2026 (8 March), UTC-4 after
    [
      'day',
      '2026-03-11T06:00:00.000Z',
      'America/New_York',
      '2026-03-10T04:00:00.000Z',
      '2026-03-11T04:00:00.000Z',
    ],
    [
      'month',
      '2026-03-11T06:00:00.000Z',
      'America/New_York',
      '2026-02-01T05:00:00.000Z',
      '2026-03-01T05:00:00.000Z',
    ],
    // Berlin is UTC+1 in winter: its 11 March starts at 23:00 UTC on the 10th
    [
      'day',
      '2026-03-10T23:30:00.000Z',
      'Europe/Berlin',
      '2026-03-09T23:00:00.000Z',
      '2026-03-10T23:00:00.000Z',
    ],
  ] as const)('the last whole %s before %s in %s is %s to %s', (kind, at, zone, from, to) => {
    // Prepare / Act
    const period = reportPeriod(kind, new Date(at), zone);
    // Assess
    expect(period).toEqual({ kind, from, to, time_zone: zone });
  });

  it('makes the day clocks spring forward 23 hours long', () => {
    // Prepare / Act: New York skipped 02:00-03:00 on Sunday 8 March 2026
    const period = reportPeriod('day', new Date('2026-03-09T12:00:00Z'), 'America/New_York');
    // Assess
    expect(period.from).toBe('2026-03-08T05:00:00.000Z');
    expect(Date.parse(period.to) - Date.parse(period.from)).toBe(23 * 3_600_000);
  });

  it('throws ReportInputError naming the field for an unknown zone or an invalid date', () => {
    // Prepare / Act / Assess
    expect(() => reportTimeZone('Mars/Olympus', '--tz')).toThrow(/`--tz` to be an IANA time zone/);
    expect(() => reportPeriod('day', new Date(Number.NaN))).toThrow(ReportInputError);
  });
});

describe('previousReportPeriod', () => {
  it.each([
    ['day', '2026-03-09T00:00:00.000Z', '2026-03-10T00:00:00.000Z'],
    ['week', '2026-02-23T00:00:00.000Z', '2026-03-02T00:00:00.000Z'],
    ['month', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
  ] as const)('the %s before the last one runs %s to %s', (kind, from, to) => {
    // Prepare
    const period = reportPeriod(kind, new Date('2026-03-11T06:00:00Z'));
    // Act / Assess
    expect(previousReportPeriod(period)).toEqual({ kind, from, to, time_zone: 'UTC' });
  });

  it('puts a custom range of the same length just before it', () => {
    // Prepare / Act
    const previous = previousReportPeriod({
      kind: 'custom',
      from: '2026-03-10T00:00:00.000Z',
      to: '2026-03-10T12:00:00.000Z',
    });
    // Assess
    expect(previous).toEqual({
      kind: 'custom',
      from: '2026-03-09T12:00:00.000Z',
      to: '2026-03-10T00:00:00.000Z',
    });
  });
});

describe('reportDays', () => {
  it('cuts a period into UTC days, clipped to the period', () => {
    // Prepare / Act
    const days = reportDays({
      kind: 'custom',
      from: '2026-03-09T18:00:00.000Z',
      to: '2026-03-11T06:00:00.000Z',
    });
    // Assess
    expect(days).toEqual([
      { day: '2026-03-09', from: '2026-03-09T18:00:00.000Z', to: '2026-03-10T00:00:00.000Z' },
      { day: '2026-03-10', from: '2026-03-10T00:00:00.000Z', to: '2026-03-11T00:00:00.000Z' },
      { day: '2026-03-11', from: '2026-03-11T00:00:00.000Z', to: '2026-03-11T06:00:00.000Z' },
    ]);
  });

  it('cuts the days of the period’s time zone, a DST day 23 hours long', () => {
    // Prepare
    const period = {
      kind: 'custom' as const,
      from: '2026-03-07T05:00:00.000Z',
      to: '2026-03-09T04:00:00.000Z',
      time_zone: 'America/New_York',
    };
    // Act
    const days = reportDays(period);
    // Assess
    expect(days).toEqual([
      { day: '2026-03-07', from: '2026-03-07T05:00:00.000Z', to: '2026-03-08T05:00:00.000Z' },
      { day: '2026-03-08', from: '2026-03-08T05:00:00.000Z', to: '2026-03-09T04:00:00.000Z' },
    ]);
  });

  it('names the local date of an instant', () => {
    // Prepare / Act / Assess
    expect(reportLocalDate('2026-03-10T23:00:00.000Z', 'Europe/Berlin')).toBe('2026-03-11');
    expect(reportLocalDate('2026-03-10T23:00:00.000Z')).toBe('2026-03-10');
  });
});
