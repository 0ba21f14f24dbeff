import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SendFailedError, SendRejectedError } from '../../../agent/errors';
import { HttpSender } from '../../../agent/send/sender';
import type { Batch } from '../../../lambdas/contract';
import { expectedAuthorization } from '../../setup/sigv4-check';

const NOW = new Date('2026-03-10T12:00:00Z');
const CREDENTIALS = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};
const BATCH: Batch = {
  schema: 'gpu-sentinel/v1',
  batch_id: '7d3f8a4e-1c2b-4d5e-8f90-123456789abc',
  seq: 7,
  sent_at: NOW.toISOString(),
  host: { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' },
  agent: { version: '0.1.0', profiling_source: 'none' },
  windows: [
    {
      kind: 'flush',
      start: '2026-03-10T11:59:50Z',
      end: '2026-03-10T12:00:00Z',
      gpu: { index: 0 },
      metrics: { power_w: 113.611 },
    },
  ],
};

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

let server: Server;
let endpoint: string;
let received: Received[] = [];
let answers: { status: number; body: unknown }[] = [];

const FAST = { retries: 3, minTimeoutMs: 1, maxTimeoutMs: 2 };

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      });
      const answer = answers.shift() ?? { status: 202, body: { accepted: 1 } };
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  received = [];
  answers = [];
});

