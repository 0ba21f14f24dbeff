import { dirname } from 'node:path';
import { open } from '../async-fs';
import { crc32 } from './crc32';
import { syncDir } from './durable-file';

/**
 * The spool's durable high-water mark (`mark`): where the last acknowledged append ended and the
 * highest `seq` ever appended. It is written in place and fdatasync'd after each append's record,
 * before `append` resolves, so at any crash every record an `append` acknowledged lies before it.
 * Recovery reads it to tell apart a torn tail the agent was writing when it died (bytes after the
 * mark: never acknowledged, no loss) from damage to records that were durably written (bytes before
 * the mark that no longer read back: counted in `data_dropped`), and starts `seq` above it so no
 * number is used twice.
 *
 * File layout: two slots of {@link MARK_SLOT_BYTES} bytes at offsets 0 and {@link MARK_SLOT_STRIDE};
 * generation `g` goes to slot `g % 2`, so a write cut short leaves the other slot (the previous
 * mark) intact. A slot:
 *
 * ```
 * magic      "GSMARK01"   8 bytes
 * generation f64 LE       integer ≥ 1, +1 per write
 * segment    f64 LE       index of the segment the last acknowledged record is in, ≥ 0
 * bytes      f64 LE       end of that record in the segment, bytes ≥ 0 (0: no record there)
 * lastSeq    f64 LE       highest `seq` appended (acknowledged) to the spool, ≥ 0
 * firstSeq   f64 LE       a lower bound of every `seq` in `segment`, ≥ 0
 * windows    f64 LE       flush windows of the last acknowledged batch, ≥ 0
 * crc        u32 LE       CRC-32 of the 56 bytes before it
 * ```
 */

/** The high-water mark of acknowledged appends. */
export interface AppendMark {
  /** Index of the segment holding the last acknowledged record, ≥ 0. */
  readonly segment: number;
  /** Byte offset where that record ends (the segment's durable size), ≥ 8; 0 when the spool restated the mark with no segment left. */
  readonly bytes: number;
  /** Highest `seq` ever acknowledged by `append` (or skipped by recovery), ≥ 0. */
  readonly lastSeq: number;
  /** Every record of `segment` has a `seq` ≥ this, ≥ 0 (the first appended to it). */
  readonly firstSeq: number;
  /** Flush windows of the last acknowledged batch (one per GPU), ≥ 0: what each lost batch is counted as when no intact neighbour is left. */
  readonly windows: number;
}

const MARK_MAGIC = Buffer.from('GSMARK01', 'ascii');

/** Bytes of one mark slot: magic 8 + 6 numbers × 8 + CRC 4. */
export const MARK_SLOT_BYTES = 60;

/** Offset of the second slot, bytes: a disk sector apart, so one torn sector write spoils one slot only. */
export const MARK_SLOT_STRIDE = 512;

/**
 * Reads the newest intact slot of the mark file.
 *
 * @param file - path of the mark file
 * @returns the mark and its generation; undefined when the file is missing or no slot is intact
 * @throws {Error} an fs error other than ENOENT
 */
export async function readAppendMark(
  file: string,
): Promise<{ readonly mark: AppendMark; readonly generation: number } | undefined> {
  let data: Buffer;
  try {
    const handle = await open(file, 'r');
    try {
      data = Buffer.alloc(MARK_SLOT_STRIDE + MARK_SLOT_BYTES);
      const { bytesRead } = await handle.read(data, 0, data.length, 0);
      data = data.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let best: { mark: AppendMark; generation: number } | undefined;
  for (const at of [0, MARK_SLOT_STRIDE]) {
    const slot = decodeSlot(data.subarray(at, at + MARK_SLOT_BYTES));
    if (slot && (best === undefined || slot.generation > best.generation)) best = slot;
  }
  return best;
}

/**
 * The mark file, open for in-place writes; one per spool.
 */
export class AppendMarkFile {
  private generation: number;

  private constructor(
    private readonly handle: Awaited<ReturnType<typeof open>>,
    generation: number,
  ) {
    this.generation = generation;
  }

  /**
   * Opens (or creates) the mark file for writing.
   *
   * @param file - path of the mark file
   * @param generation - the generation read at open (0 when none): the next write uses the one after
   * @returns the open file; a new one's directory entry is fsync'd
   * @throws {Error} the fs error
   */
  static async open(file: string, generation: number): Promise<AppendMarkFile> {
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(file, 'r+');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      handle = await open(file, 'w+');
      await syncDir(dirname(file));
    }
    return new AppendMarkFile(handle, generation);
  }

  /**
   * Writes the mark to the next slot and fdatasyncs it.
   *
   * @param mark - the new mark
   * @throws {Error} the fs error; the previous mark then stays in the other slot
   */
  async write(mark: AppendMark): Promise<void> {
    const generation = this.generation + 1;
    const slot = encodeSlot(mark, generation);
    await this.handle.write(slot, 0, slot.length, (generation % 2) * MARK_SLOT_STRIDE);
    await this.handle.datasync();
    this.generation = generation;
  }

  /** Closes the file. @throws {Error} the fs error */
  close(): Promise<void> {
    return this.handle.close();
  }
}

function encodeSlot(mark: AppendMark, generation: number): Buffer {
  const slot = Buffer.alloc(MARK_SLOT_BYTES);
  MARK_MAGIC.copy(slot, 0);
  [generation, mark.segment, mark.bytes, mark.lastSeq, mark.firstSeq, mark.windows].forEach((n, i) => {
    slot.writeDoubleLE(n, 8 + i * 8);
  });
  slot.writeUInt32LE(crc32(slot.subarray(0, MARK_SLOT_BYTES - 4)), MARK_SLOT_BYTES - 4);
  return slot;
}

function decodeSlot(slot: Buffer): { mark: AppendMark; generation: number } | undefined {
  if (slot.length < MARK_SLOT_BYTES || !slot.subarray(0, 8).equals(MARK_MAGIC)) return undefined;
  if (crc32(slot.subarray(0, MARK_SLOT_BYTES - 4)) !== slot.readUInt32LE(MARK_SLOT_BYTES - 4))
    return undefined;
  const numbers = [0, 1, 2, 3, 4, 5].map((i) => slot.readDoubleLE(8 + i * 8));
  if (!numbers.every((n) => Number.isSafeInteger(n) && n >= 0)) return undefined;
  const [generation, segment, bytes, lastSeq, firstSeq, windows] = numbers as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { mark: { segment, bytes, lastSeq, firstSeq, windows }, generation };
}
