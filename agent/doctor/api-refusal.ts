/**
 * Who refused a request to the ingest API, read from the answer alone. API Gateway answers its own
 * refusals (IAM authorization, the resource policy, a missing route, a bad signature) with a JSON
 * body `{"message": …}` or `{"Message": …}` and the header `x-amzn-ErrorType` naming the gateway
 * response (`AccessDeniedException`, `MissingAuthenticationTokenException`,
 * `InvalidSignatureException`, `IncompleteSignatureException`, `UnrecognizedClientException`,
 * `ExpiredTokenException`); the ingest handler answers with our error JSON `{"error", "path"}`
 * (docs/design.md §3). A resource-policy refusal reads, per API Gateway's developer guide
 * ("Create and attach an API Gateway resource policy", troubleshooting) and AWS's knowledge
 * center: `User: <caller> is not authorized to perform: execute-api:Invoke on resource: <arn>`,
 * with ` with an explicit deny` when a Deny statement matched.
 */

/** Who refused, and how the doctor words it. */
export const API_REFUSERS = [
  'resource-policy',
  'handler',
  'signature',
  'credentials',
  'missing-route',
  'throttled',
  'unavailable',
  'other',
] as const;
/** Union of {@link API_REFUSERS}. */
export type ApiRefuser = (typeof API_REFUSERS)[number];

/** What {@link classifyApiRefusal} read from an answer. */
export interface ApiRefusal {
  /** Who refused. */
  readonly by: ApiRefuser;
  /** The message the refuser gave (the handler's `error`, API Gateway's `message`/`Message`), or the body's start. */
  readonly message: string;
  /** The handler's `path` (the first bad field), for a handler refusal. */
  readonly path?: string;
  /** `x-amzn-ErrorType` as sent, without its `:` suffix (API Gateway appends a URL to some). */
  readonly errorType?: string;
  /** For a resource-policy refusal: a Deny statement matched (`with an explicit deny`). */
  readonly explicitDeny?: boolean;
}

const SIGNATURE_TYPES = new Set(['InvalidSignatureException', 'IncompleteSignatureException']);
const CREDENTIAL_TYPES = new Set(['UnrecognizedClientException', 'ExpiredTokenException']);

/**
 * Reads who refused a non-2xx answer of the ingest API.
 *
 * @param status - the HTTP status (≥ 400)
 * @param headers - the answer's headers (any case)
 * @param text - the answer's body text
 * @returns who refused and their message
 */
export function classifyApiRefusal(status: number, headers: Headers, text: string): ApiRefusal {
  const errorType = headers.get('x-amzn-errortype')?.split(':')[0]?.trim() || undefined;
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) body = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: a proxy or load balancer in between; the text is the message.
  }
  const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const gatewayMessage = str(body.Message) ?? str(body.message);
  const message = str(body.error) ?? gatewayMessage ?? text.slice(0, 200);
  const base = { message, ...(errorType !== undefined ? { errorType } : {}) };
  // Our handler's refusals carry `error`; API Gateway's never do.
  if (typeof body.error === 'string') {
    if (status === 503 || status >= 500) return { by: 'unavailable', ...base };
    return { by: 'handler', ...base, ...(typeof body.path === 'string' ? { path: body.path } : {}) };
  }
  if (
    errorType === 'AccessDeniedException' ||
    /is not authorized to perform: execute-api:Invoke/.test(gatewayMessage ?? '')
  ) {
    return { by: 'resource-policy', ...base, explicitDeny: /with an explicit deny/.test(message) };
  }
  if (errorType !== undefined && SIGNATURE_TYPES.has(errorType)) return { by: 'signature', ...base };
  if (errorType !== undefined && CREDENTIAL_TYPES.has(errorType)) return { by: 'credentials', ...base };
  if (errorType === 'MissingAuthenticationTokenException' || /Missing Authentication Token/.test(message))
    return { by: 'missing-route', ...base };
  if (status === 429) return { by: 'throttled', ...base };
  if (status >= 500) return { by: 'unavailable', ...base };
  return { by: 'other', ...base };
}

/**
 * The fix, in words, for a refusal.
 *
 * @param refusal - from {@link classifyApiRefusal}
 * @returns one paragraph naming the setting or command
 */
export function refusalFix(refusal: ApiRefusal): string {
  switch (refusal.by) {
    case 'resource-policy':
      return (
        "API Gateway's resource policy refused the caller before the handler ran. Check that the host's role is one of the stack's agent roles " +
        "(stack output AgentRoleArn, or -c agentRoleArns) and that it sends with the instance profile's own credentials (not env keys, a profile or an assumed role). " +
        "If both hold, the policy's DenyWithoutInstanceCredentials statement is the likely cause: it denies requests whose credentials carry no ec2:SourceInstanceARN; " +
        'IAM documents that key for instance-role credentials, but whether API Gateway evaluates it is not proven for every account and region. ' +
        'Redeploy with -c requireInstanceCredentials=false to drop that statement; the handler still checks that the caller is an agent-role session named after a running instance of this account.'
      );
    case 'handler':
      return `The ingest handler refused the caller${refusal.path ? ` (${refusal.path})` : ''}: ${refusal.message}. The handler admits only an agent role's instance session named after host.instance_id, of an instance EC2 says runs, of a GPU type, whose instance profile carries that role.`;
    case 'signature':
      return "API Gateway could not verify the SigV4 signature: check the host clock (chrony/NTP; 5 minutes of skew is refused), that `region` is the API's region, and that no proxy rewrites the request.";
    case 'credentials':
      return 'The credentials are unknown or expired: check the instance profile is attached (IMDS iam/security-credentials) and that no stale env keys or ~/.aws files shadow it.';
    case 'missing-route':
      return 'API Gateway knows no such route: `endpoint` must be the stage URL (stack output BatchesUrl without /v1/batches), e.g. https://<api-id>.execute-api.<region>.amazonaws.com/prod; an unsigned request (auth none) gets the same answer.';
    case 'throttled':
      return 'The API throttled the request (stage or account throttling, or Lambda concurrency): retry later; at fleet scale see docs/capacity.md.';
    case 'unavailable':
      return "The API answered with a server error: the agent keeps its batches and retries; check the ingest Lambda's logs and alarms.";
    default:
      return `Unexpected answer (${refusal.errorType ?? 'no x-amzn-ErrorType'}): check that \`endpoint\` is the gpu-sentinel API and no proxy answers in its place.`;
  }
}
