import { ReportInputError } from './report-input-error';

/**
 * Calendar periods of the finance reports (docs/finance.md, "Periods"): a day, an ISO week (Monday
 * to Monday) or a month, in UTC or in an IANA time zone, the same locally (`gpu-sentinel report
 * --period … --tz …`) and in AWS (the report Lambda). Time zones come from the runtime's `Intl`
 * (ICU's copy of the IANA tz database), so daylight-saving days are 23 or 25 hours long.
 */

/** Report period kinds: one calendar day, ISO week (from Monday 00:00) or month. */
export const REPORT_PERIODS = ['day', 'week', 'month'] as const;
/** One of {@link REPORT_PERIODS}, or `custom` for an explicit from/to. */
export type ReportPeriodKind = (typeof REPORT_PERIODS)[number] | 'custom';

/** The time zone of a report when none is given. */
export const REPORT_DEFAULT_TIME_ZONE = 'UTC';

/** The report period: `from ≤ window end < to`, ISO 8601 UTC. */
export interface ReportPeriod {
  readonly kind: ReportPeriodKind;
  readonly from: string;
  readonly to: string;
  /**
   * The IANA time zone whose calendar the period and its days follow, e.g. `Europe/Berlin`.
   * @default 'UTC' (when absent)
   */
  readonly time_zone?: string;
}

const MS_PER_DAY = 86_400_000;

/** One formatter per time zone (building one costs far more than formatting). */
const FORMATTERS = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = FORMATTERS.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    FORMATTERS.set(timeZone, f);
  }
  return f;
}

/**
 * Checks an IANA time zone name against the runtime's tz database.
 *
 * @param timeZone - e.g. `UTC`, `Europe/Berlin`, `America/New_York`
 * @param field - the option or field named in the error
 * @returns the canonical name the runtime uses (e.g. `Europe/Berlin`)
 * @throws {ReportInputError} naming `field` when the zone is unknown
 * @example
 * reportTimeZone('Europe/Berlin'); // 'Europe/Berlin'
 */
export function reportTimeZone(timeZone: string, field = 'tz'): string {
  try {
    return formatter(timeZone).resolvedOptions().timeZone;
  } catch {
    throw new ReportInputError(
      field,
      timeZone,
      `Expected \`${field}\` to be an IANA time zone like UTC or Europe/Berlin, got \`${timeZone}\`.`,
    );
  }
}

/** The calendar date and wall time of an instant in a zone. */
function wallTime(ms: number, timeZone: string): { y: number; m: number; d: number; wallMs: number } {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(ms)) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  const y = parts.year ?? 1970;
  const m = parts.month ?? 1;
  const d = parts.day ?? 1;
  const wallMs = Date.UTC(y, m - 1, d, parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0);
  return { y, m, d, wallMs };
}

/** The zone's offset from UTC at an instant, ms (wall − UTC, whole seconds). */
function offsetMs(ms: number, timeZone: string): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return wallTime(whole, timeZone).wallMs - whole;
}

/**
 * The instant a calendar date starts in a zone: its local 00:00 (or, where a DST change skips
 * midnight, the first instant of that date).
 *
 * @param y - year
 * @param m - month, 1..12 (overflow rolls into the next year, like `Date.UTC`)
 * @param d - day of the month (overflow and 0 roll like `Date.UTC`)
 * @param timeZone - IANA zone
 * @returns epoch ms
 */
function startOfDate(y: number, m: number, d: number, timeZone: string): number {
  const wall = Date.UTC(y, m - 1, d);
  let t = wall - offsetMs(wall, timeZone);
  t = wall - offsetMs(t, timeZone);
  const local = wallTime(t, timeZone);
  // A midnight the clocks skip: the date starts when they land on it, an hour (at most) later.
  return local.wallMs < wall ? t + (wall - local.wallMs) : t;
}

