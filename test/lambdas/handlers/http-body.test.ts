import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_BODY_COMPRESSED_BYTES, MAX_BODY_DECOMPRESSED_BYTES } from '../../../lambdas/contract';
import { IngestRequestError } from '../../../lambdas/handlers/errors';
import { decodeJsonBody } from '../../../lambdas/handlers/http-body';

function refusal(fn: () => unknown): IngestRequestError {
  try {
    fn();
  } catch (err) {
    if (err instanceof IngestRequestError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

const JSON_TYPE = { 'Content-Type': 'application/json' };

describe('decodeJsonBody', () => {
  const json = { schema: 'gpu-sentinel/v1', seq: 1 };

  it.each([
    ['plain JSON text', { body: JSON.stringify(json), isBase64Encoded: false, headers: JSON_TYPE }],
    [
      // What API Gateway hands the Lambda for the agent's gzip request: decompressed text, header kept
      'plain JSON text with the Content-Encoding: gzip header API Gateway passes through',
      {
        body: JSON.stringify(json),
        isBase64Encoded: false,
        headers: { ...JSON_TYPE, 'Content-Encoding': 'gzip' },
      },
    ],
    [
      'base64 JSON',
      {
        body: Buffer.from(JSON.stringify(json)).toString('base64'),
        isBase64Encoded: true,
        headers: JSON_TYPE,
      },
    ],
    [
      'base64 gzip without the header (detected by magic bytes)',
      { body: gzipSync(JSON.stringify(json)).toString('base64'), isBase64Encoded: true, headers: JSON_TYPE },
    ],
    [
      'a media type with parameters, in any case',
      {
        body: JSON.stringify(json),
        isBase64Encoded: false,
        headers: { 'content-type': 'Application/JSON; charset=utf-8' },
      },
    ],
  ])('decodes %s', (_name, raw) => {
    expect(decodeJsonBody(raw)).toEqual(json);
  });

  it('refuses a gzip bomb with 413 once the decompressed size passes the limit', () => {
    // Prepare: twice the limit of zeros compresses to a few KiB
    const bomb = gzipSync(Buffer.alloc(2 * MAX_BODY_DECOMPRESSED_BYTES));
    expect(bomb.length).toBeLessThan(MAX_BODY_COMPRESSED_BYTES);
    // Act
    const err = refusal(() =>
      decodeJsonBody({ body: bomb.toString('base64'), isBase64Encoded: true, headers: JSON_TYPE }),
    );
    // Assess
    expect(err.status).toBe(413);
    expect(err.message).toMatch(/decompressed body exceeds/);
  });

  it('refuses a compressed body over 1 MiB with 413', () => {
    const big = Buffer.concat([Buffer.from([0x1f, 0x8b]), Buffer.alloc(MAX_BODY_COMPRESSED_BYTES)]);
    const err = refusal(() =>
      decodeJsonBody({ body: big.toString('base64'), isBase64Encoded: true, headers: JSON_TYPE }),
    );
    expect(err.status).toBe(413);
  });

  it('refuses a plain body over the decompressed limit with 413', () => {
    const err = refusal(() =>
      decodeJsonBody({
        body: ' '.repeat(MAX_BODY_DECOMPRESSED_BYTES + 1),
        isBase64Encoded: false,
        headers: JSON_TYPE,
      }),
    );
    expect(err.status).toBe(413);
  });

  it('counts a text body in UTF-8 bytes: at the limit it is taken, one byte over it is refused', () => {
    // Prepare: 'é' is 2 UTF-8 bytes, so the string is shorter than its bytes
    const pad = (bytes: number): string => {
      const accents = Math.floor((bytes - 3) / 2);
      return `"${'é'.repeat(accents)}${' '.repeat(bytes - 2 - 2 * accents)}"`;
    };
    expect(
      decodeJsonBody({ body: pad(MAX_BODY_DECOMPRESSED_BYTES), isBase64Encoded: false, headers: JSON_TYPE }),
    ).toMatch(/^é+ +$/);
    const err = refusal(() =>
      decodeJsonBody({
        body: `${pad(MAX_BODY_DECOMPRESSED_BYTES)} `,
        isBase64Encoded: false,
        headers: JSON_TYPE,
      }),
    );
    expect(err.status).toBe(413);
  });

  it('takes a text body of 3-byte characters a third of the limit long, without counting its bytes', () => {
    // Prepare: '€' is 3 UTF-8 bytes, the most one UTF-16 unit takes; 2 quotes of 1 byte
    const euros = Math.floor((MAX_BODY_DECOMPRESSED_BYTES - 6) / 3);
    const body = `"${'€'.repeat(euros)}"`;

    // Act
    const decoded = decodeJsonBody({ body, isBase64Encoded: false, headers: JSON_TYPE });

    // Assess
    expect(body.length * 3).toBeLessThanOrEqual(MAX_BODY_DECOMPRESSED_BYTES);
    expect(decoded).toBe('€'.repeat(euros));
  });

  it('decodes a lone surrogate in a text body as U+FFFD, as its UTF-8 bytes decode', () => {
    const body = '{"name":"gpu\ud800"}';
    expect(decodeJsonBody({ body, isBase64Encoded: false, headers: JSON_TYPE })).toEqual({
      name: 'gpu\ufffd',
    });
  });

  it('reads a text body starting U+001F U+008B as text, never as gzip (its UTF-8 starts 1f c2 8b)', () => {
    const err = refusal(() =>
      decodeJsonBody({ body: '\u001f\u008b\u0008', isBase64Encoded: false, headers: JSON_TYPE }),
    );
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/expected JSON/);
  });

  it.each<[string, Parameters<typeof decodeJsonBody>[0], number, RegExp]>([
    ['an empty body', { body: '', isBase64Encoded: false, headers: JSON_TYPE }, 400, /got none/],
    ['a null body', { body: null, isBase64Encoded: false, headers: JSON_TYPE }, 400, /got none/],
    ['invalid JSON', { body: '{"seq":', isBase64Encoded: false, headers: JSON_TYPE }, 400, /expected JSON/],
    [
      'broken gzip',
      {
        body: Buffer.from([0x1f, 0x8b, 1, 2, 3]).toString('base64'),
        isBase64Encoded: true,
        headers: JSON_TYPE,
      },
      400,
      /valid gzip/,
    ],
    ['no Content-Type', { body: '{}', isBase64Encoded: false, headers: {} }, 415, /got none/],
    ['no headers at all', { body: '{}', isBase64Encoded: false, headers: null }, 415, /got none/],
    [
      'text/plain',
      { body: '{}', isBase64Encoded: false, headers: { 'Content-Type': 'text/plain' } },
      415,
      /expected Content-Type application\/json, got "text\/plain"/,
    ],
    [
      'a raw gzip upload (application/gzip)',
      {
        body: gzipSync('{}').toString('base64'),
        isBase64Encoded: true,
        headers: { 'content-type': 'application/gzip' },
      },
      415,
      /application\/gzip/,
    ],
    [
      'application/jsonx (a prefix is not a match)',
      { body: '{}', isBase64Encoded: false, headers: { 'Content-Type': 'application/jsonx' } },
      415,
      /jsonx/,
    ],
  ])('refuses %s', (_name, raw, status, message) => {
    const err = refusal(() => decodeJsonBody(raw));
    expect(err.status).toBe(status);
    expect(err.message).toMatch(message);
  });
});
