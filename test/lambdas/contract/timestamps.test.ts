import { describe, expect, it } from 'vitest';
import { epochMicros, epochMs, formatIsoMicros } from '../../../lambdas/contract';

describe('microsecond timestamps', () => {
  it.each([
    [Date.UTC(2024, 10, 15, 12, 2, 3) + 470.068, '2024-11-15T12:02:03.470068Z'],
    [Date.UTC(2024, 10, 15, 12, 2, 3), '2024-11-15T12:02:03.000000Z'],
    [Date.UTC(2025, 0, 21, 2, 21, 33) + 498.559, '2025-01-21T02:21:33.498559Z'],
    [Date.UTC(2025, 0, 21, 2, 21, 33) + 999.9996, '2025-01-21T02:21:34.000000Z'],
  ])('formats %d ms as %s', (ms, iso) => {
    expect(formatIsoMicros(ms)).toBe(iso);
  });

  it.each([
    ['2024-11-15T12:02:03.470068Z', 1731672123470068],
    ['2024-11-15T12:02:03.470068123Z', 1731672123470068],
    ['2024-11-15T12:02:03.47Z', 1731672123470000],
    ['2024-11-15T12:02:03Z', 1731672123000000],
    ['2024-11-15T13:02:03.470068+01:00', 1731672123470068],
  ])('reads %s as %d µs', (iso, us) => {
    expect(epochMicros(iso)).toBe(us);
  });

  it('keeps two events 89 µs apart distinct (the real Xid 13 burst)', () => {
    const a = formatIsoMicros(Date.UTC(2025, 0, 21, 2, 21, 33) + 498.559);
    const b = formatIsoMicros(Date.UTC(2025, 0, 21, 2, 21, 33) + 498.648);
    expect(a).not.toBe(b);
    expect(epochMicros(b) - epochMicros(a)).toBe(89);
  });

  it('refuses what is not a time', () => {
    expect(() => epochMicros('yesterday')).toThrow(RangeError);
    expect(() => formatIsoMicros(Number.NaN)).toThrow(RangeError);
  });
});

describe('epochMs', () => {
  it.each([
    '2026-03-10T12:00:10.000Z',
    '2026-03-10T13:00:10+01:00',
    '2024-11-15T12:02:03.470068Z',
    'not a time',
    '',
  ])('answers %j as Date.parse does, the first time and again', (iso) => {
    expect(epochMs(iso)).toStrictEqual(Date.parse(iso));
    expect(epochMs(iso)).toStrictEqual(Date.parse(iso));
  });

  it('stays right past the times it remembers (thousands of distinct times)', () => {
    const start = Date.parse('2026-03-10T12:00:00.000Z');
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 3000; i++) {
        const iso = new Date(start + i * 10_000).toISOString();
        expect(epochMs(iso)).toBe(start + i * 10_000);
      }
    }
  });
});
