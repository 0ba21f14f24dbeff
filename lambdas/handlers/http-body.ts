import { gunzipSync } from 'node:zlib';
import { BATCH_MEDIA_TYPE, MAX_BODY_COMPRESSED_BYTES, MAX_BODY_DECOMPRESSED_BYTES } from '../contract';
import { IngestRequestError } from './errors';

/** The parts of an API Gateway REST (v1) proxy event the body decoder reads. */
export interface RawBody {
  /** The body as API Gateway passes it: text, or base64 when `isBase64Encoded`. */
  readonly body: string | null;
  readonly isBase64Encoded: boolean;
  /** Request headers, any case (API Gateway keeps the client's case). */
  readonly headers: Readonly<Record<string, string | undefined>> | null;
}

/** The first two bytes of every gzip member (RFC 1952 §2.3.1, ID1 ID2). */
const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Decodes an ingest request body to a JSON value, enforcing the published size limits and media type.
 *
 * Whether the body is gzip is decided from its magic bytes, never from `Content-Encoding`: API
 * Gateway (REST) decompresses a `Content-Encoding: gzip` body before invoking the Lambda and passes
 * the header through unchanged, so the header says nothing about the bytes that arrive (API Gateway
 * developer guide, "Payload compression for REST APIs"). A gzip body that API Gateway did not
 * decompress (sent without the header) is still accepted.
 *
 * @param raw - body, base64 flag and headers of the proxy event
 * @returns the parsed JSON value (any shape; validate it with `parseBatch`)
 * @throws {IngestRequestError} 415 when `Content-Type` is not {@link BATCH_MEDIA_TYPE}; 413 when a
 *   gzip body exceeds {@link MAX_BODY_COMPRESSED_BYTES} or the JSON exceeds
 *   {@link MAX_BODY_DECOMPRESSED_BYTES} (gzip bombs stop at the limit); 400 for an empty body,
 *   broken gzip or invalid JSON
 */
export function decodeJsonBody(raw: RawBody): unknown {
  assertJsonMediaType(headerValue(raw.headers, 'content-type'));
  if (raw.body === null || raw.body === '')
    throw new IngestRequestError(400, '(root)', 'expected a JSON body, got none');
  if (!raw.isBase64Encoded) return parseJson(wellFormedText(raw.body));
  const wire = Buffer.from(raw.body, 'base64');
  const gzipped = wire.length >= 2 && wire[0] === GZIP_MAGIC[0] && wire[1] === GZIP_MAGIC[1];
  const limit = gzipped ? MAX_BODY_COMPRESSED_BYTES : MAX_BODY_DECOMPRESSED_BYTES;
  if (wire.length > limit) {
    throw new IngestRequestError(
      413,
      '(root)',
      `body of ${wire.length} bytes exceeds the limit of ${limit} bytes`,
    );
  }
  let text: string;
  if (gzipped) {
    try {
      text = gunzipSync(wire, { maxOutputLength: MAX_BODY_DECOMPRESSED_BYTES }).toString('utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new IngestRequestError(
          413,
          '(root)',
          `decompressed body exceeds the limit of ${MAX_BODY_DECOMPRESSED_BYTES} bytes`,
          { cause: err },
        );
      }
      throw new IngestRequestError(400, '(root)', `expected a valid gzip body: ${(err as Error).message}`, {
        cause: err,
      });
    }
  } else {
    text = wire.toString('utf8');
  }
  return parseJson(text);
}

/** `String.prototype` methods of ES2024, present on every Node.js the project runs (≥ 20). */
interface WellFormedString {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * A text body (not base64) as UTF-8 bytes would decode it, without encoding and decoding it: a body
 * API Gateway passes as text is never gzip (its UTF-8 bytes cannot start 0x1f 0x8b: 0x8b is never the
 * first byte of a character), so only its size is checked, in UTF-8 bytes
 * ({@link MAX_BODY_DECOMPRESSED_BYTES}); a lone surrogate becomes U+FFFD, as the bytes would decode.
 *
 * @throws {IngestRequestError} 413 when the body's UTF-8 is over {@link MAX_BODY_DECOMPRESSED_BYTES} bytes
 */
function wellFormedText(body: string): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes (a pair: 4 for 2): a body that fits at 3 is not counted.
  const bytes =
    body.length * 3 <= MAX_BODY_DECOMPRESSED_BYTES ? body.length : Buffer.byteLength(body, 'utf8');
  if (bytes > MAX_BODY_DECOMPRESSED_BYTES) {
    throw new IngestRequestError(
      413,
      '(root)',
      `body of ${bytes} bytes exceeds the limit of ${MAX_BODY_DECOMPRESSED_BYTES} bytes`,
    );
  }
  const text = body as string & WellFormedString;
  return text.isWellFormed() ? body : text.toWellFormed();
}

/** @throws {IngestRequestError} 400 naming the JSON error */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new IngestRequestError(400, '(root)', `expected JSON: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Checks the request's media type (parameters such as `charset` ignored, case-insensitive).
 * @throws {IngestRequestError} 415 naming what came, when it is not {@link BATCH_MEDIA_TYPE}
 */
function assertJsonMediaType(contentType: string | undefined): void {
  const media = contentType?.split(';')[0]?.trim().toLowerCase();
  if (media !== BATCH_MEDIA_TYPE) {
    throw new IngestRequestError(
      415,
      '(root)',
      `expected Content-Type ${BATCH_MEDIA_TYPE}, got ${contentType === undefined ? 'none' : `"${contentType}"`}`,
    );
  }
}

/** Case-insensitive header lookup. */
export function headerValue(
  headers: Readonly<Record<string, string | undefined>> | null,
  name: string,
): string | undefined {
  if (!headers) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}
