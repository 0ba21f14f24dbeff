import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { ContractValidationError, parseBatch } from '../contract';
import { assertCallerIsInstance } from './caller-identity';
import { IngestRequestError } from './errors';
import { decodeJsonBody } from './http-body';
import { type PipelineDeps, processBatch } from './process-batch';

/** Ingest handler settings on top of the pipeline's ports. */
export interface IngestHandlerDeps extends PipelineDeps {
  /**
   * `instance-session`: the caller's assumed-role session name must equal `host.instance_id`
   * (API Gateway IAM auth). `none`: no identity check (local mode on loopback only).
   * @default 'instance-session'
   */
  readonly callerCheck?: 'instance-session' | 'none';
  /** The clock. @default () => new Date() */
  readonly clock?: () => Date;
}

/** The ingest Lambda's signature: an API Gateway REST (v1) proxy event in, a proxy result out. */
export type IngestHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

/**
 * Builds the `POST /v1/batches` handler (DESIGN §3): decode (gzip) within the size limits,
 * validate against contract v1, check the caller is the instance it sends for, run the pipeline.
 *
 * Answers: `202 {"accepted": n}`; `400 {"error", "path"}` invalid (nothing stored); `403` identity
 * mismatch; `413` too large; `415` unknown encoding; `503` store unavailable (the agent keeps the
 * batch and retries); `500` anything else, with a generic body (the cause is logged).
 *
 * @param deps - ports and settings
 * @returns the handler
 */
export function createIngestHandler(deps: IngestHandlerDeps): IngestHandler {
  const clock = deps.clock ?? (() => new Date());
  return async (event) => {
    const now = clock();
    try {
      const json = decodeJsonBody(event);
      const batch = parseBatch(json, now);
      if ((deps.callerCheck ?? 'instance-session') === 'instance-session') {
        assertCallerIsInstance(event.requestContext?.identity?.userArn, batch.host.instance_id);
      }
      const result = await processBatch(batch, deps, now);
      return respond(202, { accepted: result.accepted, rejected: result.rejected });
    } catch (err) {
      if (err instanceof ContractValidationError) {
        deps.log.warn('batch refused', { status: 400, path: err.path, message: err.message });
        return respond(400, { error: err.message, path: err.path });
      }
      if (err instanceof IngestRequestError) {
        deps.log.warn('batch refused', { status: err.status, path: err.path, message: err.message });
        return respond(err.status, { error: err.message, path: err.path });
      }
      if ((err as Error).name === 'StoreUnavailableError') {
        deps.log.error('store unavailable', { error: (err as Error).message });
        return respond(503, { error: 'store unavailable; retry later' });
      }
      deps.log.error('ingest failed', { error: (err as Error).message, stack: (err as Error).stack });
      return respond(500, { error: 'internal error; retry later' });
    }
  };
}

function respond(statusCode: number, body: Record<string, unknown>): APIGatewayProxyResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}
