import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import { AgentError } from '../errors';

/** The STS GetCallerIdentity request body (Query protocol, API version 2011-06-15). */
const GET_CALLER_IDENTITY_BODY = 'Action=GetCallerIdentity&Version=2011-06-15';

/** STS could not say who the credentials are. */
export class CallerIdentityError extends AgentError {
  override readonly name = 'CallerIdentityError';
  /** HTTP status of STS's answer; absent for network errors and missing credentials. */
  readonly status: number | undefined;
  /** STS's error code, e.g. `InvalidClientTokenId`, `ExpiredToken`. */
  readonly code: string | undefined;

  /**
   * @param message - what was expected and what came
   * @param options - `status`, `code`, `cause`
   */
  constructor(message: string, options: { status?: number; code?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.status = options.status;
    this.code = options.code;
  }
}

/** Options of {@link stsCallerArn}. */
export interface StsCallerOptions {
  /** Region of the STS endpoint (`https://sts.<region>.amazonaws.com/`, the regional endpoint). */
  readonly region: string;
  /** The credentials to ask about: the agent's own provider. */
  readonly credentials: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** The fetch to use. @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** The signing date. */
  readonly clock: () => Date;
  /** Per-request timeout, ms. @default 5000 */
  readonly timeoutMs?: number;
  /** Endpoint override (tests). @default `https://sts.<region>.amazonaws.com/` */
  readonly endpoint?: string;
}

/**
 * The ARN of the caller the credentials belong to, from STS `GetCallerIdentity` (which needs no
 * IAM permission: "No permissions are required to perform this operation", STS API reference),
 * signed with SigV4 as the SDK's STS client signs it. For instance-profile credentials the ARN is
 * `arn:aws:sts::<account>:assumed-role/<role>/<instance id>`.
 *
 * A hand-made Query request, because the repository ships no `@aws-sdk/client-sts`; the answer
 * is read for its `<Arn>` only.
 *
 * @param options - region, credentials, fetch, clock
 * @returns the caller's ARN
 * @throws {CallerIdentityError} when the credentials cannot be had, STS cannot be reached, or it refuses them
 */
export async function stsCallerArn(options: StsCallerOptions): Promise<string> {
  const url = new URL(options.endpoint ?? `https://sts.${options.region}.amazonaws.com/`);
  const signer = new SignatureV4({
    service: 'sts',
    region: options.region,
    credentials: options.credentials,
    sha256: Hash.bind(null, 'sha256'),
  });
  let text: string;
  let status: number;
  try {
    const signed = await signer.sign(
      new HttpRequest({
        method: 'POST',
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port ? { port: Number(url.port) } : {}),
        path: url.pathname,
        headers: {
          host: url.host,
          'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
        },
        body: GET_CALLER_IDENTITY_BODY,
      }),
      { signingDate: options.clock() },
    );
    const { host: _host, ...headers } = signed.headers;
    const response = await (options.fetch ?? fetch)(url, {
      method: 'POST',
      headers,
      body: GET_CALLER_IDENTITY_BODY,
      signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
    });
    status = response.status;
    text = await response.text();
  } catch (cause) {
    throw new CallerIdentityError(
      `STS GetCallerIdentity at ${url.host}: no answer or no credentials (${String((cause as Error).message ?? cause)})`,
      { cause },
    );
  }
  const arn = /<Arn>([^<]+)<\/Arn>/.exec(text)?.[1];
  if (status === 200 && arn !== undefined) return arn;
  const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
  const message = /<Message>([^<]+)<\/Message>/.exec(text)?.[1];
  throw new CallerIdentityError(
    `STS GetCallerIdentity: expected HTTP 200 with an Arn, got ${status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`,
    { status, ...(code !== undefined ? { code } : {}) },
  );
}
