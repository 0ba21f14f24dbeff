import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AGENT_VERSION } from '../agent/version';

/**
 * The rooms of the code (docs/design.md §2), checked on every import of every source file: a
 * file's path says what it may touch. A failing row names the file, the import and the rule.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_ROOTS = ['agent', 'bin', 'lib', 'lambdas'] as const;

/** A room: files under `prefix`, the repo folders they may import, and the packages they may import. */
interface Room {
  readonly prefix: string;
  /** Repo folders (path prefixes) a relative import may land in. */
  readonly mayImport: readonly string[];
  /** Bare package specifiers allowed (`node:` builtins included); `*` allows any package. */
  readonly packages: readonly string[] | '*';
}

/** Most specific prefix first. */
const ROOMS: readonly Room[] = [
  { prefix: 'lambdas/contract/', mayImport: ['lambdas/contract/'], packages: ['zod'] },
  { prefix: 'lambdas/domain/', mayImport: ['lambdas/domain/', 'lambdas/contract/'], packages: [] },
  // Application services: ports and pure logic only, so one service runs in Lambda, locally and in tests.
  {
    prefix: 'lambdas/app/',
    mayImport: ['lambdas/app/', 'lambdas/domain/', 'lambdas/contract/'],
    packages: [],
  },
  {
    prefix: 'lambdas/adapters/',
    mayImport: ['lambdas/adapters/', 'lambdas/domain/', 'lambdas/contract/'],
    packages: '*',
  },
  {
    prefix: 'lambdas/handlers/',
    mayImport: [
      'lambdas/handlers/',
      'lambdas/app/',
      'lambdas/adapters/',
      'lambdas/domain/',
      'lambdas/contract/',
    ],
    packages: '*',
  },
  { prefix: 'lambdas/local/', mayImport: ['lambdas/'], packages: '*' },
  { prefix: 'agent/', mayImport: ['agent/', 'lambdas/contract/'], packages: '*' },
  // The CDK app names handler entry files by path; it may share the pure contract and domain facts
  // (limits, modes, thresholds), never adapter or handler code.
  { prefix: 'lib/', mayImport: ['lib/', 'lambdas/contract/', 'lambdas/domain/'], packages: '*' },
  { prefix: 'bin/', mayImport: ['bin/', 'lib/', 'lambdas/', 'agent/'], packages: '*' },
];

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) out.push(...sourceFiles(rel));
    else if (/\.(ts|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

/** Every module specifier of a file: static imports and re-exports, dynamic `import()`, `require()`. */
function specifiers(text: string): string[] {
  const out: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm,
    /^\s*import\s+['"]([^'"]+)['"]/gm,
    /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
    /\brequire\(\s*['"]([^'"]+)['"]\s*\)/g,
  ];
  for (const re of patterns) for (const m of text.matchAll(re)) out.push(m[1] as string);
  return out;
}

/** `@scope/name/x` → `@scope/name`; `name/x` → `name`; `node:fs/promises` → `node:fs/promises`. */
function packageName(spec: string): string {
  if (spec.startsWith('node:')) return spec;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

interface Violation {
  readonly file: string;
  readonly spec: string;
  readonly rule: string;
}

function violations(): Violation[] {
  const out: Violation[] = [];
  for (const file of SOURCE_ROOTS.flatMap(sourceFiles)) {
    const room = ROOMS.find((r) => file.startsWith(r.prefix));
    if (!room) continue;
    const text = readFileSync(join(ROOT, file), 'utf8');
    for (const spec of specifiers(text)) {
      if (spec.startsWith('.')) {
        const target = relative(ROOT, resolve(ROOT, dirname(file), spec))
          .split('\\')
          .join('/');
        if (target.startsWith('test/') || target === 'test') {
          out.push({ file, spec, rule: 'production code never imports test code' });
        } else if (!room.mayImport.some((p) => `${target}/`.startsWith(p) || target.startsWith(p))) {
          out.push({ file, spec, rule: `${room.prefix} may import only ${room.mayImport.join(', ')}` });
        }
      } else if (room.packages !== '*' && !room.packages.includes(packageName(spec))) {
        out.push({
          file,
          spec,
          rule: `${room.prefix} may import no package but ${room.packages.join(', ') || '(none)'}`,
        });
      }
    }
  }
  return out;
}

describe('rooms', () => {
  it('every import stays inside what its room may touch', () => {
    // Act
    const found = violations();

    // Assess
    expect(found).toEqual([]);
  });

  it('domain and application code never reads the clock, timers, randomness or the environment', () => {
    // Prepare
    const impure = /Date\.now\(\)|new Date\(\)|Math\.random\(|setTimeout\(|setInterval\(|process\.env/;

    // Act
    const found = [...sourceFiles('lambdas/domain'), ...sourceFiles('lambdas/app')].filter((f) =>
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .some((line) => !/^\s*(\*|\/\/)/.test(line) && impure.test(line)),
    );

    // Assess
    expect(found).toEqual([]);
  });

  it('only the clock modules read the wall clock: every other file takes its time from an injected clock', () => {
    // Prepare: a component that reads the system clock while its caller injected another stamps,
    // ages or drops by two times at once (a spool that aged a test's batches by the real date)
    const clockFiles = ['agent/clock.ts', 'lambdas/adapters/clock.ts'];
    const wallClock = /\bDate\.now\(\)|\bnew Date\(\)/;

    // Act
    const found = SOURCE_ROOTS.flatMap(sourceFiles)
      .filter((f) => !clockFiles.includes(f))
      .flatMap((f) =>
        readFileSync(join(ROOT, f), 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${f}:${i + 1}` }))
          .filter(({ line }) => !/^\s*(\*|\/\/)/.test(line) && wallClock.test(line))
          .map(({ at }) => at),
      );

    // Assess
    expect(found).toEqual([]);
  });

  it.each([
    { file: 'agent/x.ts', spec: '../bin/commands/paths', allowed: false },
    { file: 'agent/x.ts', spec: '../lambdas/domain', allowed: false },
    { file: 'agent/x.ts', spec: '../lambdas/contract', allowed: true },
    { file: 'lambdas/domain/x.ts', spec: '../adapters/sns-alert-sink', allowed: false },
    { file: 'lib/x.ts', spec: '../lambdas/handlers/ingest', allowed: false },
    { file: 'lambdas/app/x.ts', spec: '../domain/ports', allowed: true },
    { file: 'lambdas/app/x.ts', spec: '../adapters/dynamodb-state-store', allowed: false },
    { file: 'lambdas/app/x.ts', spec: '../handlers/log', allowed: false },
    { file: 'lambdas/handlers/x.ts', spec: '../app/process-batch', allowed: true },
  ])('the room table judges $file importing $spec as allowed=$allowed', ({ file, spec, allowed }) => {
    // Prepare
    const room = ROOMS.find((r) => file.startsWith(r.prefix)) as Room;
    const target = relative(ROOT, resolve(ROOT, dirname(file), spec))
      .split('\\')
      .join('/');

    // Act
    const ok = room.mayImport.some((p) => `${target}/`.startsWith(p) || target.startsWith(p));

    // Assess
    expect(ok).toBe(allowed);
  });

  it('finds imports in every form a file can write them', () => {
    // Prepare
    const text = [
      "import { a } from '../a';",
      "import type { B } from '../b';",
      "export * from './c';",
      "import './d';",
      "const e = await import('../e');",
      "const f = require('../f');",
      'import {',
      '  g,',
      "} from '../g';",
    ].join('\n');

    // Act
    const found = specifiers(text).sort();

    // Assess
    expect(found).toEqual(['../a', '../b', '../e', '../f', '../g', './c', './d']);
  });
});

describe('thin Lambda entries', () => {
  /** Most lines of a file in `lambdas/handlers/`: parse the event, wire the adapters, call the app, answer. */
  const MAX_HANDLER_LINES = 200;

  /** The Lambda entry modules: the files of `lambdas/handlers/` that export `handler` (the CDK stack names them). */
  function entryModules(): string[] {
    return sourceFiles('lambdas/handlers').filter((f) =>
      /^export (?:async function|const|function) handler\b/m.test(readFileSync(join(ROOT, f), 'utf8')),
    );
  }

  it(`keeps every file of lambdas/handlers/ at ${MAX_HANDLER_LINES} lines or fewer`, () => {
    // Act
    const long = sourceFiles('lambdas/handlers')
      .map((f) => ({ file: f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > MAX_HANDLER_LINES);

    // Assess
    expect(long).toEqual([]);
  });

  it(`keeps every file of ${SOURCE_ROOTS.join('/, ')}/ at 600 lines or fewer: one concept per file`, () => {
    // Act
    const long = SOURCE_ROOTS.flatMap((root) => sourceFiles(root))
      .map((f) => ({ file: f, lines: readFileSync(join(ROOT, f), 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > 600);

    // Assess
    expect(long).toEqual([]);
  });

  it('finds the three Lambda entries by their handler export', () => {
    // Act
    const entries = entryModules();

    // Assess
    expect(entries).toEqual(
      expect.arrayContaining([
        'lambdas/handlers/fleet-evaluator.ts',
        'lambdas/handlers/ingest.ts',
        'lambdas/handlers/report.ts',
      ]),
    );
  });

  it('no module of the pipeline imports a Lambda entry: shared wiring lives in helper modules', () => {
    // Prepare
    const entries = new Set(entryModules().map((f) => f.replace(/\.ts$/, '')));

    // Act
    const found = sourceFiles('lambdas').flatMap((file) =>
      specifiers(readFileSync(join(ROOT, file), 'utf8'))
        .filter((spec) => spec.startsWith('.'))
        .map((spec) =>
          relative(ROOT, resolve(ROOT, dirname(file), spec))
            .split('\\')
            .join('/')
            .replace(/\.(js|ts)$/, ''),
        )
        .filter((target) => entries.has(target))
        .map((target) => `${file} imports ${target}`),
    );

    // Assess
    expect(found).toEqual([]);
  });
});

describe('the repository stands alone', () => {
  it('no tracked file points at a folder beside the checkout or a path of this machine', () => {
    // Prepare
    const files = [
      ...SOURCE_ROOTS.flatMap(sourceFiles),
      ...sourceFiles('test'),
      'README.md',
      'BENCHMARKS.md',
    ];

    // Act
    const found = files.filter((f) =>
      /\.\.\/shared\b|\/work\/|\/home\/[a-z]/.test(readFileSync(join(ROOT, f), 'utf8')),
    );

    // Assess
    expect(found).toEqual([]);
  });

  it('the agent version is the package version', () => {
    // Act
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

    // Assess
    expect(AGENT_VERSION).toBe(pkg.version);
  });
});

describe('tests leave nothing behind', () => {
  it('every CDK app a test builds synthesizes into a temp folder the test removes (an outdir)', () => {
    // Prepare: an App without `outdir` makes a `cdk.out*` folder in the system temp dir that nothing removes
    const files = sourceFiles('test').filter((f) => f.endsWith('.ts'));

    // Act
    const bare = files.flatMap((f) => {
      const text = readFileSync(join(ROOT, f), 'utf8');
      return [...text.matchAll(/new (?:cdk\.)?App\(([^)]*)\)/g)]
        .filter((m) => !/\boutdir\b/.test(m[1] ?? ''))
        .map((m) => `${f}: ${m[0]}`);
    });

    // Assess
    expect(bare).toEqual([]);
  });
});
