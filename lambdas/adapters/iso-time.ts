/**
 * ISO 8601 → epoch milliseconds, with a clear error naming the field: the state stores keep times
 * as given and compare them as numbers.
 *
 * @param iso - an ISO 8601 / RFC 3339 time
 * @param field - the name of the field, for the message
 * @returns epoch ms
 * @throws {TypeError} when `iso` is not a time
 */
export function isoToMs(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) {
    throw new TypeError(
      `Expected \`${field}\` to be an ISO 8601 time, got \`${iso}\`; pass e.g. 2026-01-01T00:00:00Z.`,
    );
  }
  return ms;
}
