import { deflateSync, gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  API_BINARY_MEDIA_TYPES,
  API_GATEWAY_MAX_PAYLOAD_BYTES,
  LAMBDA_SYNC_MAX_PAYLOAD_BYTES,
  MAX_BODY_DECOMPRESSED_BYTES,
} from '../../../lambdas/contract';
import {
  type ApiGatewayRequest,
  instanceRoleIdentity,
  invokeThroughApiGateway,
  isBinaryMediaType,
  toProxyEvent,
} from '../../../lambdas/local/api-gateway-event';

const JSON_TEXT = '{"schema":"gpu-sentinel/v1","seq":1}';

function request(overrides: Partial<ApiGatewayRequest> = {}): ApiGatewayRequest {
  return {
    method: 'POST',
    path: '/v1/batches',
    headers: { 'Content-Type': 'application/json' },
    body: Buffer.from(JSON_TEXT),
    ...overrides,
  };
}

function eventOf(req: ApiGatewayRequest): APIGatewayProxyEvent {
  const outcome = toProxyEvent(req);
  if (outcome.kind !== 'event')
    throw new Error(`expected an event, API Gateway answered ${outcome.result.statusCode}`);
  return outcome.event;
}

function answerOf(req: ApiGatewayRequest): APIGatewayProxyResult {
  const outcome = toProxyEvent(req);
  if (outcome.kind !== 'answer') throw new Error('expected API Gateway to answer itself');
  return outcome.result;
}

describe('API Gateway REST proxy event model', () => {
  it.each([
    ['gzip', gzipSync(JSON_TEXT)],
    ['deflate', deflateSync(JSON_TEXT)],
  ])('decompresses a %s body before the integration and passes Content-Encoding through', (coding, body) => {
    // Act
    const event = eventOf(
      request({ headers: { 'Content-Type': 'application/json', 'Content-Encoding': coding }, body }),
    );
    // Assess
    expect(event.body).toBe(JSON_TEXT);
    expect(event.isBase64Encoded).toBe(false);
    expect(event.headers['Content-Encoding']).toBe(coding);
    expect(event.multiValueHeaders['Content-Encoding']).toEqual([coding]);
  });

  it.each([
    ['application/json', false],
    ['application/json; charset=utf-8', false],
    ['text/plain', false],
    ...API_BINARY_MEDIA_TYPES.map((t) => [t, true] as [string, boolean]),
  ])('with Content-Type %s passes the body base64-encoded: %s', (contentType, binary) => {
    // Prepare
    const body = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff]);
    // Act
    const event = eventOf(request({ headers: { 'content-type': contentType }, body }));
    // Assess
    expect(event.isBase64Encoded).toBe(binary);
    expect(event.body).toBe(binary ? body.toString('base64') : body.toString('utf8'));
  });

  it.each<[string, string, readonly string[], boolean]>([
    ['a wildcard subtype', 'image/png', ['image/*'], true],
    ['the any-type wildcard', 'application/json', ['*/*'], true],
    ['another type', 'application/json', ['application/gzip'], false],
    ['no Content-Type', '', ['application/gzip'], false],
  ])('matches binary media types by %s', (_name, contentType, types, expected) => {
    expect(isBinaryMediaType(contentType === '' ? undefined : contentType, types)).toBe(expected);
  });

  it('fills requestContext.identity as IAM authorization does for an instance-profile session', () => {
    // Act
    const event = eventOf(
      request({ identity: instanceRoleIdentity('123456789012', 'GpuNodeRole', 'i-0abc12345def67890') }),
    );
    // Assess
    expect(event.requestContext.identity).toMatchObject({
      accountId: '123456789012',
      userArn: 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0abc12345def67890',
      caller: expect.stringMatching(/^AROA[A-Z0-9]+:i-0abc12345def67890$/),
      cognitoIdentityId: null,
      sourceIp: '127.0.0.1',
    });
    expect(event.requestContext).toMatchObject({
      stage: 'prod',
      path: '/prod/v1/batches',
      resourcePath: '/v1/batches',
      httpMethod: 'POST',
    });
  });

  it('splits the query string into queryStringParameters', () => {
    const event = eventOf(request({ path: '/v1/batches?dry=1' }));
    expect(event.path).toBe('/v1/batches');
    expect(event.queryStringParameters).toEqual({ dry: '1' });
  });

  it.each<[string, () => ApiGatewayRequest]>([
    [
      'a wire body over 10 MB',
      () => request({ body: Buffer.alloc(API_GATEWAY_MAX_PAYLOAD_BYTES + 1, 0x20) }),
    ],
    [
      'a gzip body that decompresses past 10 MB',
      () =>
        request({
          headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
          body: gzipSync(Buffer.alloc(API_GATEWAY_MAX_PAYLOAD_BYTES + 1, 0x20)),
        }),
    ],
    [
      "a 7 MB body: under API Gateway's 10 MB, over Lambda's 6 MB event",
      () => request({ body: Buffer.alloc(7 * 1024 * 1024, 0x20) }),
    ],
  ])('answers 413 Request Too Long itself for %s; the Lambda never runs', (_name, make) => {
    // Act
    const result = answerOf(make());
    // Assess
    expect(result.statusCode).toBe(413);
    expect(JSON.parse(result.body)).toEqual({ message: 'Request Too Long' });
  });

  it('answers 400 itself for a gzip body that does not decompress', () => {
    const result = answerOf(
      request({
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
        body: Buffer.from('nope'),
      }),
    );
    expect(result.statusCode).toBe(400);
  });

  it('fits a contract-limit body of the worst escaping case (all quotes) into one Lambda event', () => {
    // Prepare: a JSON string of quotes doubles when it becomes the event's body string
    const body = Buffer.from(`"${'\\"'.repeat((MAX_BODY_DECOMPRESSED_BYTES - 2) / 2)}"`);
    expect(body.length).toBeLessThanOrEqual(MAX_BODY_DECOMPRESSED_BYTES);
    // Act
    const event = eventOf(request({ body }));
    // Assess
    expect(Buffer.byteLength(JSON.stringify(event))).toBeLessThanOrEqual(LAMBDA_SYNC_MAX_PAYLOAD_BYTES);
  });

  it('answers 504 Endpoint request timed out when the integration outlasts the timeout', async () => {
    // Prepare: a handler that never answers
    const handler = () => new Promise<APIGatewayProxyResult>(() => undefined);
    // Act
    const result = await invokeThroughApiGateway(handler, request(), { integrationTimeoutMs: 5 });
    // Assess
    expect(result.statusCode).toBe(504);
    expect(JSON.parse(result.body)).toEqual({ message: 'Endpoint request timed out' });
  });

  it("answers 502 when the function throws, and the handler's own answer otherwise", async () => {
    // Act
    const failed = await invokeThroughApiGateway(() => Promise.reject(new Error('boom')), request());
    const ok = await invokeThroughApiGateway(
      async (event) => ({ statusCode: 202, body: event.body ?? '' }),
      request(),
    );
    // Assess
    expect(failed.statusCode).toBe(502);
    expect(ok).toEqual({ statusCode: 202, body: JSON_TEXT });
  });
});
