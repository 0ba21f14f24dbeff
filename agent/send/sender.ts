import { gzipSync } from 'node:zlib';
import { Hash } from '@smithy/hash-node';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from '@smithy/types';
import pRetry, { AbortError } from 'p-retry';
import type { Batch } from '../../lambdas/contract';
import { PROBE_HEADER } from '../../lambdas/contract/constants';
import { systemClock } from '../clock';
import { type ApiErrorBody, SendFailedError, SendRejectedError } from '../errors';
import { hostCredentialProvider } from './host-credentials';
import { isLoopbackHost } from './loopback-host';
import { keepAliveFetch } from './node-fetch';

/**
 * Default idle time of the sender's keep-alive socket, ms: longer than the default 60 s send
 * interval, so a batch a minute reuses one TCP/TLS connection.
 */
export const DEFAULT_KEEP_ALIVE_MS = 90_000;

/** How requests are authenticated: `sigv4` (API Gateway IAM auth) or `none` (loopback local mode). */
export const SENDER_AUTH_MODES = ['sigv4', 'none'] as const;
/** Union of {@link SENDER_AUTH_MODES}. */
export type SenderAuthMode = (typeof SENDER_AUTH_MODES)[number];

/** Options of {@link HttpSender}. */
export interface HttpSenderOptions {
  /** The API stage URL, e.g. `https://abc.execute-api.us-east-1.amazonaws.com/prod`; batches go to `<endpoint>/v1/batches`. */
  readonly endpoint: string;
  /** Request authentication. @default 'sigv4' */
  readonly auth?: SenderAuthMode;
  /** AWS region of the API, for SigV4 (service `execute-api`). Required when `auth` is `sigv4`. */
  readonly region?: string;
  /**
   * Credentials or a provider.
   * @default hostCredentialProvider() — the SDK default chain's precedence, loading only the source this host uses (the instance role through IMDSv2 on EC2)
   */
  readonly credentials?: AwsCredentialIdentity | AwsCredentialIdentityProvider;
  /** The fetch to use. @default `keepAliveFetch(keepAliveMs)` (node:http, not undici: less RSS) */
  readonly fetch?: typeof fetch;
  /** Idle time of the keep-alive socket, ms, > 0; set it above the send interval. Ignored with `fetch`. @default {@link DEFAULT_KEEP_ALIVE_MS} */
  readonly keepAliveMs?: number;
  /** The clock used as the SigV4 signing date. @default systemClock */
  readonly clock?: () => Date;
  /** Retries after the first attempt on 429, 5xx and network errors, 0..20. @default 5 */
  readonly retries?: number;
  /**
   * Retries after a 401 or 403, each with fresh credentials (the provider is asked with
   * `forceRefresh`), 0..20. API Gateway answers 403 for expired credentials, clock skew and IAM
   * changes still propagating, not only for a caller it will never admit; only after these retries
   * is the batch refused for good (`SendRejectedError`).
   * @default 3
   */
  readonly authRetries?: number;
  /** First retry delay, ms (exponential, factor 2, with jitter ×1..2). @default 500 */
  readonly minTimeoutMs?: number;
  /** Largest retry delay, ms. @default 30000 */
  readonly maxTimeoutMs?: number;
  /** Give up one attempt after this many ms. @default 10000 */
  readonly requestTimeoutMs?: number;
}

/** The API's answer to a delivered batch: `202 {"accepted": n}`. */
export interface SendResult {
  /** HTTP status, 2xx (202 from the API). */
  readonly status: number;
  /** Windows the API accepted, from the answer's `accepted`; 0 when the answer had none. */
  readonly accepted: number;
}

/** Statuses API Gateway answers for a signature or identity it does not accept (now). */
const AUTH_STATUSES: ReadonlySet<number> = new Set([401, 403]);

class RetryableHttpError extends Error {
  override readonly name = 'RetryableHttpError';
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}

