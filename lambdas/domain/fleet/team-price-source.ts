import { CUR_PRICE_SOURCE } from '../cur-columns';
import type { FleetTeamRow } from './fleet-input';

/**
 * The `price_source` of a team's fleet waste when no Cost and Usage Report priced it: each window at
 * the price stored with it at ingest (list price, spot price or rate, configured rate; the ledger's
 * own `price_source` per window, docs/design.md §5).
 */
export const INGEST_PRICE_SOURCE = 'ingest';

/** A share this close to 1 counts as all of it (floating-point sums of GPU-hours). */
const WHOLE = 1 - 1e-9;

/**
 * How a team's waste dollars were priced, as alert evidence:
 * - `price_source`: `cur` when the CUR priced every GPU-hour (each instance at the effective cost of
 *   its newest billed hour); the stored source (`builtin:…`, `spot`, `savings_plan`, `override`, …
 *   or `mixed`) when it priced none; `cur+<stored source>` when it priced some; `ingest` when the
 *   deployment has no CUR ({@link INGEST_PRICE_SOURCE});
 * - `cur_gpu_hours_share`: the share of the GPU-hours the CUR priced, 0..1, 3 decimals (with a CUR);
 * - `cur_usage_hour`: the CUR hour whose rates priced them (ISO 8601 UTC), or `cur_usage_hours`,
 *   `<oldest>/<newest>`, when instances' newest hours differ.
 *
 * @param row - a team row of the fleet input
 * @returns the evidence fields
 * @example
 * teamPriceEvidence({ ...row, pricing: { cur_gpu_hours: 8, cur_usage_hour_from: '2026-03-10T21:00:00.000Z', cur_usage_hour_to: '2026-03-10T21:00:00.000Z' } });
 * // { price_source: 'cur', cur_gpu_hours_share: 1, cur_usage_hour: '2026-03-10T21:00:00.000Z' }
 */
export function teamPriceEvidence(row: FleetTeamRow): Readonly<Record<string, string | number>> {
  const p = row.pricing;
  if (p === undefined) return { price_source: INGEST_PRICE_SOURCE };
  const share = row.gpu_hours > 0 ? Math.min(1, p.cur_gpu_hours / row.gpu_hours) : 0;
  const stored = p.stored_price_source;
  const source =
    stored === undefined || share >= WHOLE
      ? CUR_PRICE_SOURCE
      : p.cur_gpu_hours > 0
        ? `${CUR_PRICE_SOURCE}+${stored}`
        : stored;
  const from = p.cur_usage_hour_from;
  const to = p.cur_usage_hour_to;
  const evidence: Record<string, string | number> = {
    price_source: source,
    cur_gpu_hours_share: Number(share.toFixed(3)),
  };
  if (from !== undefined && to !== undefined) {
    if (from === to) evidence.cur_usage_hour = to;
    else evidence.cur_usage_hours = `${from}/${to}`;
  }
  return evidence;
}

/**
 * The words an alert's summary adds about its prices: where a CUR priced the dollars, which billed
 * hour; nothing when the deployment has none (the ledger's stored prices, as ever).
 *
 * @param row - a team row of the fleet input
 * @returns `''`, or a clause starting with `, `
 */
export function teamPriceClause(row: FleetTeamRow): string {
  const e = teamPriceEvidence(row);
  if (row.pricing === undefined) return '';
  const hour = e.cur_usage_hour ?? e.cur_usage_hours;
  const billed = hour === undefined ? '' : ` (billed hour ${hour})`;
  if (e.price_source === CUR_PRICE_SOURCE) return `, at the CUR's effective rates${billed}`;
  if (row.pricing.cur_gpu_hours > 0) {
    return `, ${Math.round(Number(e.cur_gpu_hours_share) * 100)} % of GPU-hours at the CUR's effective rates${billed}, the rest at ${row.pricing.stored_price_source} prices`;
  }
  return `, at ${e.price_source} prices (the CUR has no recent hour of these instances)`;
}
