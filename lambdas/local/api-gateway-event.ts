import { randomUUID } from 'node:crypto';
import { gunzipSync, inflateSync } from 'node:zlib';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { systemClock } from '../adapters/clock';
import {
  API_BINARY_MEDIA_TYPES,
  API_GATEWAY_INTEGRATION_TIMEOUT_S,
  API_GATEWAY_MAX_PAYLOAD_BYTES,
  LAMBDA_SYNC_MAX_PAYLOAD_BYTES,
} from '../contract';
import { headerValue } from '../handlers/http-body';

/**
 * A model of what Amazon API Gateway (REST API, Lambda proxy integration, IAM authorization) does
 * between the HTTP request and the Lambda event, so that the loopback server and every handler
 * test feed the ingest handler the event AWS would, not a friendlier one. Modelled behaviour, each
 * from AWS's documentation:
 *
 * - **Request decompression**: a body sent with `Content-Encoding: gzip` or `deflate` is
 *   decompressed before the integration, and the `Content-Encoding` header is passed through
 *   unchanged (API Gateway developer guide, "Payload compression for REST APIs": API Gateway
 *   decompresses the payload "before passing the request to the integration endpoint"; supported
 *   codings gzip, deflate, identity). `identity` and unknown codings pass the body as sent.
 * - **Binary media types**: the body is base64-encoded (`isBase64Encoded: true`) only when the
 *   request's `Content-Type` matches one of the API's `binaryMediaTypes`
 *   ({@link API_BINARY_MEDIA_TYPES}, the list the CDK API declares); otherwise it is passed as
 *   UTF-8 text (guide, "Binary media types for REST APIs").
 * - **Limits**: a payload over 10 MB, compressed or decompressed, is answered by API Gateway with
 *   `413 {"message":"Request Too Long"}` ({@link API_GATEWAY_MAX_PAYLOAD_BYTES}); an event whose
 *   JSON exceeds Lambda's 6 MB synchronous payload ({@link LAMBDA_SYNC_MAX_PAYLOAD_BYTES}) never
 *   reaches the function, answered with the same 413 (the invocation fails with Lambda's
 *   `RequestEntityTooLargeException`); an integration that takes longer than 29 s is answered
 *   `504 {"message":"Endpoint request timed out"}` ({@link API_GATEWAY_INTEGRATION_TIMEOUT_S}).
 * - **IAM authorization**: `requestContext.identity` carries the SigV4 caller: `accountId`,
 *   `caller` and `user` (`<unique id>:<session name>` for a role session), `userArn`
 *   (`arn:aws:sts::<account>:assumed-role/<role>/<session>`), `accessKey`, `sourceIp`,
 *   `userAgent`; the Cognito fields are null (guide, "Set up a proxy integration with a Lambda
 *   proxy integration", input format).
 */

/** An HTTP request as it reaches API Gateway. */
export interface ApiGatewayRequest {
  /** HTTP method, e.g. `POST`. */
  readonly method: string;
  /** Path below the stage, e.g. `/v1/batches` (query string allowed). */
  readonly path: string;
  /** Request headers; names in any case (API Gateway keeps the client's). */
  readonly headers: Readonly<Record<string, string>>;
  /** The body bytes exactly as sent on the wire (still gzip when the client compressed it). */
  readonly body: Buffer;
  /** The SigV4 caller as IAM authorization resolves it. @default an anonymous caller (all fields null) */
  readonly identity?: CallerIdentity;
  /** Client IP address. @default '127.0.0.1' */
  readonly sourceIp?: string;
}

/** The fields of `requestContext.identity` IAM authorization fills. */
export interface CallerIdentity {
  /** The caller's account id, 12 digits. */
  readonly accountId: string | null;
  /** `<unique principal id>[:<session name>]`, e.g. `AROAEXAMPLEID:i-0abc…`. */
  readonly caller: string | null;
  /** Same as `caller` for IAM principals. */
  readonly user: string | null;
  /** The caller's ARN: `arn:aws:sts::<account>:assumed-role/<role>/<session>` for a role session. */
  readonly userArn: string | null;
  /** The access key id the request was signed with (`ASIA…` for temporary credentials). */
  readonly accessKey: string | null;
}

