import { MAX_BODY_DECOMPRESSED_BYTES } from '../../lambdas/contract/constants';
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

/**
 * Smallest record a batch can make, bytes: the 8-byte header plus the shortest contract batch JSON
 * (schema, a 36-character uuid, seq, sent_at, an instance id, type and region, agent version and
 * profiling source, no windows: over 200 characters). Damaged bytes hold at most
 * `bytes / MIN_RECORD_BYTES` batches, the bound the spool skips `seq` by so none is reused.
 */
export const MIN_RECORD_BYTES = 200;

/** The start of a filler record's payload: written over a damaged region so a reopen skips it silently. */
const FILLER_PREFIX = Buffer.from('{"gs_skip":true}', 'utf8');

/**
 * A filler record of exactly `bytes` bytes (header + `{"gs_skip":true}` padded with spaces): written
 * over a damaged region once its loss is counted, so the region is not counted again on the next
 * open. Undefined when `bytes` is too small to hold one.
 *
 * @param bytes - the region's size, bytes
 * @returns the record, or undefined when `bytes < 8 + 16`
 */
export function encodeFiller(bytes: number): Buffer | undefined {
  const payloadBytes = bytes - RECORD_HEADER_BYTES;
  if (payloadBytes < FILLER_PREFIX.length) return undefined;
  const payload = Buffer.alloc(payloadBytes, 0x20);
  FILLER_PREFIX.copy(payload);
  return encodeRecord(payload);
}

/**
 * @param payload - an intact record's payload
 * @returns true when it is a filler written by {@link encodeFiller}
 */
export function isFiller(payload: Buffer): boolean {
  return payload.subarray(0, FILLER_PREFIX.length).equals(FILLER_PREFIX);
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

/** A stretch of a segment between intact records that holds no intact record (damaged bytes). */
export interface DamagedRegion {
  /** Byte offset where the damage starts (the header of the record that failed), ≥ 8. */
  readonly offset: number;
  /** Bytes up to the next intact record, ≥ 1. */
  readonly bytes: number;
}

/** What {@link scanSegment} found. */
export interface SegmentScan {
  /** The intact records, in file order. */
  readonly records: readonly ScannedRecord[];
  /**
   * Damaged stretches followed by an intact record (the scan found the next record's frame and
   * went on): each loses only what it held. Damage with no intact record after it is the `tail`.
   */
  readonly damaged: readonly DamagedRegion[];
  /** Bytes of the file up to the end of the last intact record (or the magic); truncate the file here to repair its tail. 0 when even the magic is incomplete. */
  readonly validBytes: number;
  /** How the file ends. */
  readonly tail: SegmentTail;
}

/** A record payload is batch JSON: its first byte is `{`. */
const JSON_OBJECT_START = 0x7b;

/**
 * The offset of the next intact record at or after `from`: a length in range that fits the file,
 * a payload starting with `{`, and a matching CRC-32. The length test rejects almost every offset
 * inside JSON text (four printable bytes read as a little-endian length exceed 8 MiB), so the
 * search costs about one comparison per byte.
 */
function findNextRecord(data: Buffer, from: number): number | undefined {
  for (let offset = from; offset + RECORD_HEADER_BYTES < data.length; offset++) {
    const length = data.readUInt32LE(offset);
    if (length < 1 || length > MAX_RECORD_PAYLOAD_BYTES) continue;
    const end = offset + RECORD_HEADER_BYTES + length;
    if (end > data.length || data[offset + RECORD_HEADER_BYTES] !== JSON_OBJECT_START) continue;
    const payload = data.subarray(offset + RECORD_HEADER_BYTES, end);
    if (recordCrc(data.subarray(offset, offset + 4), payload) === data.readUInt32LE(offset + 4))
      return offset;
  }
  return undefined;
}

/**
 * Frames a whole segment file into records. A record that fails (bad length or CRC) skips only
 * itself when the next intact record can be found after it (a {@link DamagedRegion}); otherwise the
 * scan stops there and the rest is the tail: `torn` when it is a last record cut short, `corrupt`
 * when damaged bytes follow.
 *
 * @param file - the file's name, for errors
 * @param data - the file's bytes
 * @returns the intact records, the damaged regions between them, how many bytes are valid and how the file ends
 * @throws {SpoolCorruptError} when the file does not start with {@link SEGMENT_MAGIC} (nor is a prefix of it)
 */
export function scanSegment(file: string, data: Buffer): SegmentScan {
  if (data.length < SEGMENT_MAGIC.length) {
    if (!SEGMENT_MAGIC.subarray(0, data.length).equals(data))
      throw new SpoolCorruptError(file, 0, `expected the magic "GSSPOOL1", got ${data.length} other bytes`);
    return { records: [], damaged: [], validBytes: 0, tail: data.length === 0 ? 'clean' : 'torn' };
  }
  if (!data.subarray(0, SEGMENT_MAGIC.length).equals(SEGMENT_MAGIC))
    throw new SpoolCorruptError(
      file,
      0,
      `expected the magic "GSSPOOL1", got ${JSON.stringify(data.subarray(0, 8).toString('latin1'))}`,
    );
  const records: ScannedRecord[] = [];
  const damaged: DamagedRegion[] = [];
  let offset = SEGMENT_MAGIC.length;
  while (offset < data.length) {
    const left = data.length - offset;
    let bad: SegmentTail;
    if (left < RECORD_HEADER_BYTES) bad = 'torn';
    else {
      const length = data.readUInt32LE(offset);
      const bytes = RECORD_HEADER_BYTES + length;
      if (length < 1 || length > MAX_RECORD_PAYLOAD_BYTES) bad = 'corrupt';
      else if (bytes > left) bad = 'torn';
      else {
        const payload = data.subarray(offset + RECORD_HEADER_BYTES, offset + bytes);
        if (recordCrc(data.subarray(offset, offset + 4), payload) === data.readUInt32LE(offset + 4)) {
          records.push({ offset, bytes, payload });
          offset += bytes;
          continue;
        }
        // The last record with a bad CRC is a write cut short (its pages reached the disk out of order).
        bad = bytes === left ? 'torn' : 'corrupt';
      }
    }
    const next = findNextRecord(data, offset + 1);
    if (next === undefined) return { records, damaged, validBytes: offset, tail: bad };
    damaged.push({ offset, bytes: next - offset });
    offset = next;
  }
  return { records, damaged, validBytes: offset, tail: 'clean' };
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
