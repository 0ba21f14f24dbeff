/**
 * How money and shares read in reports (CSV, HTML, text, SNS): one home, so every output rounds the
 * same unrounded ledger sums the same way.
 */

/**
 * USD with cents, no symbol or grouping, for spreadsheets.
 *
 * @param usd - an amount in USD
 * @returns e.g. `1234.50`
 */
export function usdCents(usd: number): string {
  return usd.toFixed(2);
}

/**
 * USD for people: symbol, thousands separators, cents.
 *
 * @param usd - an amount in USD, ≥ 0
 * @returns e.g. `$1,234.50`
 */
export function usdDisplay(usd: number): string {
  return `$${usdCents(usd).replace(/\B(?=(\d{3})+(?!\d))/g, ',')}`;
}

/**
 * A share as a percentage with one decimal.
 *
 * @param part - the part
 * @param whole - the whole; a share of nothing reads `–`
 * @returns e.g. `70.0 %`
 */
export function percentOf(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)} %` : '–';
}
