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
