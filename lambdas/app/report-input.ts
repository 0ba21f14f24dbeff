import {
  type ReportGrouping,
  type ReportInput,
  type ReportPeriod,
  reportDays,
  type TelemetryStore,
} from '../domain';

/** The reads a report makes: the store's per-GPU and grouped sums. */
export type ReportStore = Pick<TelemetryStore, 'queryWaste' | 'queryWasteBy'>;

/**
 * Asks the store what a report needs, with the reads every store has: the per-GPU sums, the sums
 * grouped by team, by diagnosis and by each grouping asked for (each window counted for its own
 * tags), and per UTC day of the period the spent and wasted dollars (one grouped read per day; a
 * day without windows is left out).
 *
 * @param store - the telemetry store
 * @param period - the report period
 * @param groupings - the groupings the report will show (`instance` comes from the per-GPU sums)
 * @returns the report input
 * @throws whatever the store throws (unreachable, empty range)
 */
export async function gatherReportInput(
  store: ReportStore,
  period: ReportPeriod,
  groupings: readonly ReportGrouping[],
): Promise<ReportInput> {
  const range = { from: new Date(period.from), to: new Date(period.to) };
  const rows = await store.queryWaste(range);
  const groups: Partial<Record<ReportGrouping, Awaited<ReturnType<ReportStore['queryWasteBy']>>>> = {};
  for (const by of new Set<ReportGrouping>(['team', 'diagnosis', ...groupings])) {
    if (by !== 'instance') groups[by] = await store.queryWasteBy({ ...range, by });
  }
  const daily = [];
  for (const slice of reportDays(period)) {
    const sums = await store.queryWasteBy({
      from: new Date(slice.from),
      to: new Date(slice.to),
      by: 'instance_type',
    });
    if (sums.length === 0) continue;
    daily.push({
      day: slice.day,
      cost_usd: sums.reduce((s, r) => s + r.cost_usd, 0),
      wasted_usd: sums.reduce((s, r) => s + r.wasted_usd, 0),
    });
  }
  return { rows, groups, daily };
}
