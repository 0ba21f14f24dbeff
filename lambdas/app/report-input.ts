import {
  type ReportDayRows,
  type ReportGrouping,
  type ReportInput,
  type ReportPeriod,
  reportDays,
  type TelemetryStore,
  WASTE_GROUPS,
  type WasteGroup,
} from '../domain';

/** The reads a report makes: the store's per-GPU and grouped sums. */
export type ReportStore = Pick<TelemetryStore, 'queryWaste' | 'queryWasteBy'>;

/**
 * Asks the store what a report needs, with the reads every store has: the per-GPU sums over the
 * period, the sums grouped by team, by diagnosis and by each store grouping asked for (each window
 * counted for its own tags), and per day of the period its per-GPU sums (one read per day, the line
 * items and the trend; a day without windows is left out).
 *
 * @param store - the telemetry store
 * @param period - the report period
 * @param groupings - the groupings the report will show (`instance` and `gpu` come from the per-GPU sums)
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
  const storeGroupings = new Set<ReportGrouping>(['team', 'diagnosis', ...groupings]);
  for (const by of WASTE_GROUPS) {
    if (by !== 'instance' && storeGroupings.has(by)) {
      groups[by] = await store.queryWasteBy({ ...range, by: by satisfies WasteGroup });
    }
  }
  const days: ReportDayRows[] = [];
  for (const slice of reportDays(period)) {
    const dayRows = await store.queryWaste({ from: new Date(slice.from), to: new Date(slice.to) });
    if (dayRows.length > 0) days.push({ day: slice.day, rows: dayRows });
  }
  return { rows, groups, days };
}
