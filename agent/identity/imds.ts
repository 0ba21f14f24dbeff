import type { Host } from '../../lambdas/contract/schema';
import { ImdsUnavailableError } from '../errors';
import { nodeFetch } from '../send/node-fetch';
import { checkHost } from './host-schema';

/**
 * IMDSv2 client: a session token from `PUT /latest/api/token`, then GETs under
 * `/latest/meta-data/` with the token; a 401 (expired token) fetches a new token once.
 * Source: AWS EC2 User Guide, "Use IMDSv2" (docs/aws.md §1).
 */

/** Default IMDS endpoint (IPv4 link-local). */
export const IMDS_DEFAULT_BASE_URL = 'http://169.254.169.254';

/** Instance tags read into `host.tags` when the instance exposes tags in IMDS. */
export const IMDS_DEFAULT_TAG_KEYS = ['team', 'job', 'project'] as const;

/** Options of {@link ImdsClient}. */
export interface ImdsClientOptions {
  /** IMDS base URL (tests point it at a fake). @default {@link IMDS_DEFAULT_BASE_URL} */
  readonly baseUrl?: string;
  /** The fetch to use. @default {@link nodeFetch} (node:http, not undici: less RSS) */
  readonly fetch?: typeof fetch;
  /** Per-request timeout, ms, 1..60000; IMDS answers in a few ms on EC2. @default 1000 */
  readonly timeoutMs?: number;
  /** Token lifetime asked for, s, 1..21600 (the IMDS maximum). @default 21600 */
  readonly tokenTtlS?: number;
  /** Instance tag keys read into `host.tags` (needs `InstanceMetadataTags=enabled`). @default team, job, project */
  readonly tagKeys?: readonly string[];
}

/** Reads the instance's identity from IMDSv2. */
export class ImdsClient {
  private readonly baseUrl: string;
  private readonly doFetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly tokenTtlS: number;
  private readonly tagKeys: readonly string[];
  private tokenPromise: Promise<string> | undefined;
  private currentToken: string | undefined;

  /** @param opts - see {@link ImdsClientOptions} */
  constructor(opts: ImdsClientOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? IMDS_DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.doFetch = opts.fetch ?? nodeFetch;
    this.timeoutMs = opts.timeoutMs ?? 1000;
    this.tokenTtlS = opts.tokenTtlS ?? 21600;
    this.tagKeys = opts.tagKeys ?? IMDS_DEFAULT_TAG_KEYS;
  }

  /**
   * GETs one metadata path with the session token.
   *
   * @param path - under `/latest/meta-data/`, e.g. `instance-id`
   * @returns the body, or `undefined` on 404 (not present on this instance)
   * @throws {ImdsUnavailableError} on network errors, timeouts and other non-2xx answers
   */
  async get(path: string): Promise<string | undefined> {
    const full = `/latest/meta-data/${path}`;
    let stale: string | undefined;
    for (let attempt = 0; attempt < 2; attempt++) {
      const token = await this.sessionToken(stale);
      stale = token;
      const response = await this.request(full, {
        method: 'GET',
        headers: { 'X-aws-ec2-metadata-token': token },
      });
      if (response.status === 401 && attempt === 0) {
        await response.body?.cancel();
        continue;
      }
      if (response.status === 404) {
        await response.body?.cancel();
        return undefined;
      }
      if (!response.ok) {
        await response.body?.cancel();
        throw new ImdsUnavailableError(full, `expected HTTP 200, got ${response.status}`, {
          status: response.status,
        });
      }
      return (await response.text()).trim();
    }
    throw new ImdsUnavailableError(full, 'expected HTTP 200, got 401 twice with a fresh token', {
      status: 401,
    });
  }

  /**
   * Reads the contract identity: instance id and type, region, AZ, AMI, lifecycle, Auto Scaling
   * group (tag `aws:autoscaling:groupName`, absent on 404) and the configured tags (none when
   * the instance does not expose tags).
   *
   * @returns a contract `Host`
   * @throws {ImdsUnavailableError} when IMDS cannot be reached, or a required path is missing or invalid
   */
  async host(): Promise<Host> {
    const required = async (path: string): Promise<string> => {
      const value = await this.get(path);
      if (value === undefined || value === '')
        throw new ImdsUnavailableError(`/latest/meta-data/${path}`, 'expected a value, got 404', {
          status: 404,
        });
      return value;
    };
    const [instanceId, instanceType, region, az, ami, lifecycle, asg, tagList] = await Promise.all([
      required('instance-id'),
      required('instance-type'),
      required('placement/region'),
      this.get('placement/availability-zone'),
      this.get('ami-id'),
      this.get('instance-life-cycle'),
      this.get('tags/instance/aws:autoscaling:groupName'),
      this.get('tags/instance'),
    ]);
    const exposed = new Set((tagList ?? '').split('\n').map((k) => k.trim()));
    const tags: Record<string, string> = {};
    for (const key of this.tagKeys) {
      if (!exposed.has(key)) continue;
      const value = await this.get(`tags/instance/${encodeURIComponent(key)}`);
      if (value !== undefined) tags[key] = value;
    }
    const host = {
      instance_id: instanceId,
      instance_type: instanceType,
      region,
      ...(az ? { az } : {}),
      ...(lifecycle === 'spot' || lifecycle === 'on-demand' ? { lifecycle } : {}),
      ...(asg ? { asg_name: asg } : {}),
      ...(ami ? { ami_id: ami } : {}),
      ...(Object.keys(tags).length > 0 ? { tags } : {}),
    };
    const checked = checkHost(host);
    if (!checked.success)
      throw new ImdsUnavailableError(
        '/latest/meta-data/',
        `answered an identity that breaks the contract at ${checked.field}: ${checked.message}`,
        { cause: checked.cause },
      );
    return checked.host;
  }

  /** One token for all concurrent reads; a 401 with token `stale` replaces it once (single flight). */
  private sessionToken(stale?: string): Promise<string> {
    if (this.tokenPromise === undefined || (stale !== undefined && this.currentToken === stale)) {
      this.currentToken = undefined;
      const pending = this.fetchToken().then((token) => {
        this.currentToken = token;
        return token;
      });
      pending.catch(() => {
        if (this.tokenPromise === pending) this.tokenPromise = undefined;
      });
      this.tokenPromise = pending;
    }
    return this.tokenPromise;
  }

  private async fetchToken(): Promise<string> {
    const path = '/latest/api/token';
    const response = await this.request(path, {
      method: 'PUT',
      headers: { 'X-aws-ec2-metadata-token-ttl-seconds': String(this.tokenTtlS) },
    });
    if (!response.ok) {
      await response.body?.cancel();
      throw new ImdsUnavailableError(path, `expected HTTP 200 with a token, got ${response.status}`, {
        status: response.status,
      });
    }
    return (await response.text()).trim();
  }

  private async request(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.doFetch(`${this.baseUrl}${path}`, {
        ...init,
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (cause) {
      throw new ImdsUnavailableError(path, `no answer within ${this.timeoutMs} ms (${String(cause)})`, {
        cause,
      });
    }
  }
}