/**
 * The last whole calendar period that ends at or before `at`: the day before the day of `at`, the
 * ISO week (Monday 00:00 to Monday 00:00) before the week of `at`, or the month before the month
 * of `at`, in `timeZone`. The scheduled reports run just after midnight, so this is yesterday, last
 * week or last month.
 *
 * @param kind - `day`, `week` or `month`
 * @param at - the instant the period ends at or before (the clock, or `--to`)
 * @param timeZone - IANA zone of the calendar. @default 'UTC'
 * @returns `{ kind, from, to, time_zone }`, ISO 8601 UTC
 * @throws {ReportInputError} when `at` is not a valid date or the zone is unknown
 * @example
 * reportPeriod('month', new Date('2026-03-11T06:00:00Z')); // 2026-02-01T00:00Z to 2026-03-01T00:00Z
 * reportPeriod('day', new Date('2026-03-11T06:00:00Z'), 'America/New_York'); // 2026-03-10T05:00Z to 2026-03-11T04:00Z
 */
export function reportPeriod(
  kind: (typeof REPORT_PERIODS)[number],
  at: Date,
  timeZone: string = REPORT_DEFAULT_TIME_ZONE,
): ReportPeriod {
  if (Number.isNaN(at.getTime())) throw new ReportInputError('end', at, 'Expected a valid end date.');
  const zone = reportTimeZone(timeZone);
  const { y, m, d } = wallTime(at.getTime(), zone);
  let from: number;
  let to: number;
  if (kind === 'day') {
    to = startOfDate(y, m, d, zone);
    from = startOfDate(y, m, d - 1, zone);
  } else if (kind === 'week') {
    const weekday = (new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7; // Monday 0 … Sunday 6
    to = startOfDate(y, m, d - weekday, zone);
    from = startOfDate(y, m, d - weekday - 7, zone);
  } else {
    to = startOfDate(y, m, 1, zone);
    from = startOfDate(y, m - 1, 1, zone);
  }
  return {
    kind,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    time_zone: zone,
  };
}

/**
 * The period just before `period`, of the same length in calendar terms: the previous day, ISO
 * week or month (a custom period: the same duration just before it). The report's change against
 * the previous period compares with it.
 *
 * @param period - a report period
 * @returns the previous period, same kind and zone
 * @example
 * previousReportPeriod(reportPeriod('month', new Date('2026-03-11T00:00:00Z'))); // January 2026
 */
export function previousReportPeriod(period: ReportPeriod): ReportPeriod {
  if (period.kind === 'custom') {
    const fromMs = Date.parse(period.from);
    const length = Date.parse(period.to) - fromMs;
    return { ...period, from: new Date(fromMs - length).toISOString(), to: period.from };
  }
  return reportPeriod(period.kind, new Date(Date.parse(period.from)), period.time_zone);
}

/**
 * The calendar date of an instant in a zone.
 *
 * @param iso - an ISO 8601 instant
 * @param timeZone - IANA zone. @default 'UTC'
 * @returns `YYYY-MM-DD`
 * @throws {ReportInputError} when the zone is unknown
 * @example
 * reportLocalDate('2026-03-10T23:00:00.000Z', 'Europe/Berlin'); // '2026-03-11'
 */
export function reportLocalDate(iso: string, timeZone: string = REPORT_DEFAULT_TIME_ZONE): string {
  const { y, m, d } = wallTime(Date.parse(iso), reportTimeZone(timeZone, 'time_zone'));
  return isoDate(y, m, d);
}

function isoDate(y: number, m: number, d: number): string {
  return `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`;
}

/**
 * The calendar days a period touches in its time zone, each clipped to the period: the slices the
 * trend and the line items are summed over.
 *
 * @param period - the report period (its `time_zone`, UTC when absent)
 * @returns `{ day, from, to }` per day, ascending; `day` the local date `YYYY-MM-DD`, `from`/`to` ISO 8601 UTC
 */
export function reportDays(period: ReportPeriod): { day: string; from: string; to: string }[] {
  const zone = reportTimeZone(period.time_zone ?? REPORT_DEFAULT_TIME_ZONE, 'time_zone');
  const endMs = Date.parse(period.to);
  const out: { day: string; from: string; to: string }[] = [];
  let fromMs = Date.parse(period.from);
  while (fromMs < endMs) {
    const { y, m, d } = wallTime(fromMs, zone);
    let nextMs = Math.min(startOfDate(y, m, d + 1, zone), endMs);
    if (nextMs <= fromMs) nextMs = Math.min(fromMs + MS_PER_DAY, endMs);
    out.push({
      day: isoDate(y, m, d),
      from: new Date(fromMs).toISOString(),
      to: new Date(nextMs).toISOString(),
    });
    fromMs = nextMs;
  }
  return out;
}
