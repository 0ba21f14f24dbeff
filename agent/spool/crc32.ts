import * as zlib from 'node:zlib';

/** CRC-32 lookup table (IEEE 802.3 polynomial 0xEDB88320, reflected), built once. */
const TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * CRC-32 (IEEE 802.3, the one of gzip and PNG) computed in JavaScript. The fallback of
 * {@link crc32} on Node.js < 20.15, where `zlib.crc32` does not exist.
 *
 * @param data - the bytes
 * @param value - a running CRC to continue from, 0..2^32-1. @default 0
 * @returns the CRC, an unsigned 32-bit integer
 */
export function crc32Js(data: Uint8Array, value = 0): number {
  let c = (value ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) c = TABLE[(c ^ data[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** `zlib.crc32` where the running Node.js has it (≥ 20.15, native, ~10× faster); absent otherwise. */
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

/**
 * CRC-32 (IEEE 802.3) of `data`: `zlib.crc32` when the running Node.js has it, else {@link crc32Js}.
 * Both give the same value.
 *
 * @param data - the bytes
 * @param value - a running CRC to continue from, 0..2^32-1. @default 0
 * @returns the CRC, an unsigned 32-bit integer
 */
export function crc32(data: Uint8Array, value = 0): number {
  return nativeCrc32 ? nativeCrc32(data, value) >>> 0 : crc32Js(data, value);
}
