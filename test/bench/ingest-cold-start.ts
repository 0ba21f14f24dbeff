/**
 * Cold start of the ingest Lambda (targets in BENCHMARKS.md): bundles the handler exactly as the stack does
 * (`INGEST_BUNDLING`, and the split modules built next to `index.js`), then loads `index.js` in
 * fresh Node processes with the Lambda's `NODE_OPTIONS` (`--enable-source-maps`) and reports module
 * init (wall and CPU time of the `require`) and RSS after it, against the targets; and what the
 * first batch of a new instance adds when it loads the split modules it needs: the Athena store's
 * (`make-athena-store.js`, the default store, on the first write) and `make-instance-apis.js` (the
 * first instance lookup). The Timestream store's and SNS's modules are not loaded by such a batch.
 *
 * Run: `npx tsx test/bench/ingest-cold-start.ts [--runs 7]` (part of `npm run bench`).
 */
import { execFileSync, execSync } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { DEFAULT_INGEST_ENTRY } from '../../lib/gpu-sentinel-stack';
import { INGEST_SPLIT_MODULES, splitModuleCommands } from '../../lib/ingest-function';
import { ingestEsbuildOptions } from '../lib/ingest-esbuild';

/** The split modules the first batch of a new instance loads (Athena store, no alert). */
const FIRST_BATCH_MODULES = ['make-athena-store.js', 'make-instance-apis.js'];

/** Module init target, ms. */
const TARGET_INIT_MS = 150;
/** RSS after module init target, MB (10^6 bytes). */
const TARGET_RSS_MB = 80;

const runsAt = process.argv.indexOf('--runs');
const runs = runsAt === -1 ? 7 : Number(process.argv[runsAt + 1]);
const root = join(import.meta.dirname, '..', '..');

/** What one fresh process measures: `require` of the bundle, then `import()` of each split module. */
const PROBE = `
const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
require(process.argv[1]);
const c1 = process.cpuUsage(c0), t1 = process.hrtime.bigint(), rss = process.memoryUsage().rss;
Promise.all(process.argv.slice(2).map((f) => import(f))).then(() => {
  const c2 = process.cpuUsage(c0), t2 = process.hrtime.bigint();
  console.log(JSON.stringify({
    initMs: Number(t1 - t0) / 1e6, initCpuMs: (c1.user + c1.system) / 1000, rssMb: rss / 1e6,
    splitMs: Number(t2 - t1) / 1e6, splitCpuMs: (c2.user + c2.system - c1.user - c1.system) / 1000,
    rssAfterSplitMb: process.memoryUsage().rss / 1e6,
  }));
});`;

interface Probe {
  readonly initMs: number;
  readonly initCpuMs: number;
  readonly rssMb: number;
  readonly splitMs: number;
  readonly splitCpuMs: number;
  readonly rssAfterSplitMb: number;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-ingest-cold-'));
try {
  await build({
    ...ingestEsbuildOptions(),
    entryPoints: [DEFAULT_INGEST_ENTRY],
    outfile: join(dir, 'index.js'),
  });
  // The split modules, with the very commands the stack's bundling hook runs.
  for (const command of splitModuleCommands(root, dir)) execSync(command, { cwd: root, stdio: 'pipe' });
  const sizes = await Promise.all(
    ['index.js', 'index.js.map', ...INGEST_SPLIT_MODULES.map((m) => m.outfile)].map(
      async (f) => `${f} ${((await stat(join(dir, f))).size / 1e6).toFixed(2)} MB`,
    ),
  );
  const probes: Probe[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(
      process.execPath,
      [
        '--enable-source-maps',
        '-e',
        PROBE,
        join(dir, 'index.js'),
        ...FIRST_BATCH_MODULES.map((f) => join(dir, f)),
      ],
      { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } },
    );
    probes.push(JSON.parse(out) as Probe);
  }
  const initMs = median(probes.map((p) => p.initMs));
  const initCpuMs = median(probes.map((p) => p.initCpuMs));
  const rssMb = median(probes.map((p) => p.rssMb));
  const verdict = (ok: boolean): string => (ok ? 'meets' : 'MISSES');
  console.log(`ingest bundle (${sizes.join(', ')}), ${runs} fresh processes, Node ${process.version}`);
  console.log(
    `module init: ${initMs.toFixed(0)} ms wall, ${initCpuMs.toFixed(0)} ms CPU (median) — ${verdict(initCpuMs <= TARGET_INIT_MS)} ≤ ${TARGET_INIT_MS} ms`,
  );
  console.log(
    `RSS after init: ${rssMb.toFixed(1)} MB (median) — ${verdict(rssMb <= TARGET_RSS_MB)} ≤ ${TARGET_RSS_MB} MB`,
  );
  console.log(
    `first batch of a new instance loads ${FIRST_BATCH_MODULES.join(' + ')}: +${median(probes.map((p) => p.splitMs)).toFixed(0)} ms wall, +${median(probes.map((p) => p.splitCpuMs)).toFixed(0)} ms CPU, RSS ${median(probes.map((p) => p.rssAfterSplitMb)).toFixed(1)} MB`,
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