/** Settings of the modelled API (what the CDK stack deploys). */
export interface ApiGatewayModelOptions {
  /** Stage name, part of `requestContext.path`. @default 'prod' */
  readonly stage?: string;
  /** Resource template, e.g. `/v1/batches`. @default the request path without its query */
  readonly resource?: string;
  /** The API's binary media types. @default {@link API_BINARY_MEDIA_TYPES} */
  readonly binaryMediaTypes?: readonly string[];
  /** Integration timeout, ms, > 0. @default 29 000 ({@link API_GATEWAY_INTEGRATION_TIMEOUT_S}) */
  readonly integrationTimeoutMs?: number;
  /** The clock for `requestTime`. @default systemClock */
  readonly clock?: () => Date;
}

/** What API Gateway made of a request: an event for the integration, or its own answer. */
export type ApiGatewayOutcome =
  | { readonly kind: 'event'; readonly event: APIGatewayProxyEvent }
  | { readonly kind: 'answer'; readonly result: APIGatewayProxyResult };

/** The Lambda proxy handler shape. */
export type ProxyHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

const API_ID = 'localapi01';
const ACCOUNT_ID = '000000000000';

/**
 * The identity IAM authorization reports for an EC2 instance-role session: the session name EC2
 * gives instance-profile credentials is the instance id.
 *
 * @param accountId - 12-digit account id
 * @param roleName - the instance profile's role name
 * @param instanceId - the instance id (the session name)
 * @returns the identity fields
 * @example
 * instanceRoleIdentity('123456789012', 'GpuNodeRole', 'i-0abc12345def67890').userArn
 * // 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0abc12345def67890'
 */
export function instanceRoleIdentity(
  accountId: string,
  roleName: string,
  instanceId: string,
): CallerIdentity {
  const principal = `AROA${roleName
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, '')
    .padEnd(17, 'X')
    .slice(0, 17)}`;
  return {
    accountId,
    caller: `${principal}:${instanceId}`,
    user: `${principal}:${instanceId}`,
    userArn: `arn:aws:sts::${accountId}:assumed-role/${roleName}/${instanceId}`,
    accessKey: 'ASIAEXAMPLEEXAMPLE00',
  };
}

/** The identity of an unsigned request (local mode has no IAM authorization). */
export const ANONYMOUS_CALLER: CallerIdentity = {
  accountId: null,
  caller: null,
  user: null,
  userArn: null,
  accessKey: null,
};

/**
 * Builds the Lambda proxy event API Gateway would build for `request`, or API Gateway's own answer
 * when the request never reaches the integration (payload limits, undecodable compressed body).
 *
 * @param request - the HTTP request as sent
 * @param options - the modelled API's settings
 * @returns `{ kind: 'event', event }` or `{ kind: 'answer', result }`
 */
export function toProxyEvent(
  request: ApiGatewayRequest,
  options: ApiGatewayModelOptions = {},
): ApiGatewayOutcome {
  if (request.body.length > API_GATEWAY_MAX_PAYLOAD_BYTES)
    return { kind: 'answer', result: requestTooLong() };
  const decoded = decompress(request.body, headerValue(request.headers, 'content-encoding'));
  if (decoded === 'too-long') return { kind: 'answer', result: requestTooLong() };
  if (decoded === 'undecodable') {
    return { kind: 'answer', result: gatewayAnswer(400, 'Unable to decompress the request body') };
  }
  const binary = isBinaryMediaType(
    headerValue(request.headers, 'content-type'),
    options.binaryMediaTypes ?? API_BINARY_MEDIA_TYPES,
  );
  const [path, query] = splitQuery(request.path);
  const resource = options.resource ?? path;
  const stage = options.stage ?? 'prod';
  const now = (options.clock ?? systemClock)();
  const multiValueHeaders: Record<string, string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) multiValueHeaders[name] = [value];
  const event: APIGatewayProxyEvent = {
    resource,
    path,
    httpMethod: request.method,
    headers: { ...request.headers },
    multiValueHeaders,
    queryStringParameters: query.size === 0 ? null : Object.fromEntries(query),
    multiValueQueryStringParameters: query.size === 0 ? null : multiValueQuery(query),
    pathParameters: null,
    stageVariables: null,
    body: decoded.length === 0 ? null : binary ? decoded.toString('base64') : decoded.toString('utf8'),
    isBase64Encoded: binary && decoded.length > 0,
    requestContext: {
      accountId: ACCOUNT_ID,
      apiId: API_ID,
      authorizer: undefined,
      domainName: `${API_ID}.execute-api.local.amazonaws.com`,
      domainPrefix: API_ID,
      extendedRequestId: randomUUID(),
      httpMethod: request.method,
      identity: {
        ...(request.identity ?? ANONYMOUS_CALLER),
        apiKey: null,
        apiKeyId: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: request.sourceIp ?? '127.0.0.1',
        userAgent: headerValue(request.headers, 'user-agent') ?? null,
      },
      path: `/${stage}${path}`,
      protocol: 'HTTP/1.1',
      requestId: randomUUID(),
      requestTime: now.toISOString(),
      requestTimeEpoch: now.getTime(),
      resourceId: 'abc123',
      resourcePath: resource,
      stage,
    },
  };
  if (Buffer.byteLength(JSON.stringify(event)) > LAMBDA_SYNC_MAX_PAYLOAD_BYTES) {
    return { kind: 'answer', result: requestTooLong() };
  }
  return { kind: 'event', event };
}

