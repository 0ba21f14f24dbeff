import type { Host } from '../../lambdas/contract/schema';
import { checkHost } from './host-schema';
import { ImdsClient } from './imds';

/** Options of {@link resolveIdentity}. */
export interface ResolveIdentityOptions {
  /** Fields that win over IMDS; with `instance_id`, `instance_type` and `region` all set, IMDS is not asked. */
  readonly override?: Partial<Host>;
  /** IMDS base URL. @default http://169.254.169.254 */
  readonly imdsBaseUrl?: string;
  /** The fetch to use. @default `nodeFetch` (node:http; no undici) */
  readonly fetch?: typeof fetch;
  /** Per-request IMDS timeout, ms. @default 1000 */
  readonly timeoutMs?: number;
}

/**
 * Resolves the agent's contract `Host`: the override alone when it has every required field
 * (local runs, tests, on-prem), else IMDSv2 with the override's fields on top (tags merged).
 *
 * @param opts - override, IMDS base URL, fetch, timeout
 * @returns the host, valid against the contract
 * @throws {ImdsUnavailableError} when IMDS is needed and cannot answer
 * @throws {RangeError} when the resulting identity breaks the contract (e.g. a bad override)
 * @example
 * const host = await resolveIdentity({ override: { tags: { team: 'research' } } });
 */
export async function resolveIdentity(opts: ResolveIdentityOptions = {}): Promise<Host> {
  const override = opts.override ?? {};
  const complete = override.instance_id && override.instance_type && override.region;
  let host: Partial<Host> = override;
  if (!complete) {
    const imds = await new ImdsClient({
      ...(opts.imdsBaseUrl ? { baseUrl: opts.imdsBaseUrl } : {}),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
    }).host();
    const tags = imds.tags || override.tags ? { ...imds.tags, ...override.tags } : undefined;
    host = { ...imds, ...override, ...(tags ? { tags } : {}) };
  }
  const checked = checkHost(host);
  if (!checked.success) {
    const top = checked.field.split('.')[0] ?? '';
    throw new RangeError(
      `Expected a valid identity, got \`${checked.field}\` = \`${JSON.stringify((host as Record<string, unknown>)[top])}\`: ${checked.message}`,
      { cause: checked.cause },
    );
  }
  return checked.host;
}
