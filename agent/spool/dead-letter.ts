import { join } from 'node:path';
import type { Batch } from '../../lambdas/contract';
import { mkdir, readdir } from '../async-fs';
import { writeFileAtomic } from './durable-file';
import { unlinkIfExists } from './segment-io';

/**
 * The spool's dead letters: batches the API refused (4xx), each saved with the refusal to
 * `rejected/<seq>-<batch_id>.json` for an operator, never retried; the folder is bounded.
 */

/** Why the API refused a batch, saved next to it in `rejected/`. */
export interface QuarantineReason {
  /** What happened, e.g. the `SendRejectedError` message. */
  readonly message: string;
  /** HTTP status of the refusal (400, 403, 413, …). */
  readonly status?: number;
  /** The API's `error`. */
  readonly error?: string;
  /** The API's `path` of the first bad field. */
  readonly path?: string;
}

/** Where and how {@link writeDeadLetter} writes. */
export interface DeadLetterOptions {
  /** The quarantine folder (`<spool>/rejected`); created when missing. */
  readonly dir: string;
  /** Most files kept, ≥ 1: past it the lowest `seq` are deleted. */
  readonly maxFiles: number;
  /** `rejected_at` of the file. */
  readonly now: Date;
}

/**
 * Writes a refused batch durably (write-tmp + fsync + rename) as
 * `{ rejected_at, reason, batch }`, then deletes the lowest-`seq` files past `maxFiles`.
 *
 * @param batch - the refused batch
 * @param reason - the API's refusal
 * @param options - folder, bound, time
 * @returns the file's path
 * @throws {Error} the fs error
 */
export async function writeDeadLetter(
  batch: Batch,
  reason: QuarantineReason,
  options: DeadLetterOptions,
): Promise<string> {
  await mkdir(options.dir, { recursive: true });
  const id = String(batch.batch_id).replace(/[^A-Za-z0-9-]/g, '_');
  const file = join(options.dir, `${batch.seq}-${id}.json`);
  const body = { rejected_at: options.now.toISOString(), reason, batch };
  await writeFileAtomic(file, `${JSON.stringify(body, null, 2)}\n`);
  const kept = (await readdir(options.dir))
    .filter((name) => /^\d+-.*\.json$/.test(name))
    .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10) || a.localeCompare(b));
  for (const name of kept.slice(0, Math.max(0, kept.length - options.maxFiles)))
    await unlinkIfExists(join(options.dir, name));
  return file;
}