/**
 * Sends `request` through the API Gateway model to `handler`: builds the event (or API Gateway's
 * own answer), invokes the handler, and answers 504 when it takes longer than the integration
 * timeout, as API Gateway does (the handler's late result is dropped). A handler that throws is
 * answered `502 {"message":"Internal server error"}`, as a Lambda function error is.
 *
 * @param handler - the Lambda proxy handler
 * @param request - the HTTP request as sent
 * @param options - the modelled API's settings
 * @returns the HTTP answer the client gets
 */
export async function invokeThroughApiGateway(
  handler: ProxyHandler,
  request: ApiGatewayRequest,
  options: ApiGatewayModelOptions = {},
): Promise<APIGatewayProxyResult> {
  const outcome = toProxyEvent(request, options);
  if (outcome.kind === 'answer') return outcome.result;
  const timeoutMs = options.integrationTimeoutMs ?? API_GATEWAY_INTEGRATION_TIMEOUT_S * 1000;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<APIGatewayProxyResult>((resolve) => {
    timer = setTimeout(() => resolve(gatewayAnswer(504, 'Endpoint request timed out')), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([
      handler(outcome.event).catch(() => gatewayAnswer(502, 'Internal server error')),
      timedOut,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * True when `contentType` (parameters ignored, case-insensitive) matches one of `binaryTypes`,
 * which may use `*` wildcards (`image/*`, `*∕*`) as API Gateway's binaryMediaTypes do.
 */
export function isBinaryMediaType(contentType: string | undefined, binaryTypes: readonly string[]): boolean {
  if (contentType === undefined) return false;
  const media = contentType.split(';')[0]!.trim().toLowerCase();
  return binaryTypes.some((pattern) => {
    const [type, subtype] = pattern.toLowerCase().split('/');
    const [mediaType, mediaSubtype] = media.split('/');
    return (type === '*' || type === mediaType) && (subtype === '*' || subtype === mediaSubtype);
  });
}

function decompress(body: Buffer, encoding: string | undefined): Buffer | 'too-long' | 'undecodable' {
  const coding = encoding?.trim().toLowerCase();
  if (coding !== 'gzip' && coding !== 'deflate') return body;
  try {
    const inflate = coding === 'gzip' ? gunzipSync : inflateSync;
    return inflate(body, { maxOutputLength: API_GATEWAY_MAX_PAYLOAD_BYTES });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'too-long' : 'undecodable';
  }
}

function requestTooLong(): APIGatewayProxyResult {
  return gatewayAnswer(413, 'Request Too Long');
}

function gatewayAnswer(statusCode: number, message: string): APIGatewayProxyResult {
  return {
    statusCode,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message }),
  };
}

function splitQuery(path: string): [string, Map<string, string>] {
  const at = path.indexOf('?');
  if (at < 0) return [path, new Map()];
  return [path.slice(0, at), new Map(new URLSearchParams(path.slice(at + 1)))];
}

function multiValueQuery(query: Map<string, string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of query) out[k] = [v];
  return out;
}
