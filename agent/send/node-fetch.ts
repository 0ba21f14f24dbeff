import type { Agent as HttpAgentType, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createRequire } from 'node:module';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';

/**
 * `node:http`, loaded through CommonJS `require`. On Node.js 22 and later an ESM `import` of
 * `node:http` builds the module namespace by reading every export, which runs its lazy getters
 * (`WebSocket`, `EventSource`…): they load undici and `worker_threads`, the ~13 MB this module
 * exists to avoid. `require` returns the exports object without reading them. (`node:https` has
 * no such getters.) The agent bundle does the same for every built-in its dependencies import.
 */
const { Agent: HttpAgent, request: httpRequest } = createRequire(import.meta.url)(
  'node:http',
) as typeof import('node:http');

/**
 * A minimal `fetch` on `node:http` / `node:https`, for the agent's own HTTP calls (batch POSTs,
 * IMDS, dcgm-exporter scrapes). Node's global `fetch` loads undici on first use, which costs
 * about 13 MB of RSS; `node:http` costs about 4 MB, and the agent has an 80 MB RSS budget.
 *
 * Only what those callers use is supported; see {@link nodeFetch}.
 */

type HeaderPairs = Iterable<readonly [string, string]>;

/** The response headers: the read side of `Headers`, names case-insensitive. */
class ResponseHeaders {
  private readonly map: Map<string, string>;

  constructor(raw: IncomingHttpHeaders) {
    this.map = new Map();
    for (const [name, value] of Object.entries(raw)) {
      if (value === undefined) continue;
      this.map.set(name.toLowerCase(), Array.isArray(value) ? value.join(', ') : value);
    }
  }

  get(name: string): string | null {
    return this.map.get(name.toLowerCase()) ?? null;
  }

  has(name: string): boolean {
    return this.map.has(name.toLowerCase());
  }

  forEach(callback: (value: string, name: string, parent: ResponseHeaders) => void): void {
    for (const [name, value] of this.map) callback(value, name, this);
  }

  entries(): IterableIterator<[string, string]> {
    return this.map.entries();
  }

  keys(): IterableIterator<string> {
    return this.map.keys();
  }

  values(): IterableIterator<string> {
    return this.map.values();
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.map.entries();
  }
}

/** A fully read response: the parts of `Response` the agent uses. */
class BufferedResponse {
  readonly ok: boolean;
  readonly redirected = false;
  readonly type = 'basic';
  /** Always `null`: the body is already read, so `response.body?.cancel()` is a no-op. */
  readonly body = null;
  private used = false;

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: ResponseHeaders,
    readonly url: string,
    private readonly bytes: Buffer,
  ) {
    this.ok = status >= 200 && status <= 299;
  }

  get bodyUsed(): boolean {
    return this.used;
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = this.consume();
    const out = new ArrayBuffer(bytes.byteLength);
    new Uint8Array(out).set(bytes);
    return out;
  }

  async text(): Promise<string> {
    return this.consume().toString('utf8');
  }

  async json(): Promise<unknown> {
    return JSON.parse(this.consume().toString('utf8'));
  }

  private consume(): Buffer {
    if (this.used) throw new TypeError('Body is unusable: Body has already been read');
    this.used = true;
    return this.bytes;
  }
}

/** fetch's network error: p-retry (is-network-error) retries a `TypeError` with exactly this message. */
function networkError(cause: unknown): TypeError {
  return new TypeError('fetch failed', { cause });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function isPairs(headers: object): headers is HeaderPairs {
  return typeof (headers as Partial<HeaderPairs>)[Symbol.iterator] === 'function';
}

/** Lower-cased header names; works on `Headers` by duck typing, so the undici global is never loaded. */
function toHeaderRecord(headers: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return out;
  const pairs: HeaderPairs = isPairs(headers) ? headers : Object.entries(headers as Record<string, string>);
  for (const [name, value] of pairs) {
    const key = String(name).toLowerCase();
    out[key] = out[key] === undefined ? String(value) : `${out[key]}, ${String(value)}`;
  }
  return out;
}

function toBodyBytes(body: RequestInit['body']): Buffer | string | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  throw new TypeError('nodeFetch supports a string, Uint8Array, Buffer or ArrayBuffer body only');
}

/** Decodes `Content-Encoding` as fetch does (servers only use one when asked; nodeFetch never asks). */
function decode(bytes: Buffer, encoding: string | null): Buffer {
  if (bytes.length === 0) return bytes;
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return gunzipSync(bytes);
    case 'deflate':
      return inflateSync(bytes);
    case 'br':
      return brotliDecompressSync(bytes);
    default:
      return bytes;
  }
}

/** The connection pools of one fetch: Node's global agents unless a caller brings its own. */
interface Agents {
  readonly http?: HttpAgentType;
  readonly https?: HttpsAgent;
}

