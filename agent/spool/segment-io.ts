import { join } from 'node:path';
import type { Batch } from '../../lambdas/contract';
import type { AsyncFileHandle } from '../async-fs';
import { mkdir, open, rename, stat, unlink } from '../async-fs';
import { DAMAGED_DIR } from './constants';
import { syncDir } from './durable-file';
import { decodeRecord, encodeFiller, SEGMENT_MAGIC, segmentFileName } from './segment-format';
import type { SpoolEntry } from './spool-entry';

/**
 * The spool's segment files on disk: create one (magic first, durably), append a record
 * (fdatasync'd), read one back, cut or patch bytes in place, set a foreign file aside. What the
 * bytes mean is `segment-format.ts`; what the queue does with them is `spool.ts`.
 */

/** The segment appends go to: open for appending, its size in bytes (what the spool has written). */
export interface ActiveSegment {
  /** Index of the segment file. */
  readonly index: number;
  /** The file, open for appending. */
  readonly handle: AsyncFileHandle;
  /** Bytes in the file the spool counts as written, ≥ the magic's length. */
  size: number;
}

/**
 * Opens an existing segment for appending.
 *
 * @param dir - the spool directory
 * @param index - the segment's index
 * @param size - its valid bytes (the next record goes there)
 * @throws {Error} the fs error
 */
export async function openSegmentForAppend(dir: string, index: number, size: number): Promise<ActiveSegment> {
  const handle = await open(join(dir, segmentFileName(index)), 'a');
  return { index, handle, size };
}

/**
 * Creates a new segment: the file (exclusively), its magic, an fsync of the file and of the
 * directory entry before any record can go in. On failure the file is removed again.
 *
 * @param dir - the spool directory
 * @param index - the new segment's index
 * @throws {Error} the fs error (EEXIST when the file is already there)
 */
export async function createSegment(dir: string, index: number): Promise<ActiveSegment> {
  const handle = await open(join(dir, segmentFileName(index)), 'wx');
  try {
    await handle.write(SEGMENT_MAGIC, 0, SEGMENT_MAGIC.length);
    await handle.sync();
    await syncDir(dir);
  } catch (error) {
    await handle.close();
    await unlinkIfExists(join(dir, segmentFileName(index)));
    throw error;
  }
  return { index, handle, size: SEGMENT_MAGIC.length };
}

/**
 * Writes a whole encoded record at the end of the segment and fdatasyncs it. Does not move
 * `segment.size` (the caller does once it has kept the entry).
 *
 * @throws {Error} the fs error; part of the record may then be in the file (see `undo` in the spool)
 */
export async function appendRecord(segment: ActiveSegment, record: Buffer): Promise<void> {
  let done = 0;
  while (done < record.length) {
    const { bytesWritten } = await segment.handle.write(record, done, record.length - done);
    done += bytesWritten;
  }
  await segment.handle.datasync();
}

/**
 * Reads a queued record back and checks it: length, CRC-32 and the batch id the spool expects.
 *
 * @param dir - the spool directory
 * @param entry - where the record is and which batch it must hold
 * @returns the batch
 * @throws {Error} when the bytes cannot be read or no longer hold that batch intact
 */
export async function readRecordAt(dir: string, entry: SpoolEntry): Promise<Batch> {
  const handle = await open(join(dir, segmentFileName(entry.segment)), 'r');
  let bytes: Buffer;
  try {
    bytes = Buffer.alloc(entry.bytes);
    const { bytesRead } = await handle.read(bytes, 0, entry.bytes, entry.offset);
    if (bytesRead !== entry.bytes) throw new Error(`expected ${entry.bytes} bytes, read ${bytesRead}`);
  } finally {
    await handle.close();
  }
  const payload = decodeRecord(bytes);
  if (!payload) throw new Error('record length or CRC-32 mismatch');
  const batch = JSON.parse(payload.toString('utf8')) as Batch;
  if (batch.batch_id !== entry.batchId)
    throw new Error(`expected batch ${entry.batchId}, read ${batch.batch_id}`);
  return batch;
}

/** Cuts a file to `bytes`, durably (fdatasync). @throws {Error} the fs error */
export async function truncateFile(file: string, bytes: number): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.truncate(bytes);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Writes `bytes` at `offset` of an existing file, durably (fdatasync). @throws {Error} the fs error */
export async function writeAt(file: string, offset: number, bytes: Buffer): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.write(bytes, 0, bytes.length, offset);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/**
 * Overwrites a counted damaged region with one filler record, so a later open does not count it
 * again (left as it is when too small to hold one).
 */
export async function fillDamaged(file: string, offset: number, bytes: number): Promise<void> {
  const filler = encodeFiller(bytes);
  if (filler !== undefined) await writeAt(file, offset, filler);
}

/**
 * Moves a file that is not a spool segment into `<dir>/damaged/` under a unique name, durably.
 *
 * @param dir - the spool directory
 * @param file - the file
 * @param index - its segment index (its name in `damaged/`, `.1`, `.2`… when taken)
 * @returns where it went
 * @throws {Error} the fs error
 */
export async function setAside(dir: string, file: string, index: number): Promise<string> {
  const damaged = join(dir, DAMAGED_DIR);
  await mkdir(damaged, { recursive: true });
  let target = join(damaged, segmentFileName(index));
  for (let n = 1; await exists(target); n++) target = join(damaged, `${segmentFileName(index)}.${n}`);
  await rename(file, target);
  await syncDir(damaged);
  return target;
}

/** Removes a file; a file already gone is no error. @throws {Error} any other fs error */
export async function unlinkIfExists(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
