import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { API_GATEWAY_MAX_PAYLOAD_BYTES } from '../contract';
import type { IngestHandler } from '../handlers/ingest-handler';
import { type CallerIdentity, invokeThroughApiGateway } from './api-gateway-event';

/** Path of the one resource the local API serves. */
const BATCHES_PATH = '/v1/batches';

/** Requests the loopback API works on at once by default; more are answered 429. */
export const DEFAULT_LOCAL_API_MAX_CONCURRENT = 16;

/** A running loopback API. */
export interface LocalApi {
  /** Base URL, e.g. `http://127.0.0.1:40123` (POST `${url}/v1/batches`). */
  readonly url: string;
  /** Stops accepting connections and waits for open ones to end. */
  close(): Promise<void>;
}

/** Options of {@link startLocalApi}. */
export interface LocalApiOptions {
  /** The same ingest handler the Lambda runs. */
  readonly handler: IngestHandler;
  /** TCP port; 0 picks a free one. @default 0 */
  readonly port?: number;
  /** Listen address. Loopback only: the local API has no authentication. @default '127.0.0.1' */
  readonly host?: '127.0.0.1' | '::1' | 'localhost';
  /**
   * Requests handled at once, ≥ 1; further requests are answered `429 {"message":"Too Many
   * Requests"}`, as API Gateway's throttling answers, once their body has arrived (read and thrown
   * away, never kept: a client still sending gets the 429, not a reset connection). With
   * `maxBodyBytes` this bounds the server's body memory to `maxConcurrent × maxBodyBytes`.
   * @default 16 ({@link DEFAULT_LOCAL_API_MAX_CONCURRENT})
   */
  readonly maxConcurrent?: number;
  /**
   * Largest body read into memory, bytes ≥ 1; a larger one is answered 413 without being kept.
   * @default API Gateway's 10 MB payload limit
   */
  readonly maxBodyBytes?: number;
  /** The caller every request is attributed to. @default anonymous (local mode has no IAM) */
  readonly identity?: CallerIdentity;
  /** Integration timeout, ms. @default API Gateway's 29 s */
  readonly integrationTimeoutMs?: number;
}

/**
 * Starts a real HTTP server on loopback that hands each request to the ingest handler through the
 * API Gateway model (`invokeThroughApiGateway`: request decompression with the header passed
 * through, base64 only for binary media types, the 10 MB / 6 MB payload limits, the 29 s
 * timeout), so local mode and the end-to-end tests see exactly the event AWS would build. Request
 * headers pass through as API Gateway passes them, so a signed probe (`x-gpu-sentinel-probe: 1`,
 * `PROBE_HEADER`) reaches the handler as it would in AWS; with `identity` set, the handler's caller
 * checks see that caller as IAM authorization would report it. Only
 * `POST /v1/batches` exists; anything else is 404 (API Gateway's answer for a missing resource is
 * 403 "Missing Authentication Token" under IAM auth; local mode has no IAM, so 404 is clearer).
 *
 * @returns the URL and a `close()`
 * @throws {RangeError} when `maxConcurrent` or `maxBodyBytes` is not an integer ≥ 1
 * @throws when the port cannot be bound
 */
export async function startLocalApi(options: LocalApiOptions): Promise<LocalApi> {
  const maxConcurrent = positiveInteger(
    'maxConcurrent',
    options.maxConcurrent ?? DEFAULT_LOCAL_API_MAX_CONCURRENT,
  );
  const maxBodyBytes = positiveInteger('maxBodyBytes', options.maxBodyBytes ?? API_GATEWAY_MAX_PAYLOAD_BYTES);
  let inFlight = 0;
  const server: Server = createServer((req, res) => {
    const send = (result: APIGatewayProxyResult): void => {
      if (!res.headersSent)
        res.writeHead(result.statusCode, result.headers as Record<string, string>).end(result.body);
    };
    /**
     * Answers once the client has sent its whole body, read and thrown away: an answer (and the
     * close that follows it) while the client is still sending reaches it as ECONNRESET or a stall,
     * not as the answer. Slow or endless bodies are bounded by the server's `requestTimeout`.
     */
    const sendAfterBody = (result: APIGatewayProxyResult): void => {
      if (req.readableEnded) {
        send(result);
        return;
      }
      req.on('end', () => send(result));
      req.on('error', () => req.socket.destroy());
      req.resume();
    };
    const path = req.url ?? '/';
    if (req.method !== 'POST' || path.split('?')[0] !== BATCHES_PATH) {
      sendAfterBody(answer(404, 'not found'));
      return;
    }
    if (inFlight >= maxConcurrent) {
      sendAfterBody(answer(429, 'Too Many Requests'));
      return;
    }
    inFlight++;
    void (async () => {
      const body = await readBody(req, maxBodyBytes);
      if (body === undefined) {
        send(answer(413, 'Request Too Long'));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      send(
        await invokeThroughApiGateway(
          options.handler,
          {
            method: 'POST',
            path,
            headers,
            body,
            identity: options.identity,
            sourceIp: req.socket.remoteAddress,
          },
          { resource: BATCHES_PATH, integrationTimeoutMs: options.integrationTimeoutMs },
        ),
      );
    })()
      .catch(() => send(answer(500, 'Internal server error')))
      .finally(() => {
        inFlight--;
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * Reads a request body of at most `limit` bytes; past the limit it stops keeping bytes, reads the
 * rest to its end (so the 413 reaches a client still sending) and answers undefined.
 */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size <= limit) chunks.push(buf);
    else chunks.length = 0;
  }
  return size > limit ? undefined : Buffer.concat(chunks);
}

function answer(statusCode: number, message: string): APIGatewayProxyResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message }) };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`Expected \`${name}\` to be an integer >= 1, got \`${String(value)}\``);
  }
  return value;
}
