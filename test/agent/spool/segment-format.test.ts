import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { crc32, crc32Js } from '../../../agent/spool/crc32';
import { SpoolCorruptError } from '../../../agent/spool/errors';
import {
  decodeRecord,
  encodeRecord,
  parseSegmentFileName,
  SEGMENT_MAGIC,
  scanSegment,
  segmentFileName,
} from '../../../agent/spool/segment-format';

const A = encodeRecord(Buffer.from('{"seq":1}'));
const B = encodeRecord(Buffer.from('{"seq":2}'));
const C = encodeRecord(Buffer.from('{"seq":3}'));

function flipped(buf: Buffer, at: number): Buffer {
  const copy = Buffer.from(buf);
  copy[at] = (copy[at] ?? 0) ^ 0xff;
  return copy;
}

describe('crc32', () => {
  it.each([
    ['', 0],
    ['123456789', 0xcbf43926],
    ['hello', 907060870],
  ])('gives the IEEE CRC-32 of %j', (text, expected) => {
    // Prepare
    const data = Buffer.from(text);

    // Act
    const results = [crc32(data), crc32Js(data)];

    // Assess
    expect(results).toEqual([expected, expected]);
  });

  it('gives the same value in JavaScript as natively, whole or in parts', () => {
    // Prepare
    const data = randomBytes(10_000);

    // Act
    const js = crc32Js(data.subarray(5000), crc32Js(data.subarray(0, 5000)));

    // Assess
    expect(js).toBe(crc32(data));
  });
});

describe('segment format', () => {
  it('decodes the payload of an encoded record and refuses a changed one', () => {
    // Prepare
    const payload = Buffer.from('{"batch":true}');
    const record = encodeRecord(payload);

    // Act
    const results = [
      decodeRecord(record),
      decodeRecord(flipped(record, 10)),
      decodeRecord(flipped(record, 0)),
    ];

    // Assess
    expect(results).toEqual([payload, undefined, undefined]);
  });

  it('refuses an empty payload', () => {
    // Act / Assess
    expect(() => encodeRecord(Buffer.alloc(0))).toThrow(RangeError);
  });

  it.each([
    {
      name: 'a file with every record whole',
      data: [SEGMENT_MAGIC, A, B, C],
      records: 3,
      valid: 8 + 3 * A.length,
      tail: 'clean',
    },
    { name: 'the magic alone', data: [SEGMENT_MAGIC], records: 0, valid: 8, tail: 'clean' },
    {
      name: 'a header cut short',
      data: [SEGMENT_MAGIC, A, B.subarray(0, 5)],
      records: 1,
      valid: 8 + A.length,
      tail: 'torn',
    },
    {
      name: 'a payload cut short',
      data: [SEGMENT_MAGIC, A, B.subarray(0, 12)],
      records: 1,
      valid: 8 + A.length,
      tail: 'torn',
    },
    {
      name: 'a last record with a bad CRC',
      data: [SEGMENT_MAGIC, A, flipped(B, 12)],
      records: 1,
      valid: 8 + A.length,
      tail: 'torn',
    },
    {
      name: 'a zero-filled tail',
      data: [SEGMENT_MAGIC, A, Buffer.alloc(64)],
      records: 1,
      valid: 8 + A.length,
      tail: 'corrupt',
    },
    {
      name: 'a bad CRC before more records (skips only it)',
      data: [SEGMENT_MAGIC, flipped(A, 12), B, C],
      records: 2,
      valid: 8 + 3 * A.length,
      tail: 'clean',
      damaged: [{ offset: 8, bytes: A.length }],
    },
    {
      name: 'a damaged length before more records (skips only it)',
      data: [SEGMENT_MAGIC, A, flipped(B, 2), C],
      records: 2,
      valid: 8 + 3 * A.length,
      tail: 'clean',
      damaged: [{ offset: 8 + A.length, bytes: A.length }],
    },
    { name: 'a magic cut short', data: [SEGMENT_MAGIC.subarray(0, 3)], records: 0, valid: 0, tail: 'torn' },
    { name: 'an empty file', data: [], records: 0, valid: 0, tail: 'clean' },
  ])('frames $name', ({ data, records, valid, tail, ...rest }) => {
    // Prepare
    const file = Buffer.concat(data);
    const damaged = 'damaged' in rest ? rest.damaged : [];

    // Act
    const scan = scanSegment('x.seg', file);

    // Assess
    expect({
      records: scan.records.length,
      valid: scan.validBytes,
      tail: scan.tail,
      damaged: scan.damaged,
    }).toEqual({ records, valid, tail, damaged });
  });

  it.each([
    ['another magic', Buffer.from('NOTSPOOL and more')],
    ['a short foreign file', Buffer.from('abc')],
  ])('throws SpoolCorruptError for %s', (_name, data) => {
    // Act / Assess
    expect(() => scanSegment('x.seg', data)).toThrow(SpoolCorruptError);
  });

  it.each([
    [0, '000000000000.seg'],
    [42, '000000000042.seg'],
  ])('names segment %i %s and parses the name back', (index, name) => {
    // Act / Assess
    expect([segmentFileName(index), parseSegmentFileName(name)]).toEqual([name, index]);
  });

  it.each(['cursor.json', '12.seg', '000000000001.seg.tmp'])('parses no index from %s', (name) => {
    // Act / Assess
    expect(parseSegmentFileName(name)).toBeUndefined();
  });
});
