import { join } from 'node:path';
import type { Batch } from '../../lambdas/contract';
import { mkdir, readdir, readFile, stat } from '../async-fs';
import type { QuarantineReason } from './dead-letter';
import { writeFileAtomic } from './durable-file';
import { unlinkIfExists } from './segment-io';

/**
 * Batches the API refused with 401 or 403 after every credential refresh: expired or rotated
 * credentials, clock skew, an IAM change. They are not the batch's fault, so they are held in
 * `<spool>/held/`, one file each, and resent once a send succeeds again; the folder is bounded by
 * age and bytes as the queue is, and what the bounds drop is counted.
 *
 * File name `<seq>-<atMs>-<windows>-<batch_id>.json` (the facts the bounds and the loss report need,
 * so a listing reads no file); content `{ held_at, reason, batch }`, written durably.
 */

/** A held batch as listed (without reading its file). */
export interface HeldBatch {
  /** Path of its file. */
  readonly file: string;
  /** The batch's `seq`. */
  readonly seq: number;
  /** The batch's `sent_at`, ms since the epoch (what the age bound measures). */
  readonly atMs: number;
  /** Flush windows it carries, ≥ 0. */
  readonly windows: number;
  /** The batch's `batch_id`. */
  readonly batchId: string;
}

const HELD_NAME = /^(\d+)-(\d+)-(\d+)-(.+)\.json$/;

/**
 * Writes a refused batch durably (write-tmp + fsync + rename + fsync of the folder).
 *
 * @param dir - the held folder; created when missing
 * @param batch - the batch
 * @param atMs - its `sent_at`, ms since the epoch
 * @param windows - its flush windows
 * @param reason - the refusal
 * @param now - `held_at`
 * @returns the file's path
 * @throws {Error} the fs error; nothing is then held
 */
export async function writeHeld(
  dir: string,
  batch: Batch,
  atMs: number,
  windows: number,
  reason: QuarantineReason,
  now: Date,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const id = String(batch.batch_id).replace(/[^A-Za-z0-9-]/g, '_');
  const file = join(dir, `${batch.seq}-${Math.max(0, Math.trunc(atMs))}-${windows}-${id}.json`);
  await writeFileAtomic(file, `${JSON.stringify({ held_at: now.toISOString(), reason, batch })}\n`);
  return file;
}

/**
 * The held batches, lowest `seq` first (the order they were built in); other names are ignored.
 *
 * @param dir - the held folder
 * @returns the batches; empty when the folder does not exist
 * @throws {Error} an fs error other than ENOENT
 */
export async function listHeld(dir: string): Promise<HeldBatch[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const held: HeldBatch[] = [];
  for (const name of names) {
    const m = HELD_NAME.exec(name);
    if (!m) continue;
    held.push({
      file: join(dir, name),
      seq: Number(m[1]),
      atMs: Number(m[2]),
      windows: Number(m[3]),
      batchId: m[4] as string,
    });
  }
  return held.sort((a, b) => a.seq - b.seq || a.file.localeCompare(b.file));
}

/**
 * Reads a held batch back.
 *
 * @param held - as listed
 * @returns the batch; undefined when the file no longer holds one (damaged: the caller drops and counts it)
 * @throws {Error} the fs error
 */
export async function readHeld(held: HeldBatch): Promise<Batch | undefined> {
  try {
    const body = JSON.parse(await readFile(held.file, 'utf8')) as { batch?: Batch };
    const batch = body.batch;
    return batch && typeof batch === 'object' && batch.seq === held.seq ? batch : undefined;
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}

/**
 * The held batches past the bounds, oldest first: those older than `cutoffMs`, then the lowest
 * `seq` until the folder's files fit in `maxBytes`.
 *
 * @param held - the listing, lowest seq first
 * @param cutoffMs - batches sent before it are too old, ms since the epoch
 * @param maxBytes - most bytes of held files
 * @returns the batches to drop (and count)
 * @throws {Error} the fs error of a `stat`
 */
export async function heldPastBounds(
  held: readonly HeldBatch[],
  cutoffMs: number,
  maxBytes: number,
): Promise<HeldBatch[]> {
  const out = held.filter((h) => h.atMs < cutoffMs);
  const kept = held.filter((h) => h.atMs >= cutoffMs);
  const sizes = await Promise.all(kept.map(async (h) => (await stat(h.file)).size));
  let total = sizes.reduce((sum, s) => sum + s, 0);
  for (let i = 0; i < kept.length && total > maxBytes; i++) {
    out.push(kept[i] as HeldBatch);
    total -= sizes[i] ?? 0;
  }
  return out;
}

/** Deletes a held batch's file (delivered, dropped or quarantined). @throws {Error} an fs error other than ENOENT */
export function removeHeld(held: HeldBatch): Promise<void> {
  return unlinkIfExists(held.file);
}
