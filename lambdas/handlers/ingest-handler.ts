import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { systemClock } from '../adapters/clock';
import type { PipelineDeps, ProcessResult } from '../app/pipeline';
import { processBatch } from '../app/process-batch';
import { type Batch, ContractValidationError, parseBatch } from '../contract';
import {
  acceptedBatchMetrics,
  InstanceLookupError,
  type MetricsSink,
  rejectedBatchMetrics,
  StoreUnavailableError,
} from '../domain';
import { IngestRequestError } from './errors';
import { decodeJsonBody } from './http-body';
import { isProbe, probeAnswer, verifySender } from './verify-sender';

/** Ingest handler settings on top of the pipeline's ports. */
export interface IngestHandlerDeps extends PipelineDeps {
  /**
   * `instance-session`: the caller must be the instance it sends for (API Gateway IAM auth; see
   * `judgeSender`), checked before validation. `none`: no identity check (local mode on loopback only).
   * @default 'instance-session'
   */
  readonly callerCheck?: 'instance-session' | 'none';
  /**
   * Role names whose instance sessions may send (the agent roles of the deployment); any other
   * caller gets 403. @default undefined (any role; the API's resource policy restricts roles)
   */
  readonly agentRoleNames?: readonly string[];
  /**
   * The account whose instances `instances` can see (EC2 and Auto Scaling answer only for the
   * caller's own account). A caller of another account (an organization-wide API) is not looked up:
   * its batch is judged on the resource policy and the session check alone, and not enriched.
   * @default undefined (every caller is looked up)
   */
  readonly accountId?: string;
  /** The clock. @default systemClock */
  readonly clock?: () => Date;
  /**
   * Where the batch's CloudWatch metrics go (docs/design.md §13): EMF in Lambda. Emitting never
   * changes the answer. @default undefined (no metrics; local mode)
   */
  readonly metrics?: MetricsSink;
  /**
   * Teams whose name is their own `Team` dimension value on the metrics; any other team is
   * `other` (bounded cardinality, see `teamDimensionValue`). @default empty set
   */
  readonly metricTeams?: ReadonlySet<string>;
}

/** The ingest Lambda's signature: an API Gateway REST (v1) proxy event in, a proxy result out. */
export type IngestHandler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;

/**
 * Builds the `POST /v1/batches` handler (docs/design.md §3): decode (gzip by magic bytes) within the size
 * limits, check the caller is the instance it claims to be (before validation, so a spoofed batch
 * learns nothing about the contract), validate against contract v1, run the pipeline.
 *
 * Identity (`instance-session`): the caller is an instance role session named after the claimed
 * `host.instance_id`; with `instances` (server-side enrichment) EC2 must also know the instance in
 * the claimed `host.region` (503 while it does not: a just-launched instance), running, of a GPU
 * type, with an instance profile whose role is the caller's.
 *
 * A signed probe (header `x-gpu-sentinel-probe: 1`, `PROBE_HEADER`) runs every step up to and
 * including validation and stops there: `200 {"probe": true, "verified", "not_checked", …}`
 * (`probeAnswer`), or the 4xx/503 the same batch would get; nothing is stored, judged, sent or
 * counted.
 *
 * Answers: `202 {"accepted": n}`; `400 {"error", "path"}` invalid (nothing stored); `403` identity
 * refused; `413` too large; `415` a `Content-Type` other than `application/json`; `503` store or
 * EC2 unavailable (the agent keeps the batch and retries); `500` anything else, with a generic body
 * (the cause is logged).
 *
 * Then, with `deps.metrics`, the batch's CloudWatch metrics (docs/design.md §13): an accepted
 * batch's from `acceptedBatchMetrics`, any other answer as `RejectedBatches` by status class;
 * computed and emitted after the answer is settled, and a failure there is logged, never answered.
 *
 * @param deps - ports and settings
 * @returns the handler
 */
export function createIngestHandler(deps: IngestHandlerDeps): IngestHandler {
  const clock = deps.clock ?? systemClock;
  const metricTeams = deps.metricTeams ?? new Set<string>();
  /** Answers one request; an accepted batch and what the pipeline made of it are left in `seen`. */
  const answer = async (
    event: APIGatewayProxyEvent,
    now: Date,
    probe: boolean,
    seen: { accepted?: { batch: Batch; result: ProcessResult } },
  ): Promise<APIGatewayProxyResult> => {
    try {
      const json = decodeJsonBody(event);
      const sender = await verifySender(event, json, deps);
      const pipeline: PipelineDeps = sender.lookupAllowed ? deps : { ...deps, instances: undefined };
      const batch = parseBatch(json, now);
      if (probe) return respond(200, probeAnswer(event, batch, sender));
      const result = await processBatch(batch, pipeline, now);
      seen.accepted = { batch, result };
      return respond(202, { accepted: result.accepted, rejected: result.rejected });
    } catch (err) {
      if (err instanceof ContractValidationError) {
        deps.log.warn('batch refused', { status: 400, path: err.path, message: err.message, probe });
        return respond(400, { error: err.message, path: err.path });
      }
      if (err instanceof IngestRequestError) {
        deps.log.warn('batch refused', { status: err.status, path: err.path, message: err.message, probe });
        return respond(err.status, { error: err.message, path: err.path });
      }
      if (err instanceof StoreUnavailableError) {
        deps.log.error('store unavailable', { error: err.message });
        return respond(503, { error: 'store unavailable; retry later' });
      }
      if (err instanceof InstanceLookupError) {
        deps.log.error('instance lookup unavailable', { error: err.message });
        return respond(503, { error: 'instance lookup unavailable; retry later' });
      }
      deps.log.error('ingest failed', { error: (err as Error).message, stack: (err as Error).stack });
      return respond(500, { error: 'internal error; retry later' });
    }
  };
  return async (event) => {
    const now = clock();
    const seen: { accepted?: { batch: Batch; result: ProcessResult } } = {};
    const probe = isProbe(event);
    const response = await answer(event, now, probe, seen);
    // A probe writes nothing, metrics included: its answer is the whole of what it does.
    if (deps.metrics !== undefined && !probe) {
      // Metrics never change the answer: computed and emitted after it is settled, failures logged.
      try {
        const { accepted } = seen;
        const groups =
          accepted === undefined
            ? rejectedBatchMetrics(response.statusCode)
            : acceptedBatchMetrics({
                batch: accepted.batch,
                windows: accepted.result.windows,
                alerts: accepted.result.alerts,
                metricTeams,
                now,
              });
        deps.metrics.emit(groups, now);
      } catch (err) {
        deps.log.error('metrics not emitted; the batch is unaffected', { error: (err as Error).message });
      }
    }
    return response;
  };
}

function respond(statusCode: number, body: Record<string, unknown>): APIGatewayProxyResult {
  return { statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}
