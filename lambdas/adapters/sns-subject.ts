import { SNS_MAX_SUBJECT_CHARS } from './constants';

/**
 * Symbols spelled out in ASCII. Written as `\u` escapes so the bundled Lambda stays pure ASCII: one
 * non-ASCII character in a script makes V8 keep the whole source two bytes a character (+1.1 MB of
 * heap for the ingest bundle, a test checks it).
 */
const REPLACEMENTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/\u2026/g, '...'], // …
  [/[\u2013\u2014]/g, '-'], // – —
  [/\u2265/g, '>='], // ≥
  [/\u2264/g, '<='], // ≤
  [/\u00d7/g, 'x'], // ×
  [/\u00b0/g, ' deg '], // °
  [/[\u2018\u2019]/g, "'"], // ‘ ’
  [/[\u201c\u201d]/g, '"'], // “ ”
  [/\u2192/g, '->'], // →
];

/**
 * Makes an SNS `Subject`: printable ASCII only (SNS rejects control characters, line breaks and
 * non-ASCII), common symbols spelled out (`≥` → `>=`, `…` → `...`), accents dropped, whitespace
 * collapsed, at most 100 characters (cut with `...`).
 *
 * @param subject - the human subject, any text
 * @param fallback - used when nothing printable is left
 * @default fallback `'gpu-sentinel'`
 * @returns a subject SNS accepts, 1–100 printable ASCII characters
 */
export function toSnsSubject(subject: string, fallback = 'gpu-sentinel'): string {
  let s = subject;
  for (const [from, to] of REPLACEMENTS) s = s.replace(from, to);
  s = s
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '')
    .replace(/ {2,}/g, ' ')
    .trim();
  if (s === '') s = fallback;
  if (s.length > SNS_MAX_SUBJECT_CHARS) s = `${s.slice(0, SNS_MAX_SUBJECT_CHARS - 3).trimEnd()}...`;
  return s;
}
