import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { MAX_BODY_COMPRESSED_BYTES, MAX_BODY_DECOMPRESSED_BYTES } from '../contract';
import type { IngestHandler } from '../handlers/ingest-handler';

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
}

/**
 * Starts a real HTTP server on loopback that turns each request into an API Gateway REST (v1)
 * proxy event, as API Gateway would (gzip bodies arrive base64-encoded, as binary media types do),
 * and answers with the handler's result. Only `POST /v1/batches` exists; anything else is 404.
 *
 * @returns the URL and a `close()`
 * @throws when the port cannot be bound
 */
export async function startLocalApi(options: LocalApiOptions): Promise<LocalApi> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/v1/batches') {
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: 'not found' }));
        return;
      }
      const body = await readBody(req, Math.max(MAX_BODY_COMPRESSED_BYTES, MAX_BODY_DECOMPRESSED_BYTES) + 1);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const result = await options.handler(toProxyEvent(body, headers));
      res.writeHead(result.statusCode, result.headers as Record<string, string>).end(result.body);
    })().catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }));
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

/** Reads a request body, stopping (and keeping only the first `limit` bytes) past `limit`. */
async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    if (size < limit) chunks.push(buf);
    size += buf.length;
  }
  return Buffer.concat(chunks);
}

function toProxyEvent(body: Buffer, headers: Record<string, string>): APIGatewayProxyEvent {
  return {
    resource: '/v1/batches',
    path: '/v1/batches',
    httpMethod: 'POST',
    headers,
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    body: body.toString('base64'),
    isBase64Encoded: true,
    requestContext: {
      identity: { userArn: null },
    } as unknown as APIGatewayProxyEvent['requestContext'],
  };
}
