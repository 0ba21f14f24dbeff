import { gunzipSync } from 'node:zlib';
import { MAX_BODY_COMPRESSED_BYTES, MAX_BODY_DECOMPRESSED_BYTES } from '../contract';
import { IngestRequestError } from './errors';

/** The parts of an API Gateway REST (v1) proxy event the body decoder reads. */
export interface RawBody {
  /** The body as API Gateway passes it: text, or base64 when `isBase64Encoded`. */
  readonly body: string | null;
  readonly isBase64Encoded: boolean;
  /** Request headers, any case (API Gateway keeps the client's case). */
  readonly headers: Readonly<Record<string, string | undefined>> | null;
}

/**
 * Decodes an ingest request body to a JSON value, enforcing the published size limits.
 * gzip is detected by `Content-Encoding: gzip` or by the gzip magic bytes (API Gateway may pass a
 * gzip body through base64-encoded as a binary media type, or decompress it itself).
 *
 * @param raw - body, base64 flag and headers of the proxy event
 * @returns the parsed JSON value (any shape; validate it with `parseBatch`)
 * @throws {IngestRequestError} 413 when the body exceeds {@link MAX_BODY_COMPRESSED_BYTES} on the
 *   wire or {@link MAX_BODY_DECOMPRESSED_BYTES} decompressed (gzip bombs stop at the limit);
 *   415 for an encoding other than gzip/identity; 400 for an empty body, broken gzip or invalid JSON
 */
export function decodeJsonBody(raw: RawBody): unknown {
  if (raw.body === null || raw.body === '')
    throw new IngestRequestError(400, '(root)', 'expected a JSON body, got none');
  const wire = raw.isBase64Encoded ? Buffer.from(raw.body, 'base64') : Buffer.from(raw.body, 'utf8');
  const encoding = headerValue(raw.headers, 'content-encoding')?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'gzip' && encoding !== 'identity') {
    throw new IngestRequestError(
      415,
      '(root)',
      `unsupported Content-Encoding "${encoding}"; send gzip or none`,
    );
  }
  const gzipped = encoding === 'gzip' || (wire.length >= 2 && wire[0] === 0x1f && wire[1] === 0x8b);
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
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new IngestRequestError(400, '(root)', `expected JSON: ${(err as Error).message}`, { cause: err });
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