function nodeFetchImpl(
  input: string | URL,
  init: RequestInit = {},
  agents: Agents = {},
): Promise<BufferedResponse> {
  return new Promise((resolve, reject) => {
    const signal = init.signal ?? undefined;
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let url: URL;
    let headers: Record<string, string>;
    let body: Buffer | string | undefined;
    try {
      url = new URL(typeof input === 'string' || input instanceof URL ? input : String(input));
      headers = toHeaderRecord(init.headers);
      body = toBodyBytes(init.body);
    } catch (error) {
      reject(error);
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      reject(networkError(new Error(`unknown scheme ${url.protocol}`)));
      return;
    }
    const method = (init.method ?? 'GET').toUpperCase();
    if (body !== undefined && (method === 'GET' || method === 'HEAD')) {
      reject(new TypeError('Request with GET/HEAD method cannot have body.'));
      return;
    }
    if (typeof body === 'string' && headers['content-type'] === undefined)
      headers['content-type'] = 'text/plain;charset=UTF-8';
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    else if (method === 'POST' || method === 'PUT' || method === 'PATCH') headers['content-length'] = '0';

    let req: ReturnType<typeof httpRequest> | undefined;
    let settled = false;
    const finish = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const fail = (error: unknown): void => finish(() => reject(error));
    const onAbort = (): void => {
      if (signal) fail(abortReason(signal));
      req?.destroy();
    };

    const onResponse = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => fail(networkError(error)));
      res.on('close', () => {
        if (!res.complete) fail(networkError(new Error('the connection closed before the body ended')));
      });
      res.on('end', () => {
        const responseHeaders = new ResponseHeaders(res.headers);
        let bytes: Buffer;
        try {
          bytes = decode(Buffer.concat(chunks), responseHeaders.get('content-encoding'));
        } catch (error) {
          fail(networkError(error));
          return;
        }
        const status = res.statusCode ?? 0;
        finish(() =>
          resolve(new BufferedResponse(status, res.statusMessage ?? '', responseHeaders, url.href, bytes)),
        );
      });
    };

    try {
      req =
        url.protocol === 'https:'
          ? httpsRequest(
              url,
              { method, headers, ...(agents.https ? { agent: agents.https } : {}) },
              onResponse,
            )
          : httpRequest(url, { method, headers, ...(agents.http ? { agent: agents.http } : {}) }, onResponse);
    } catch (error) {
      // Invalid header names or values: fetch rejects these with a TypeError that is no network error.
      reject(new TypeError(error instanceof Error ? error.message : String(error), { cause: error }));
      return;
    }
    req.on('error', (error) => fail(networkError(error)));
    signal?.addEventListener('abort', onAbort, { once: true });
    req.end(body);
  });
}

/**
 * `fetch` on `node:http` / `node:https`, without undici (it never touches `globalThis.fetch`,
 * `Headers` or `Response`, whose first use loads undici).
 *
 * Supports what the agent's callers use: a `string` or `URL` (http or https), `method`,
 * `headers` (a plain object, `Headers` or `[name, value]` pairs), `body` (string, `Uint8Array`,
 * `Buffer` or `ArrayBuffer`; `Content-Length` is always sent) and `signal`. The whole response
 * body is read before the promise resolves; the response has `status`, `statusText`, `ok`,
 * `url`, `headers.get/has/forEach/entries`, `text()`, `json()`, `arrayBuffer()`, `bodyUsed`, and
 * `body` is `null`. Gzip, deflate and br response bodies are decoded. Keep-alive follows Node's
 * global agents ({@link keepAliveFetch} keeps sockets longer). Differences from fetch: redirects are not followed (a 3xx resolves as is), no
 * default `Accept`, `Accept-Encoding` or `User-Agent` is sent, a `Request` input is not supported,
 * and a body cut off mid-way rejects the call itself (fetch rejects the later `text()`/`json()`).
 *
 * @param input - the URL
 * @param init - `method` (default `GET`), `headers`, `body`, `signal`; other fields are ignored
 * @returns the fully read response; any HTTP status resolves, 4xx and 5xx included
 * @throws {TypeError} `fetch failed` (with the cause) on network errors: refused, reset, DNS,
 *   TLS, a truncated body, a non-http(s) scheme, as fetch (p-retry treats exactly this as a
 *   network error); other `TypeError`s for an invalid URL, header or body
 * @throws the signal's `reason` when `signal` aborts before the body is read, as fetch: a
 *   `DOMException` named `TimeoutError` for `AbortSignal.timeout(ms)`, `AbortError` for
 *   `AbortController.abort()`
 *
 * @example
 * const response = await nodeFetch('http://127.0.0.1:9400/metrics', { signal: AbortSignal.timeout(500) });
 * if (response.ok) console.log(await response.text());
 */
export const nodeFetch = ((input: string | URL, init?: RequestInit) =>
  nodeFetchImpl(input, init)) as unknown as typeof fetch;

/**
 * A {@link nodeFetch} with its own keep-alive pools whose idle sockets stay open `idleMs` (Node's
 * global agents close them after 5 s): with a batch every 60 s, each send would otherwise open a
 * new TCP (and TLS) connection. One socket per origin is enough for one request at a time. A
 * server that closes an idle socket first only costs a new connection (a reset on reuse is a
 * network error the sender retries).
 *
 * @param idleMs - how long an idle socket is kept, ms, > 0
 * @returns a fetch with the same contract as {@link nodeFetch}
 * @throws {RangeError} when `idleMs` is not a positive finite number
 */
export function keepAliveFetch(idleMs: number): typeof fetch {
  if (!Number.isFinite(idleMs) || idleMs <= 0)
    throw new RangeError(`Expected \`idleMs\` to be a number > 0, got \`${idleMs}\``);
  const options = {
    keepAlive: true,
    timeout: idleMs,
    maxSockets: 1,
    maxFreeSockets: 1,
    scheduling: 'lifo' as const,
  };
  const agents = { http: new HttpAgent(options), https: new HttpsAgent(options) };
  return ((input: string | URL, init?: RequestInit) =>
    nodeFetchImpl(input, init, agents)) as unknown as typeof fetch;
}
