/**
 * Microsecond timestamps. Kernel logs stamp XIDs to the microsecond and a faulting GPU logs many
 * within one millisecond (the real Xid 13 capture has 629 lines in bursts a few µs apart), so event
 * times travel as RFC 3339 strings with 6 fractional digits and are stored at µs precision: a
 * millisecond key would silently merge distinct events. JS `Date` holds only ms, hence these helpers.
 */

/**
 * Formats epoch milliseconds (fractional part = sub-millisecond) as RFC 3339 UTC with exactly
 * 6 fractional digits, e.g. `2024-11-15T12:02:03.470068Z`.
 *
 * @param epochMs - milliseconds since 1970-01-01T00:00:00Z; the fraction is rounded to the microsecond
 * @returns the timestamp string
 * @throws {RangeError} when `epochMs` is not finite
 */
export function formatIsoMicros(epochMs: number): string {
  if (!Number.isFinite(epochMs)) throw new RangeError(`Expected a finite epoch time in ms, got ${epochMs}`);
  const us = Math.round(epochMs * 1000);
  const ms = Math.floor(us / 1000);
  const sub = us - ms * 1000;
  return `${new Date(ms).toISOString().slice(0, -1)}${String(sub).padStart(3, '0')}Z`;
}

/**
 * Microseconds since the epoch of an RFC 3339 timestamp, exact to the digits given (digits past
 * the 6th are dropped). `2024-11-15T12:02:03.470068Z` → 1731672123470068.
 *
 * @param iso - an RFC 3339 timestamp with offset (as the contract accepts)
 * @returns integer microseconds (safe integer until year 2255)
 * @throws {RangeError} when `iso` is not a timestamp
 */
export function epochMicros(iso: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new RangeError(`Expected an RFC 3339 timestamp, got \`${iso}\``);
  const fraction = /T\d{2}:\d{2}:\d{2}\.(\d+)/.exec(iso)?.[1] ?? '';
  const subMs = Number(fraction.slice(3, 6).padEnd(3, '0'));
  return ms * 1000 + subMs;
}

/** Most times {@link epochMs} remembers before it starts again (a batch repeats a dozen window times). */
const EPOCH_MS_MAX = 1024;
const epochMsOf = new Map<string, number>();

/**
 * `Date.parse(iso)`, remembered: a batch's 56 windows share a dozen start and end times, which the
 * contract checks, the ledger and the batch metrics each read (≈ 280 parses of 12 strings a batch,
 * ≈ 0.4 µs each; a lookup is a tenth of that). The same answer as `Date.parse`, `NaN` included;
 * at most {@link EPOCH_MS_MAX} strings are kept, then it starts again.
 *
 * @param iso - a time as the contract writes it (RFC 3339), or any string `Date.parse` reads
 * @returns milliseconds since the epoch, or `NaN` when `Date.parse` cannot read it
 */
export function epochMs(iso: string): number {
  let ms = epochMsOf.get(iso);
  if (ms === undefined) {
    ms = Date.parse(iso);
    if (epochMsOf.size >= EPOCH_MS_MAX) epochMsOf.clear();
    epochMsOf.set(iso, ms);
  }
  return ms;
}
