import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import pRetry from 'p-retry';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { keepAliveFetch, nodeFetch } from '../../../agent/send/node-fetch';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

let server: Server;
let base: string;
let received: Received[] = [];
let handler: Handler = (_req, _body, res) => res.end('ok');

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => {
  received = [];
  handler = (_req, _body, res) => res.end('ok');
  vi.restoreAllMocks();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A port with nothing listening: bind one, then close it. */
async function refusedUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return `http://127.0.0.1:${port}/`;
}

describe('nodeFetch', () => {
  it('sends a GET with plain-object headers and reads the status, headers and text', async () => {
    // Prepare
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-answer': '42' });
      res.end('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40\n');
    };

    // Act
    const response = await nodeFetch(`${base}/metrics?x=1`, { headers: { Accept: 'text/plain' } });

    // Assess
    expect(response.status).toBe(200);
    expect(response.ok).toBe(true);
    expect(response.headers.get('Content-Type')).toBe('text/plain');
    expect(response.headers.get('x-answer')).toBe('42');
    expect(response.headers.get('x-absent')).toBeNull();
    expect(await response.text()).toBe('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 40\n');
    expect(received[0]?.method).toBe('GET');
    expect(received[0]?.url).toBe('/metrics?x=1');
    expect(received[0]?.headers.accept).toBe('text/plain');
  });

  it('takes a Headers instance and sends a bodiless PUT with Content-Length 0', async () => {
    // Prepare
    handler = (_req, _body, res) => res.end('token-abc\n');
    const headers = new Headers({ 'X-aws-ec2-metadata-token-ttl-seconds': '21600' });

    // Act
    const response = await nodeFetch(`${base}/latest/api/token`, { method: 'PUT', headers });

    // Assess
    expect(await response.text()).toBe('token-abc\n');
    expect(received[0]?.method).toBe('PUT');
    expect(received[0]?.headers['x-aws-ec2-metadata-token-ttl-seconds']).toBe('21600');
    expect(received[0]?.headers['content-length']).toBe('0');
  });

  it('round-trips a binary gzip POST body byte for byte', async () => {
    // Prepare
    const payload = gzipSync(JSON.stringify({ windows: Array.from({ length: 200 }, (_, i) => ({ i })) }));
    handler = (_req, body, res) => {
      res.writeHead(202, { 'content-type': 'application/octet-stream' });
      res.end(body);
    };

    // Act
    const response = await nodeFetch(new URL(`${base}/prod/v1/batches`), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: payload,
    });
    const echoed = Buffer.from(await response.arrayBuffer());

    // Assess
    expect(response.status).toBe(202);
    expect(echoed.equals(payload)).toBe(true);
    expect(received[0]?.method).toBe('POST');
    expect(received[0]?.headers['content-encoding']).toBe('gzip');
    expect(received[0]?.headers['content-length']).toBe(String(payload.length));
    expect(received[0]?.body.equals(payload)).toBe(true);
  });

  it('decodes a gzip-encoded answer as fetch does', async () => {
    // Prepare
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync('{"accepted":3}'));
    };

    // Act
    const response = await nodeFetch(base, { method: 'POST', body: 'x' });

    // Assess
    expect(await response.json()).toEqual({ accepted: 3 });
    expect(received[0]?.headers['content-type']).toBe('text/plain;charset=UTF-8');
  });

  it.each([404, 429, 503])('resolves HTTP %i with ok false and its body', async (status) => {
    // Prepare
    handler = (_req, _body, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `status ${status}` }));
    };

    // Act
    const response = await nodeFetch(base);

    // Assess
    expect(response.status).toBe(status);
    expect(response.ok).toBe(false);
    expect(await response.json()).toEqual({ error: `status ${status}` });
    expect(response.body).toBeNull();
  });

  it('rejects a second read of the body with a TypeError, as fetch does', async () => {
    // Prepare
    const response = await nodeFetch(base);
    await response.text();

    // Act
    const error = await response.text().catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(TypeError);
    expect(response.bodyUsed).toBe(true);
  });

  it('rejects with a TimeoutError when AbortSignal.timeout fires before a silent server answers', async () => {
    // Prepare
    handler = () => {};
    const started = performance.now();

    // Act
    const error = await nodeFetch(base, { signal: AbortSignal.timeout(50) }).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe('TimeoutError');
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('rejects with an AbortError when the controller aborts, and at once when already aborted', async () => {
    // Prepare
    handler = () => {};
    const controller = new AbortController();
    const pending = nodeFetch(base, { signal: controller.signal }).catch((e: unknown) => e);

    // Act
    setTimeout(() => controller.abort(), 20);
    const error = await pending;
    const early = await nodeFetch(base, { signal: controller.signal }).catch((e: unknown) => e);

    // Assess
    expect((error as Error).name).toBe('AbortError');
    expect((early as Error).name).toBe('AbortError');
  });

  it('rejects a refused connection with the TypeError p-retry treats as a network error', async () => {
    // Prepare
    const url = await refusedUrl();
    let attempts = 0;

    // Act
    const error = await pRetry(
      () => {
        attempts++;
        return nodeFetch(url, { method: 'POST', body: Buffer.from([1, 2, 3]) });
      },
      { retries: 2, minTimeout: 1, maxTimeout: 1 },
    ).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
    expect(((error as TypeError).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    expect(attempts).toBe(3);
  });

  it('rejects a body cut off mid-way with the network TypeError', async () => {
    // Prepare
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('only ten b');
      setTimeout(() => res.socket?.destroy(), 10);
    };

    // Act
    const error = await nodeFetch(base).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
  });

  it('never calls globalThis.fetch', async () => {
    // Prepare
    const spy = vi.spyOn(globalThis, 'fetch');

    // Act
    const { nodeFetch: fresh } = await import('../../../agent/send/node-fetch');
    await (await fresh(base)).text();

    // Assess
    expect(spy).not.toHaveBeenCalled();
  });

  it('does not load undici in a fresh process that imports it and posts', async () => {
    // Prepare
    const modulePath = fileURLToPath(new URL('../../../agent/send/node-fetch.ts', import.meta.url));
    const script = [
      `const { nodeFetch } = await import(${JSON.stringify(modulePath)});`,
      `const response = await nodeFetch(${JSON.stringify(base)}, { method: 'POST', body: Buffer.from([1]) });`,
      'await response.text();',
      "console.log(JSON.stringify(process.moduleLoadList.filter((m) => m.includes('undici'))));",
    ].join('\n');

    // Act
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: fileURLToPath(new URL('../../..', import.meta.url)), timeout: 20_000 },
    );

    // Assess
    expect(JSON.parse(stdout.trim())).toEqual([]);
    expect(received).toHaveLength(1);
  });
});

describe('keepAliveFetch', () => {
  it('sends every request over one kept-alive connection', async () => {
    // Prepare
    const fetchKept = keepAliveFetch(90_000);
    const sockets = new Set<unknown>();
    handler = (req, _body, res) => {
      sockets.add(req.socket);
      res.end('ok');
    };

    // Act
    for (let i = 0; i < 3; i++) await (await fetchKept(`${base}/kept`, { method: 'POST', body: 'x' })).text();

    // Assess
    expect(received).toHaveLength(3);
    expect(sockets.size).toBe(1);
  });

  it.each([0, -1, Number.NaN])('refuses an idle time of %s, naming it', (idleMs) => {
    expect(() => keepAliveFetch(idleMs)).toThrow(/idleMs/);
  });
});
