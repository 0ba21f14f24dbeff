import type { z } from 'zod';
import {
  MAX_FLUSH_WINDOW_S,
  MAX_FUTURE_S,
  MAX_GPUS_PER_BATCH,
  MAX_HORIZON_WINDOW_S,
  MAX_PAST_S,
  SCHEMA_V1,
} from './constants';
import { ContractValidationError, formatPath } from './errors';
import { type Batch, BatchSchema } from './schema';

/**
 * Validates an already-decoded JSON value against wire contract v1, including the checks that need
 * the server's clock: every timestamp within {@link MAX_PAST_S} in the past and {@link MAX_FUTURE_S}
 * in the future of `now`, window lengths, and the GPU count. Pure: `now` is passed in.
 *
 * @param input - the JSON value of the request body (any shape)
 * @param now - the server's clock
 * @returns the batch, typed
 * @throws {ContractValidationError} naming the first bad field, when anything is wrong
 * @example
 * const batch = parseBatch(JSON.parse(body), new Date());
 */
export function parseBatch(input: unknown, now: Date): Batch {
  if (typeof input === 'object' && input !== null && 'schema' in input) {
    const schema = (input as { schema: unknown }).schema;
    if (schema !== SCHEMA_V1) {
      throw new ContractValidationError(
        'schema',
        `unknown schema version ${JSON.stringify(schema)}; this API accepts "${SCHEMA_V1}"`,
      );
    }
  }
  const result = BatchSchema.safeParse(input);
  if (!result.success) throw toContractError(result.error);
  const batch = result.data;
  checkTimes(batch, now.getTime());
  const gpus = new Set(batch.windows.map((w) => w.gpu.index));
  if (gpus.size > MAX_GPUS_PER_BATCH) {
    throw new ContractValidationError(
      'windows',
      `expected at most ${MAX_GPUS_PER_BATCH} GPUs, got ${gpus.size}`,
    );
  }
  return batch;
}

function toContractError(error: z.ZodError): ContractValidationError {
  const issue = error.issues[0];
  if (!issue) return new ContractValidationError('(root)', 'invalid batch', { cause: error });
  let path = formatPath(issue.path);
  let message = issue.message;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] ?? '';
    path = path === '(root)' ? key : `${path}.${key}`;
    message = `unknown field "${key}"`;
  }
  return new ContractValidationError(path, message, { cause: error });
}

function checkTimes(batch: Batch, nowMs: number): void {
  const oldest = nowMs - MAX_PAST_S * 1000;
  const newest = nowMs + MAX_FUTURE_S * 1000;
  const check = (path: string, iso: string): void => {
    const t = Date.parse(iso);
    if (t < oldest)
      throw new ContractValidationError(path, `time ${iso} is more than ${MAX_PAST_S} s in the past`);
    if (t > newest)
      throw new ContractValidationError(path, `time ${iso} is more than ${MAX_FUTURE_S} s in the future`);
  };
  check('sent_at', batch.sent_at);
  batch.windows.forEach((w, i) => {
    check(`windows[${i}].start`, w.start);
    check(`windows[${i}].end`, w.end);
    const lengthS = (Date.parse(w.end) - Date.parse(w.start)) / 1000;
    const max = w.kind === 'flush' ? MAX_FLUSH_WINDOW_S : MAX_HORIZON_WINDOW_S;
    if (lengthS > max) {
      throw new ContractValidationError(
        `windows[${i}].end`,
        `expected a ${w.kind} window of at most ${max} s, got ${lengthS} s`,
      );
    }
  });
  batch.efa?.forEach((e, i) => {
    check(`efa[${i}].start`, e.start);
    check(`efa[${i}].end`, e.end);
  });
  batch.events?.forEach((e, i) => {
    check(`events[${i}].at`, e.at);
  });
}
