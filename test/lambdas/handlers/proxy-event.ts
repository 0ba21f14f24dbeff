import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import {
  ANONYMOUS_CALLER,
  type CallerIdentity,
  instanceRoleIdentity,
  toProxyEvent,
} from '../../../lambdas/local/api-gateway-event';

/** The agent's instance in the handler tests (`validBatch()`'s host). */
export const INSTANCE_ID = 'i-0a5e00000000000a1';
/** The agent's role in the handler tests. */
export const AGENT_ROLE = 'GpuNodeRole';
/** The account in the handler tests. */
export const ACCOUNT = '123456789012';
/** The assumed-role ARN of {@link INSTANCE_ID}'s instance-profile session. */
export const INSTANCE_CALLER = `arn:aws:sts::${ACCOUNT}:assumed-role/${AGENT_ROLE}/${INSTANCE_ID}`;

/**
 * The identity IAM authorization reports for a caller ARN: an assumed-role session (the role and
 * session from the ARN), any other principal (user, root) with its ARN, or anonymous for null.
 */
export function identityOf(userArn: string | null): CallerIdentity {
  if (userArn === null) return ANONYMOUS_CALLER;
  const role = /^arn:aws[a-z-]*:sts::(\d{12}):assumed-role\/([^/]+)\/([^/]+)$/.exec(userArn);
  if (role) return instanceRoleIdentity(role[1]!, role[2]!, role[3]!);
  const account = /^arn:aws[a-z-]*:[a-z]+::(\d{12}):/.exec(userArn)?.[1] ?? null;
  return {
    accountId: account,
    caller: 'AIDAEXAMPLEEXAMPLE01',
    user: 'AIDAEXAMPLEEXAMPLE01',
    userArn,
    accessKey: 'AKIAEXAMPLEEXAMPLE01',
  };
}

/** How {@link batchEvent} sends the body. */
export interface BatchEventOptions {
  /** The SigV4 caller's ARN; null for an unsigned request. @default {@link INSTANCE_CALLER} */
  readonly caller?: string | null;
  /** gzip the body with `Content-Encoding: gzip`, as the agent does. @default true */
  readonly gzip?: boolean;
  /** Headers to send instead of the agent's (`Content-Type: application/json` + the encoding). */
  readonly headers?: Record<string, string>;
}

/**
 * The Lambda event API Gateway (REST, proxy integration, IAM auth) builds for `POST /v1/batches`
 * with `body` as JSON, through the same API Gateway model the local server uses.
 *
 * @throws when API Gateway itself would answer (payload limits), since no event would exist
 */
export function batchEvent(body: unknown, options: BatchEventOptions = {}): APIGatewayProxyEvent {
  const json = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const gzip = options.gzip ?? true;
  const headers = options.headers ?? {
    'Content-Type': 'application/json',
    ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
  };
  const outcome = toProxyEvent({
    method: 'POST',
    path: '/v1/batches',
    headers,
    body: gzip ? gzipSync(json) : json,
    identity: identityOf(options.caller === undefined ? INSTANCE_CALLER : options.caller),
  });
  if (outcome.kind !== 'event') throw new Error(`API Gateway answers ${outcome.result.statusCode} itself`);
  return outcome.event;
}
