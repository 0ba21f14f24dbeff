import { readdirSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The parts of V8's `.cpuprofile` (written by `node --cpu-prof`) read here; times in µs. */
interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  }[];
  readonly startTime: number;
  /** Node id of each sample, in time order. */
  readonly samples: readonly number[];
  /** µs from the previous sample (the first: from `startTime`). */
  readonly timeDeltas: readonly number[];
}

/** The source map next to a bundled file (`<file>.map`), or undefined when there is none. */
function sourceMapOf(url: string, cache: Map<string, SourceMap | undefined>): SourceMap | undefined {
  if (!cache.has(url)) {
    let map: SourceMap | undefined;
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${fileURLToPath(url)}.map`, 'utf8')));
    } catch {
      map = undefined; // not a file URL, or no map: the frame is named as V8 saw it
    }
    cache.set(url, map);
  }
  return cache.get(url);
}

/**
 * The `n` functions with the most self time in the `.cpuprofile` in `dir`, as Markdown table rows
 * `| name source:line | % |` (% of the busy samples: `(idle)`, `(program)` and `(garbage
 * collector)` frames count as busy except `(idle)`). Only samples taken `fromUs` or later after
 * the profile's start count, so a steady window can leave the start-up out. Frames of a minified
 * bundle are mapped to their sources through the `.map` file next to it.
 *
 * @param dir - the `--cpu-prof-dir` folder (its first `.cpuprofile` is read)
 * @param fromUs - µs after the profile's `startTime` where counting starts, ≥ 0
 * @param n - rows wanted
 * @returns the table rows, most self time first; empty when the window holds no sample
 * @throws {Error} when `dir` holds no `.cpuprofile`
 */
export function readTopFunctions(dir: string, fromUs: number, n: number): string[] {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`Expected a .cpuprofile in ${dir}, got none`);
  const profile = JSON.parse(readFileSync(`${dir}/${file}`, 'utf8')) as CpuProfile;
  const hitsByNode = new Map<number, number>();
  let atUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    atUs += profile.timeDeltas[i] ?? 0;
    const id = profile.samples[i];
    if (atUs >= fromUs && id !== undefined) hitsByNode.set(id, (hitsByNode.get(id) ?? 0) + 1);
  }
  const maps = new Map<string, SourceMap | undefined>();
  const self = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const hits = hitsByNode.get(node.id) ?? 0;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (hits === 0 || functionName === '(idle)') continue;
    total += hits;
    let name = functionName || '(anonymous)';
    let where = url ? `${url.split('/').slice(-2).join('/')}:${lineNumber + 1}` : '';
    const entry = (url ? sourceMapOf(url, maps)?.findEntry(lineNumber, columnNumber) : undefined) as
      | { originalSource?: string; originalLine: number; name?: string }
      | undefined;
    if (entry?.originalSource) {
      const source = entry.originalSource.split('/').slice(-2).join('/');
      where = `${source}:${entry.originalLine + 1}`;
      if (entry.name) name = entry.name;
    }
    const key = `${name}${where ? ` ${where}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + hits);
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([key, hits]) => `| ${key.replace(/\|/g, '\\|')} | ${((hits / Math.max(1, total)) * 100).toFixed(1)} |`,
    );
}
