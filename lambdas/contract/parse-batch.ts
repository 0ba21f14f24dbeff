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
import { migComputeSlices, migProfileSlices } from './mig';
import { type Batch, BatchSchema } from './schema';
import { epochMs } from './timestamps';
import { type Accepts, zodAccepts } from './zod-accepts';

/**
 * Validates an already-decoded JSON value against wire contract v1, including the checks that need
 * the server's clock: every timestamp within {@link MAX_PAST_S} in the past and {@link MAX_FUTURE_S}
 * in the future of `now`, window lengths, the GPU count, and the MIG rule: per kind and start, a GPU
 * index has one window for the whole GPU, or one per GPU instance (`gpu_instance_id`, each id once)
 * whose profiles' compute slices sum to at most the GPU's (7, or 4 on an A30). Pure: `now` is passed in.
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
  const batch = validBatch(input);
  checkTimes(batch, now.getTime());
  checkGpuInstances(batch);
  const gpus = new Set(batch.windows.map((w) => w.gpu.index));
  if (gpus.size > MAX_GPUS_PER_BATCH) {
    throw new ContractValidationError(
      'windows',
      `expected at most ${MAX_GPUS_PER_BATCH} GPUs, got ${gpus.size}`,
    );
  }
  return batch;
}

/**
 * Whether zod would take a batch as it is ({@link zodAccepts}): a valid batch, nearly every batch,
 * is accepted without zod's parse (it was a quarter of ingest's CPU); anything else is parsed by
 * zod, whose first issue is the error. Built at the first batch, not at module load (cold start).
 */
let acceptsBatch: Accepts<Batch> | undefined | null = null;

/** The batch as it came, when {@link acceptsBatch} says zod would take it as it is; else zod's parse. */
function validBatch(input: unknown): Batch {
  if (acceptsBatch === null) acceptsBatch = zodAccepts(BatchSchema);
  return acceptsBatch?.(input) ? input : zodBatch(input);
}

/** The batch as zod parses it. @throws {ContractValidationError} naming zod's first issue */
function zodBatch(input: unknown): Batch {
  const result = BatchSchema.safeParse(input);
  if (!result.success) throw toContractError(result.error);
  return result.data;
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

/**
 * Every time of the batch within the past and future bounds of `nowMs`, every window within its
 * kind's length. A batch repeats a handful of window times (48 flush windows of 8 GPUs share 6
 * starts and 6 ends): each is parsed once ({@link epochMs}).
 */
function checkTimes(batch: Batch, nowMs: number): void {
  const oldest = nowMs - MAX_PAST_S * 1000;
  const newest = nowMs + MAX_FUTURE_S * 1000;
  const check = (path: string, iso: string): void => {
    const t = epochMs(iso);
    if (t < oldest)
      throw new ContractValidationError(path, `time ${iso} is more than ${MAX_PAST_S} s in the past`);
    if (t > newest)
      throw new ContractValidationError(path, `time ${iso} is more than ${MAX_FUTURE_S} s in the future`);
  };
  check('sent_at', batch.sent_at);
  batch.windows.forEach((w, i) => {
    check(`windows[${i}].start`, w.start);
    check(`windows[${i}].end`, w.end);
    const lengthS = (epochMs(w.end) - epochMs(w.start)) / 1000;
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

/** Per (kind, start, GPU index): whole-GPU windows, or distinct instances within the GPU's slices, never both. */
function checkGpuInstances(batch: Batch): void {
  // Whole-GPU windows alone are always legal (see below): nothing to group without a GPU instance.
  if (!batch.windows.some((w) => w.gpu_instance_id !== undefined)) return;
  const groups = new Map<string, { whole: boolean; ids: Set<number>; slices: number }>();
  batch.windows.forEach((w, i) => {
    const key = `${w.kind}|${w.start}|${w.gpu.index}`;
    const group = groups.get(key);
    const at = `GPU ${w.gpu.index} has`;
    const when = `${w.kind} window starting ${w.start}`;
    if (w.gpu_instance_id === undefined) {
      // Two whole-GPU windows of one start stay legal, as v1 has always taken them (an agent's
      // count split may repeat one); only a mix with GPU instance windows is refused.
      if (group !== undefined && !group.whole) {
        throw new ContractValidationError(
          `windows[${i}].gpu_instance_id`,
          `${at} GPU instance windows and a whole-GPU ${when}; expected gpu_instance_id on every one`,
        );
      }
      groups.set(key, { whole: true, ids: new Set(), slices: 0 });
      return;
    }
    const g = group ?? { whole: false, ids: new Set<number>(), slices: 0 };
    if (g.whole) {
      throw new ContractValidationError(
        `windows[${i}].gpu_instance_id`,
        `${at} a whole-GPU ${when} and GPU instance windows; expected gpu_instance_id on every one`,
      );
    }
    if (g.ids.has(w.gpu_instance_id)) {
      throw new ContractValidationError(
        `windows[${i}].gpu_instance_id`,
        `${at} two ${w.kind} windows starting ${w.start} for GPU instance ${w.gpu_instance_id}`,
      );
    }
    g.ids.add(w.gpu_instance_id);
    g.slices += migProfileSlices(w.gpu_instance_profile) ?? 0;
    const max = migComputeSlices(w.gpu.name);
    if (g.slices > max) {
      throw new ContractValidationError(
        `windows[${i}].gpu_instance_profile`,
        `${at} GPU instances of ${g.slices} compute slices in one ${when}; a GPU has ${max}`,
      );
    }
    groups.set(key, g);
  });
}