/**
 * Delivers batches to `POST <endpoint>/v1/batches` as gzip JSON (`Content-Encoding: gzip`),
 * signed with SigV4 (service `execute-api`; the compressed body and every header sent are signed)
 * or unsigned for the loopback local pipeline. Retries 429, 5xx and network errors with
 * exponential backoff and jitter (p-retry); retries 401/403 `authRetries` times with refreshed
 * credentials; any other 4xx is final. SigV4 is sent over `https://`, or plain `http://` only to a
 * loopback host (the signed headers would otherwise cross the network in the clear).
 *
 * @example
 * const sender = new HttpSender({ endpoint: 'https://abc.execute-api.us-east-1.amazonaws.com/prod', region: 'us-east-1' });
 * const { accepted } = await sender.send(batch);
 */
export class HttpSender {
  private readonly url: URL;
  private readonly auth: SenderAuthMode;
  private readonly signer: SignatureV4 | undefined;
  private readonly doFetch: typeof fetch;
  private readonly clock: () => Date;
  private readonly retries: number;
  private readonly authRetries: number;
  /** Set after a 401/403: the next signature asks the provider for fresh credentials. */
  private refreshCredentials = false;
  private readonly minTimeoutMs: number;
  private readonly maxTimeoutMs: number;
  private readonly requestTimeoutMs: number;

  /**
   * @param opts - see {@link HttpSenderOptions}
   * @throws {RangeError} when `endpoint` is not an http(s) URL, is plain `http://` to a non-loopback host with `sigv4`, `region` is missing for `sigv4`, or a number option is out of range
   */
  constructor(opts: HttpSenderOptions) {
    let base: URL;
    try {
      base = new URL(opts.endpoint);
    } catch (cause) {
      throw new RangeError(`Expected \`endpoint\` to be an http(s) URL, got \`${opts.endpoint}\``, { cause });
    }
    if (base.protocol !== 'https:' && base.protocol !== 'http:')
      throw new RangeError(`Expected \`endpoint\` to be an http(s) URL, got \`${opts.endpoint}\``);
    this.url = new URL(`${base.pathname.replace(/\/+$/, '')}/v1/batches`, base);
    this.auth = opts.auth ?? 'sigv4';
    this.doFetch = opts.fetch ?? keepAliveFetch(opts.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS);
    this.clock = opts.clock ?? systemClock;
    this.retries = checkRange('retries', opts.retries ?? 5, 0, 20);
    this.authRetries = checkRange('authRetries', opts.authRetries ?? 3, 0, 20);
    this.minTimeoutMs = checkRange('minTimeoutMs', opts.minTimeoutMs ?? 500, 0, 3_600_000);
    this.maxTimeoutMs = checkRange('maxTimeoutMs', opts.maxTimeoutMs ?? 30_000, this.minTimeoutMs, 3_600_000);
    this.requestTimeoutMs = checkRange('requestTimeoutMs', opts.requestTimeoutMs ?? 10_000, 1, 600_000);
    if (this.auth === 'sigv4') {
      if (!opts.region)
        throw new RangeError('Expected `region` (e.g. us-east-1) when `auth` is sigv4, got `undefined`');
      if (base.protocol === 'http:' && !isLoopbackHost(base.hostname))
        throw new RangeError(
          `Expected an https:// \`endpoint\` for SigV4 (plain http only to a loopback host), got \`${opts.endpoint}\``,
        );
      const provider = opts.credentials ?? hostCredentialProvider().provider;
      this.signer = new SignatureV4({
        service: 'execute-api',
        region: opts.region,
        credentials:
          typeof provider === 'function'
            ? () => {
                const forceRefresh = this.refreshCredentials;
                this.refreshCredentials = false;
                return provider(forceRefresh ? { forceRefresh } : undefined);
              }
            : provider,
        // Node's own SHA-256 and HMAC (OpenSSL), as the SDK's Node clients sign, not a JavaScript
        // SHA-256 whose hot loop a small process would have TurboFan compile (4.7 MB more RSS in a
        // process that only signs; inside the agent, which runs TurboFan anyway, the same RSS).
        sha256: Hash.bind(null, 'sha256'),
      });
    }
  }

  /** The URL batches are posted to. */
  get batchesUrl(): string {
    return this.url.toString();
  }