describe('HttpSender', () => {
  it('posts the batch as gzip JSON to <endpoint>/v1/batches and returns the accepted count', async () => {
    // Prepare
    answers = [{ status: 202, body: { accepted: 1 } }];
    const sender = new HttpSender({ endpoint, auth: 'none', ...FAST });

    // Act
    const result = await sender.send(BATCH);

    // Assess
    expect(result).toEqual({ status: 202, accepted: 1 });
    expect(received).toHaveLength(1);
    const [req] = received;
    expect(req?.method).toBe('POST');
    expect(req?.url).toBe('/prod/v1/batches');
    expect(req?.headers['content-encoding']).toBe('gzip');
    expect(req?.headers['content-type']).toBe('application/json');
    expect(req?.headers.authorization).toBeUndefined();
    expect(JSON.parse(gunzipSync(req?.body ?? Buffer.alloc(0)).toString('utf8'))).toEqual(BATCH);
  });

  it('signs with SigV4 so that the server recomputes the same signature', async () => {
    // Prepare
    const sender = new HttpSender({
      endpoint,
      auth: 'sigv4',
      region: 'us-east-1',
      credentials: CREDENTIALS,
      clock: () => NOW,
      ...FAST,
    });

    // Act
    await sender.send(BATCH);

    // Assess
    const req = received[0] as Received;
    const authorization = String(req.headers.authorization);
    expect(authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20260310\/us-east-1\/execute-api\/aws4_request/,
    );
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
    expect(signedHeaders).toEqual(
      expect.arrayContaining(['content-encoding', 'content-type', 'host', 'x-amz-date']),
    );
    expect(await expectedAuthorization(req, endpoint, CREDENTIALS, NOW)).toBe(authorization);
  });

  it('retries 503 twice and succeeds on the third attempt', async () => {
    // Prepare
    answers = [
      { status: 503, body: { error: 'unavailable' } },
      { status: 503, body: { error: 'unavailable' } },
      { status: 202, body: { accepted: 1 } },
    ];
    const sender = new HttpSender({ endpoint, auth: 'none', ...FAST });

    // Act
    const result = await sender.send(BATCH);

    // Assess
    expect(result.accepted).toBe(1);
    expect(received).toHaveLength(3);
    expect(new Set(received.map((r) => r.body.toString('base64'))).size).toBe(1);
  });

  it('retries 429', async () => {
    // Prepare
    answers = [{ status: 429, body: {} }];
    const sender = new HttpSender({ endpoint, auth: 'none', ...FAST });

    // Act
    await sender.send(BATCH);

    // Assess
    expect(received).toHaveLength(2);
  });

  it.each([
    [400, { error: 'expected a number <= 1', path: 'windows[0].metrics.gpu_util' }],
    [413, { error: 'body too large' }],
  ])('does not retry %i and throws SendRejectedError carrying the API error', async (status, body) => {
    // Prepare
    answers = [{ status, body }];
    const sender = new HttpSender({ endpoint, auth: 'none', ...FAST });

    // Act
    const error = await sender.send(BATCH).catch((e: unknown) => e);

    // Assess
    expect(received).toHaveLength(1);
    expect(error).toBeInstanceOf(SendRejectedError);
    expect((error as SendRejectedError).status).toBe(status);
    expect((error as SendRejectedError).body).toEqual(body);
    expect((error as SendRejectedError).batchId).toBe(BATCH.batch_id);
  });

  it.each([401, 403])(
    'retries %i with refreshed credentials and delivers on the next attempt',
    async (status) => {
      // Prepare
      answers = [{ status, body: { message: 'Signature expired' } }];
      const asked: unknown[] = [];
      const sender = new HttpSender({
        endpoint,
        region: 'us-east-1',
        credentials: async (options?: Record<string, unknown>) => {
          asked.push(options);
          return CREDENTIALS;
        },
        clock: () => NOW,
        ...FAST,
      });

      // Act
      const result = await sender.send(BATCH);

      // Assess
      expect(result.status).toBe(202);
      expect(received).toHaveLength(2);
      expect(asked).toEqual([undefined, { forceRefresh: true }]);
    },
  );

  it('sets a batch aside (SendRejectedError) only after 403 persists through every credential refresh', async () => {
    // Prepare
    answers = Array.from({ length: 5 }, () => ({
      status: 403,
      body: { error: 'caller is not i-0a5e00000000000a1' },
    }));
    const sender = new HttpSender({ endpoint, auth: 'none', authRetries: 3, ...FAST });

    // Act
    const error = await sender.send(BATCH).catch((e: unknown) => e);

    // Assess
    expect(received).toHaveLength(4);
    expect(error).toBeInstanceOf(SendRejectedError);
    expect((error as SendRejectedError).status).toBe(403);
  });

  it.each([
    { endpoint: 'http://api.example.com/prod', ok: false },
    { endpoint: 'http://10.0.0.5:8080', ok: false },
    { endpoint: 'http://127.0.0.1:7070', ok: true },
    { endpoint: 'http://localhost:7070', ok: true },
    { endpoint: 'http://[::1]:7070', ok: true },
    { endpoint: 'https://abc.execute-api.us-east-1.amazonaws.com/prod', ok: true },
  ])('signs over plain http only to a loopback host: $endpoint → $ok', ({ endpoint: url, ok }) => {
    // Act
    const make = () => new HttpSender({ endpoint: url, region: 'us-east-1', credentials: CREDENTIALS });

    // Assess
    if (ok) expect(make).not.toThrow();
    else expect(make).toThrow(/Expected an https:\/\/ `endpoint` for SigV4/);
  });

  it('throws SendFailedError after the retries when every answer is 5xx', async () => {
    // Prepare
    answers = Array.from({ length: 4 }, () => ({ status: 502, body: {} }));
    const sender = new HttpSender({ endpoint, auth: 'none', ...FAST });

    // Act
    const error = await sender.send(BATCH).catch((e: unknown) => e);

    // Assess
    expect(received).toHaveLength(4);
    expect(error).toBeInstanceOf(SendFailedError);
    expect((error as SendFailedError).attempts).toBe(4);
    expect((error as SendFailedError).lastStatus).toBe(502);
  });

  it('retries a refused connection, then throws SendFailedError', async () => {
    // Prepare: a port nobody listens on
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const sender = new HttpSender({ endpoint: `http://127.0.0.1:${port}`, auth: 'none', ...FAST });

    // Act
    const error = await sender.send(BATCH).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(SendFailedError);
    expect((error as SendFailedError).attempts).toBe(4);
    expect((error as SendFailedError).lastStatus).toBeUndefined();
  });

  it.each([
    [{ endpoint: 'not a url', auth: 'none' as const }, /endpoint/],
    [{ endpoint: 'ftp://x', auth: 'none' as const }, /endpoint/],
    [{ endpoint: 'https://x', auth: 'sigv4' as const }, /region/],
    [{ endpoint: 'https://x', auth: 'none' as const, retries: -1 }, /retries/],
  ])('throws on bad options %o', (opts, message) => {
    // Prepare / Act / Assess
    expect(() => new HttpSender(opts)).toThrow(message);
  });
});
