import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { type LocalApi, startLocalApi } from '../../../lambdas/local/local-api-server';

const JSON_TEXT = '{"schema":"gpu-sentinel/v1"}';

describe('local API server (loopback, through the API Gateway model)', () => {
  let api: LocalApi | undefined;
  const seen: APIGatewayProxyEvent[] = [];

  afterEach(async () => {
    await api?.close();
    api = undefined;
    seen.length = 0;
  });

  const recording = async (event: APIGatewayProxyEvent): Promise<APIGatewayProxyResult> => {
    seen.push(event);
    return { statusCode: 202, headers: { 'content-type': 'application/json' }, body: '{"accepted":1}' };
  };

  it("hands the handler the event API Gateway builds for the agent's gzip request", async () => {
    // Prepare
    api = await startLocalApi({ handler: recording });
    // Act
    const res = await fetch(`${api.url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON_TEXT),
    });
    // Assess
    expect(res.status).toBe(202);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      body: JSON_TEXT,
      isBase64Encoded: false,
      httpMethod: 'POST',
      resource: '/v1/batches',
    });
    expect(seen[0]!.headers['content-encoding']).toBe('gzip');
  });

  it('answers 413 for a body over its memory cap without calling the handler', async () => {
    // Prepare
    api = await startLocalApi({ handler: recording, maxBodyBytes: 1024 });
    // Act
    const res = await fetch(`${api.url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: ' '.repeat(2048),
    });
    // Assess
    expect(res.status).toBe(413);
    expect(seen).toEqual([]);
  });

  it('answers 429 past its concurrency cap and serves again once a request ends', async () => {
    // Prepare: the first request holds the only slot until released
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => undefined;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    api = await startLocalApi({
      maxConcurrent: 1,
      handler: async (event) => {
        entered();
        await held;
        return recording(event);
      },
    });
    const post = () =>
      fetch(`${api!.url}/v1/batches`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON_TEXT,
      });
    // Act
    const first = post();
    await inside;
    const second = await post();
    release();
    const firstRes = await first;
    const third = await post();
    // Assess
    expect(second.status).toBe(429);
    expect(firstRes.status).toBe(202);
    expect(third.status).toBe(202);
  });

  /**
   * POSTs `chunks` × `chunkBytes` with a real HTTP client (node:http), one chunk every `gapMs`,
   * respecting backpressure; resolves once the client has written everything (or failed) and the
   * response has ended (or failed), with the status, the body, the bytes written and any error.
   */
  async function postSlowly(
    url: string,
    chunks: number,
    chunkBytes: number,
    gapMs: number,
  ): Promise<{ status?: number; body?: string; error?: string; writtenBytes: number }> {
    const target = new URL(`${url}/v1/batches`);
    const out: { status?: number; body?: string; error?: string; writtenBytes: number } = { writtenBytes: 0 };
    const req = request({
      hostname: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': chunks * chunkBytes },
    });
    const failed = new Promise<void>((resolve) =>
      req.on('error', (e: NodeJS.ErrnoException) => {
        out.error ??= e.code ?? e.message;
        resolve();
      }),
    );
    const answered = new Promise<void>((resolve) =>
      req.on('response', (res) => {
        out.status = res.statusCode;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => {
          out.body = body;
          resolve();
        });
        res.on('error', () => resolve());
      }),
    );
    const written = (async () => {
      const chunk = Buffer.alloc(chunkBytes, 0x20);
      for (let i = 0; i < chunks && !req.destroyed; i++) {
        if (!req.write(chunk)) await Promise.race([new Promise((r) => req.once('drain', r)), failed]);
        if (req.destroyed) break;
        out.writtenBytes += chunkBytes;
        await sleep(gapMs);
      }
      if (!req.destroyed) req.end();
    })();
    // A server that stops reading without closing leaves the client stalled: give up after 20 s.
    const stalled = sleep(20_000, undefined, { ref: false }).then(() => {
      out.error ??= 'stalled: the server neither read the body nor closed the connection';
      req.destroy();
    });
    await Promise.race([written, stalled]);
    await Promise.race([answered, failed, stalled]);
    return out;
  }

  it('answers 429 past its concurrency cap only after reading the body, so a client still sending a large body slowly gets the 429, not a reset or stalled connection', async () => {
    // Prepare: the only slot held by a first request
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered: () => void = () => undefined;
    const inside = new Promise<void>((resolve) => {
      entered = resolve;
    });
    api = await startLocalApi({
      maxConcurrent: 1,
      handler: async (event) => {
        entered();
        await held;
        return recording(event);
      },
    });
    const first = fetch(`${api.url}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON_TEXT,
    });
    await inside;

    // Act: 4 MiB in 64 chunks of 64 KiB, one every 5 ms
    const second = await postSlowly(api.url, 64, 64 * 1024, 5);
    release();
    const firstRes = await first;

    // Assess
    expect(second).toEqual({
      status: 429,
      body: JSON.stringify({ message: 'Too Many Requests' }),
      writtenBytes: 64 * 64 * 1024,
    });
    expect(firstRes.status).toBe(202);
    expect(seen).toHaveLength(1);
  });

  it('answers 413 for a declared body over its cap only after reading it, so a slow client gets the 413', async () => {
    // Prepare
    api = await startLocalApi({ handler: recording, maxBodyBytes: 64 * 1024 });

    // Act
    const res = await postSlowly(api.url, 16, 64 * 1024, 5);

    // Assess
    expect(res).toMatchObject({ status: 413, writtenBytes: 16 * 64 * 1024 });
    expect(res.error).toBeUndefined();
    expect(seen).toEqual([]);
  });

  it.each([
    ['GET', '/v1/batches'],
    ['POST', '/v1/other'],
  ])('answers 404 to %s %s', async (method, path) => {
    // Prepare
    api = await startLocalApi({ handler: recording });
    // Act
    const res = await fetch(`${api.url}${path}`, { method });
    // Assess
    expect(res.status).toBe(404);
  });

  it('refuses a concurrency cap below 1 naming the option', async () => {
    await expect(startLocalApi({ handler: recording, maxConcurrent: 0 })).rejects.toThrow(/maxConcurrent/);
  });
});
