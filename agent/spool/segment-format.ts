import { MAX_BODY_DECOMPRESSED_BYTES } from '../../lambdas/contract';
import { crc32 } from './crc32';
import { SpoolCorruptError } from './errors';

/**
 * On-disk format of one spool segment file (`<index>.seg`, index zero-padded to 12 digits):
 *
 * ```
 * segment := magic record*
 * magic   := "GSSPOOL1"                          8 bytes, ASCII (format version 1)
 * record  := length crc payload
 * length  := u32 little-endian, 1..MAX_RECORD_PAYLOAD_BYTES, bytes of payload
 * crc     := u32 little-endian, CRC-32 (IEEE) of the 4 length bytes followed by the payload
 * payload := UTF-8 JSON of one contract batch
 * ```
 *
 * The CRC covers the length too, so a zero-filled or half-written header is never read as a record.
 */
export const SEGMENT_MAGIC: Buffer = Buffer.from('GSSPOOL1', 'ascii');

/** Bytes before a record's payload: length (4) + CRC (4). */
export const RECORD_HEADER_BYTES = 8;

/** Largest record payload, bytes: the API's decompressed body limit (≈ 2.97 MiB); anything larger is refused anyway. */
export const MAX_RECORD_PAYLOAD_BYTES = MAX_BODY_DECOMPRESSED_BYTES;

/**
 * Frames one payload as a record.
 *
 * @param payload - the record's bytes, 1..{@link MAX_RECORD_PAYLOAD_BYTES}
 * @returns header + payload, `payload.length + 8` bytes
 * @throws {RangeError} when the payload is empty or larger than {@link MAX_RECORD_PAYLOAD_BYTES}
 */
export function encodeRecord(payload: Buffer): Buffer {
  if (payload.length < 1 || payload.length > MAX_RECORD_PAYLOAD_BYTES)
    throw new RangeError(
      `Expected a record payload of 1..${MAX_RECORD_PAYLOAD_BYTES} bytes, got ${payload.length} bytes`,
    );
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + payload.length);
  record.writeUInt32LE(payload.length, 0);
  payload.copy(record, RECORD_HEADER_BYTES);
  record.writeUInt32LE(recordCrc(record.subarray(0, 4), payload), 4);
  return record;
}

/**
 * Reads the record that fills `bytes` exactly (as cut out of a segment at a known offset).
 *
 * @param bytes - header + payload
 * @returns the payload, or undefined when the length or CRC does not match
 */
export function decodeRecord(bytes: Buffer): Buffer | undefined {
  if (bytes.length < RECORD_HEADER_BYTES + 1) return undefined;
  const length = bytes.readUInt32LE(0);
  if (length !== bytes.length - RECORD_HEADER_BYTES) return undefined;
  const payload = bytes.subarray(RECORD_HEADER_BYTES);
  return recordCrc(bytes.subarray(0, 4), payload) === bytes.readUInt32LE(4) ? payload : undefined;
}

/** One intact record found by {@link scanSegment}. */
export interface ScannedRecord {
  /** Byte offset of the record's header in the segment, ≥ 8. */
  readonly offset: number;
  /** Header + payload, bytes. */
  readonly bytes: number;
  /** The payload (a view into the scanned buffer). */
  readonly payload: Buffer;
}

/**
 * How a segment ends: `clean` (the last record ends at the end of the file), `torn` (the file ends
 * inside a record or a header: a write cut short by a crash), `corrupt` (a record whose length or CRC
 * is wrong and that is followed by more bytes: damaged data; what follows cannot be framed).
 */
export const SEGMENT_TAILS = ['clean', 'torn', 'corrupt'] as const;
/** Union of {@link SEGMENT_TAILS}. */
export type SegmentTail = (typeof SEGMENT_TAILS)[number];

/** What {@link scanSegment} found. */
export interface SegmentScan {
  /** The intact records, in file order. */
  readonly records: readonly ScannedRecord[];
  /** Bytes of the file that are the magic plus intact records; truncate the file here to repair it. 0 when even the magic is incomplete. */
  readonly validBytes: number;
  /** How the file ends. */
  readonly tail: SegmentTail;
}

/**
 * Frames a whole segment file into records, stopping at the first torn or damaged one.
 *
 * @param file - the file's name, for errors
 * @param data - the file's bytes
 * @returns the intact records, how many bytes are valid and how the file ends
 * @throws {SpoolCorruptError} when the file does not start with {@link SEGMENT_MAGIC} (nor is a prefix of it)
 */
export function scanSegment(file: string, data: Buffer): SegmentScan {
  if (data.length < SEGMENT_MAGIC.length) {
    if (!SEGMENT_MAGIC.subarray(0, data.length).equals(data))
      throw new SpoolCorruptError(file, 0, `expected the magic "GSSPOOL1", got ${data.length} other bytes`);
    return { records: [], validBytes: 0, tail: data.length === 0 ? 'clean' : 'torn' };
  }
  if (!data.subarray(0, SEGMENT_MAGIC.length).equals(SEGMENT_MAGIC))
    throw new SpoolCorruptError(
      file,
      0,
      `expected the magic "GSSPOOL1", got ${JSON.stringify(data.subarray(0, 8).toString('latin1'))}`,
    );
  const records: ScannedRecord[] = [];
  let offset = SEGMENT_MAGIC.length;
  while (offset < data.length) {
    const left = data.length - offset;
    if (left < RECORD_HEADER_BYTES) return { records, validBytes: offset, tail: 'torn' };
    const length = data.readUInt32LE(offset);
    if (length < 1 || length > MAX_RECORD_PAYLOAD_BYTES)
      return { records, validBytes: offset, tail: 'corrupt' };
    const bytes = RECORD_HEADER_BYTES + length;
    if (bytes > left) return { records, validBytes: offset, tail: 'torn' };
    const payload = data.subarray(offset + RECORD_HEADER_BYTES, offset + bytes);
    if (recordCrc(data.subarray(offset, offset + 4), payload) !== data.readUInt32LE(offset + 4))
      // The last record with a bad CRC is a write cut short (its pages reached the disk out of order).
      return { records, validBytes: offset, tail: bytes === left ? 'torn' : 'corrupt' };
    records.push({ offset, bytes, payload });
    offset += bytes;
  }
  return { records, validBytes: offset, tail: 'clean' };
}

function recordCrc(lengthBytes: Buffer, payload: Buffer): number {
  return crc32(payload, crc32(lengthBytes));
}

/**
 * The file name of segment `index`: 12 zero-padded digits and `.seg`, so names sort in index order.
 *
 * @param index - the segment index, integer ≥ 0
 * @returns e.g. `000000000007.seg`
 */
export function segmentFileName(index: number): string {
  return `${String(index).padStart(12, '0')}.seg`;
}

/**
 * The index of a segment file name, or undefined for any other name.
 *
 * @param name - a directory entry
 * @returns the index, integer ≥ 0
 */
export function parseSegmentFileName(name: string): number | undefined {
  const match = /^(\d{12})\.seg$/.exec(name);
  return match ? Number(match[1]) : undefined;
}
