import { SNS_MAX_SUBJECT_CHARS } from './constants';

const REPLACEMENTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/…/g, '...'],
  [/[–—]/g, '-'],
  [/≥/g, '>='],
  [/≤/g, '<='],
  [/×/g, 'x'],
  [/°/g, ' deg '],
  [/[‘’]/g, "'"],
  [/[“”]/g, '"'],
  [/→/g, '->'],
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
