import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Repository root, from this file's place in `test/`. */
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The documents a reader follows links through: the front page, the manual, the contributors' files. */
const DOCS = [
  'README.md',
  'BENCHMARKS.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/**
 * GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped, spaces to `-`
 * (the slugger GitHub renders Markdown with), with `-1`, `-2` … for repeats.
 */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const base = (heading[1] ?? '')
      .replace(/`|\*\*|\[|\]\([^)]*\)/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Relative links `[text](target)` outside code fences and inline code, with their line numbers. */
function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, i) => {
    if (text.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    for (const m of text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] ?? '';
      if (!/^[a-z]+:/i.test(target)) links.push({ target, line: i + 1 });
    }
  });
  return links;
}

describe('documentation links', () => {
  it.each(DOCS)('every relative link and anchor of %s resolves in the repository', (doc) => {
    // Prepare
    const markdown = readFileSync(join(ROOT, doc), 'utf8');

    // Act
    const broken = linksOf(markdown).flatMap(({ target, line }) => {
      const [path, anchor] = target.split('#') as [string, string | undefined];
      const file = path === '' ? join(ROOT, doc) : join(dirname(join(ROOT, doc)), decodeURI(path));
      if (!existsSync(file)) return [`${doc}:${line}: ${target} (no file ${relative(ROOT, file)})`];
      if (anchor === undefined || !file.endsWith('.md')) return [];
      return anchorsOf(readFileSync(file, 'utf8')).has(anchor)
        ? []
        : [`${doc}:${line}: ${target} (no heading #${anchor} in ${relative(ROOT, file)})`];
    });

    // Assess
    expect(broken).toEqual([]);
  });

  it('README.md links every document of docs/, so none is found only by browsing the tree', () => {
    // Prepare
    const linked = new Set(
      linksOf(readFileSync(join(ROOT, 'README.md'), 'utf8')).map((l) => l.target.split('#')[0]),
    );

    // Assess
    expect(DOCS.filter((d) => d.startsWith('docs/') && !linked.has(d))).toEqual([]);
  });
});
