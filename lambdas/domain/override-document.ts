import type { OverrideDocumentError } from './errors';

/** An {@link OverrideDocumentError} subclass, as the parsers throw it. */
export type OverrideDocumentErrorClass = new (
  key: string,
  value: unknown,
  message: string,
  options?: { cause?: unknown },
) => OverrideDocumentError;

/**
 * Reads a deployment override document: JSON text holding one object of `key → value` entries (price
 * overrides, rule thresholds). The caller checks each entry.
 *
 * @param json - the text; `undefined` or blank means no overrides
 * @param what - what the document is, for messages (`price overrides`)
 * @param example - a valid document, for messages (`{"p5.48xlarge": 31.5}`)
 * @param ErrorClass - the error to throw, naming `(root)`
 * @returns the entries, or `undefined` when there is no document
 * @throws {OverrideDocumentError} (as `ErrorClass`) when the text is not JSON or not a JSON object
 */
export function readOverrideDocument(
  json: string | undefined,
  what: string,
  example: string,
  ErrorClass: OverrideDocumentErrorClass,
): [string, unknown][] | undefined {
  if (json === undefined || json.trim() === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (cause) {
    throw new ErrorClass(
      '(root)',
      json,
      `Expected ${what} as JSON like ${example}, got text that is not JSON: ${(cause as Error).message}. Fix the ${what} setting.`,
      { cause },
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ErrorClass(
      '(root)',
      value,
      `Expected ${what} to be a JSON object like ${example}, got ${Array.isArray(value) ? 'an array' : String(value)}.`,
    );
  }
  return Object.entries(value);
}
