import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { StoreUnavailableError } from '../../lambdas/domain/port-errors';
import type { StoreWriteResult, TelemetryStore } from '../../lambdas/domain/ports';
import type { StoreRows } from '../../lambdas/domain/types';

/** The assumed-role ARN of the instance the test batches come from (`validBatch().host.instance_id`). */
export const CALLER = 'arn:aws:sts::123456789012:assumed-role/GpuNodeRole/i-0a5e00000000000a1';

/**
 * An API Gateway REST proxy event as the ingest Lambda receives a `POST /v1/batches`: the body
 * base64 (binary media type), gzip unless `gzip` is false, the caller's ARN in
 * `requestContext.identity.userArn`.
 *
 * @param body - raw bytes of the request body (already encoded) or a value to JSON-encode
 * @param opts - `gzip` (default true) and `caller` (default {@link CALLER})
 */
export function proxyEvent(
  body: Buffer | unknown,
  opts: { gzip?: boolean; caller?: string } = {},
): APIGatewayProxyEvent {
  const raw = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
  const gzip = opts.gzip ?? true;
  return {
    resource: '/v1/batches',
    path: '/v1/batches',
    httpMethod: 'POST',
    body: (gzip ? gzipSync(raw) : raw).toString('base64'),
    isBase64Encoded: true,
    headers: {
      'Content-Type': 'application/json',
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
    },
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: null,
    stageVariables: null,
    requestContext: { identity: { userArn: opts.caller ?? CALLER } },
  } as unknown as APIGatewayProxyEvent;
}

/**
 * A telemetry store in memory that keeps every write whole (as the real adapters do: one batch is
 * one transaction in DuckDB, idempotent records in Timestream) and can be told to fail the next
 * write with {@link StoreUnavailableError}, as a throttled or unreachable store does.
 */
export class RecordingStore implements TelemetryStore {
  readonly writes: StoreRows[] = [];
  failNext = false;

  async write(rows: StoreRows): Promise<StoreWriteResult> {
    if (this.failNext) {
      this.failNext = false;
      throw new StoreUnavailableError('write', 'injected fault: the store is unavailable; retry later');
    }
    this.writes.push(rows);
    return { written: rows.gpu.length + rows.efa.length + rows.events.length, rejected: [] };
  }

  async queryWaste(): Promise<[]> {
    return [];
  }

  async queryWasteBy(): Promise<[]> {
    return [];
  }

  async recentWindows(): Promise<[]> {
    return [];
  }

  async nodeJobMeans(): Promise<[]> {
    return [];
  }

  async lastSeen(): Promise<[]> {
    return [];
  }
}

/** Counts by key, printed as `key=n` sorted by key. */
export class Tally {
  readonly counts = new Map<string, number>();

  add(key: string | number): void {
    this.counts.set(String(key), (this.counts.get(String(key)) ?? 0) + 1);
  }

  get(key: string | number): number {
    return this.counts.get(String(key)) ?? 0;
  }

  toString(): string {
    return [...this.counts]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, n]) => `${k}=${n}`)
      .join(' ');
  }
}