  /**
   * Sends one batch, retrying transient failures. A retried batch is the same batch (same
   * `batch_id` and `seq`), so the API stores it once.
   *
   * @param batch - a contract batch
   * @returns `{ status, accepted }` from the API's 2xx answer
   * @throws {SendRejectedError} on a 4xx other than 429, 401 and 403 (not retried), or on a 401/403
   *   that persisted through `authRetries` credential refreshes; with the API's `{ error, path }`
   * @throws {SendFailedError} when every attempt got a 429, a 5xx or a network error
   */
  async send(batch: Batch): Promise<SendResult> {
    const body = gzipSync(JSON.stringify(batch));
    let attempts = 0;
    let authFailures = 0;
    let transientFailures = 0;
    let lastStatus: number | undefined;
    try {
      return await pRetry(
        async () => {
          attempts++;
          let response: Response;
          try {
            response = await this.post(body);
          } catch (error) {
            if (++transientFailures > this.retries) throw new AbortError(error as Error);
            throw error;
          }
          lastStatus = response.status;
          if (response.status >= 200 && response.status < 300) {
            const json = (await response.json().catch(() => ({}))) as { accepted?: unknown };
            return {
              status: response.status,
              accepted: typeof json.accepted === 'number' ? json.accepted : 0,
            };
          }
          if (response.status === 429 || response.status >= 500) {
            await response.body?.cancel();
            if (++transientFailures > this.retries)
              throw new AbortError(new RetryableHttpError(response.status));
            throw new RetryableHttpError(response.status);
          }
          if (AUTH_STATUSES.has(response.status) && ++authFailures <= this.authRetries) {
            await response.body?.cancel();
            this.refreshCredentials = true;
            throw new RetryableHttpError(response.status);
          }
          const errorBody = (await response.json().catch(() => undefined)) as ApiErrorBody | undefined;
          throw new AbortError(new SendRejectedError(batch.batch_id, response.status, errorBody));
        },
        {
          retries: this.retries + this.authRetries,
          minTimeout: this.minTimeoutMs,
          maxTimeout: this.maxTimeoutMs,
          factor: 2,
          randomize: true,
          onFailedAttempt: ({ error }) => {
            if (!(error instanceof RetryableHttpError)) lastStatus = undefined;
          },
        },
      );
    } catch (error) {
      if (error instanceof SendRejectedError) throw error;
      throw new SendFailedError(batch.batch_id, attempts, {
        ...(lastStatus !== undefined ? { lastStatus } : {}),
        cause: error,
      });
    }
  }

  /**
   * Posts `batch` once as a signed probe (header {@link PROBE_HEADER} `1`, signed with the rest):
   * the API runs its identity and contract checks and stores nothing (`gpu-sentinel doctor`). No
   * retry, no credential refresh: the answer, whatever it is, is what the caller wants to see.
   *
   * @param batch - a contract batch (the doctor sends one with no windows)
   * @returns the HTTP answer: status, headers and body text
   * @throws {Error} on a network error or timeout (`requestTimeoutMs`), or when credentials cannot be had
   */
  async probe(batch: Batch): Promise<{ status: number; headers: Headers; text: string }> {
    const response = await this.post(gzipSync(JSON.stringify(batch)), { [PROBE_HEADER]: '1' });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  private async post(body: Buffer, extraHeaders: Record<string, string> = {}): Promise<Response> {
    let headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      ...extraHeaders,
    };
    if (this.signer) {
      const request = new HttpRequest({
        method: 'POST',
        protocol: this.url.protocol,
        hostname: this.url.hostname,
        ...(this.url.port ? { port: Number(this.url.port) } : {}),
        path: this.url.pathname,
        headers: { ...headers, host: this.url.host },
        body,
      });
      const signed = await this.signer.sign(request, { signingDate: this.clock() });
      // fetch sets Host itself from the URL (the same value that was signed).
      const { host: _host, ...rest } = signed.headers;
      headers = rest;
    }
    return this.doFetch(this.url, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.timeout(this.requestTimeoutMs),
    });
  }
}

function checkRange(name: string, value: number, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    throw new RangeError(
      `Expected \`${name}\` to be a number in ${min}..${max}, got \`${value}\` (${typeof value})`,
    );
  return value;
}
