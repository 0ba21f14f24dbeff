import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';
import { AgentError } from '../errors';
import { AGENT_VERSION } from '../version';

/** Repository root, from this file's place in `agent/packaging/`. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** CPU architectures the bundle is built for (EC2 GPU instances: x64; Graviton g5g: arm64). */
export const AGENT_BUNDLE_ARCHES = ['x64', 'arm64'] as const;
/** Union of {@link AGENT_BUNDLE_ARCHES}. */
export type AgentBundleArch = (typeof AGENT_BUNDLE_ARCHES)[number];

/** Name of the bundled agent file inside the output folder. */
export const AGENT_BUNDLE_FILE = 'gpu-sentinel-agent.mjs';

/**
 * Folder of the ESM chunks next to {@link AGENT_BUNDLE_FILE}: code reached only through a dynamic
 * `import()` (the credential sources but the one a host uses) lives there and is read only when used.
 */
export const AGENT_BUNDLE_CHUNKS_DIR = 'chunks';

/** Files of `agent/packaging/` shipped next to the bundle, for install.sh to lay down. */
export const SHIPPED_FILES = [
  'install.sh',
  'install-common.sh',
  'gpu-sentinel-agent.service',
  'agent.sample.json',
  // dcgm-exporter for A100 hosts (no GPM): install-dcgm-exporter.sh lays down the other two.
  'install-dcgm-exporter.sh',
  'dcgm-exporter.service',
  'dcgm-counters.csv',
] as const;

/**
 * Modules the agent's libraries load at start but the agent never calls, replaced in the bundle by
 * a stub that throws if it ever is (each keeps a Node built-in out of memory; measured together:
 * 0.65 MB of RSS, BENCHMARKS.md):
 * - `thread-stream`, loaded by pino for its worker-thread transports (`pino.transport()`): it
 *   pulls in `node:worker_threads`; the agent logs with `pino.destination(2)` (stderr, journald);
 * - `worker_threads` as pino loads it, only to read `isMainThread` (an async destination is then
 *   flushed at exit): the agent is its process's main thread, so the stub says `true`;
 * - `node:child_process` as commander loads it, for git-style executable subcommands
 *   (`.command(name, description)` run as a separate program); the agent's commands are actions;
 * - `assert` as sonic-boom (pino's destination) loads it, for one argument check (`assert(typeof
 *   sonic.fd === 'number', …)` after its file opens): the stub throws a plain `Error` with the same
 *   message where Node's would throw an `AssertionError`. Node's `assert` loads its diff and
 *   call-tracker modules: 0.4 MiB of peak RSS on Node.js 24 (BENCHMARKS.md, 2026-11-28 "the
 *   built-in modules the agent loads").
 *
 * Keyed by the module specifier; the value is the package whose import is stubbed (an import of the
 * same module from anywhere else is bundled as usual).
 */
export const AGENT_BUNDLE_STUBS: Readonly<Record<string, { importer: RegExp; contents: string }>> = {
  'thread-stream': {
    importer: /node_modules[\\/]pino[\\/]/,
    contents:
      "module.exports = class ThreadStream { constructor() { throw new Error('pino transports are not in the gpu-sentinel agent bundle: it logs JSON lines to stderr (pino.destination(2))'); } };",
  },
  worker_threads: {
    importer: /node_modules[\\/]pino[\\/]/,
    contents: 'exports.isMainThread = true;',
  },
  assert: {
    importer: /node_modules[\\/]sonic-boom[\\/]/,
    contents:
      'module.exports = function assert(value, message) { if (!value) throw new Error(message ?? "assertion failed"); };',
  },
  'node:child_process': {
    importer: /node_modules[\\/]commander[\\/]/,
    contents:
      "exports.spawn = () => { throw new Error('executable subcommands are not in the gpu-sentinel agent bundle'); };",
  },
};

/** The esbuild plugin that swaps {@link AGENT_BUNDLE_STUBS} in (the ESM bundle's and the single executable's). */
export function stubPlugin(): Plugin {
  const names = Object.keys(AGENT_BUNDLE_STUBS).map((n) => n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return {
    name: 'gpu-sentinel-agent-stubs',
    setup(b) {
      b.onResolve({ filter: new RegExp(`^(${names.join('|')})$`) }, (args) => {
        const stub = AGENT_BUNDLE_STUBS[args.path];
        if (!stub?.importer.test(args.importer)) return undefined;
        return { path: args.path, namespace: 'gpu-sentinel-stub' };
      });
      b.onLoad({ filter: /.*/, namespace: 'gpu-sentinel-stub' }, (args) => ({
        contents: AGENT_BUNDLE_STUBS[args.path]?.contents ?? '',
        loader: 'js',
      }));
    },
  };
}

/**
 * Node built-ins the agent's libraries import when their module is evaluated but call only on paths
 * a host's agent does not take in its steady state; the bundles load each on the first use of one of
 * its exports instead. `node:fs/promises`: the AWS SDK's shared-config loader (`@smithy/core`'s
 * `shared-ini-file-loader`, in the chunk every credential source shares) reads `~/.aws/config` with
 * it, which an agent signing with environment keys, IMDS or a container's credentials never does.
 * On Node.js 24 the module loads `readline`, the REPL's history, `fs.watch` and `fs.Dir` with it:
 * 0.8 MiB of the single executable's peak RSS, with the agent's own and koffi's imports of it
 * (BENCHMARKS.md, 2026-11-28 "the built-in modules the agent loads"). The agent's own code uses
 * `agent/async-fs.ts` instead.
 */
export const LAZY_BUILTINS = ['fs/promises'] as const;

/**
 * The esbuild plugin that swaps each of {@link LAZY_BUILTINS} for a module of getters, one per
 * export (the names the building Node.js's module has), each loading the built-in on first read.
 * esbuild's interop reads property descriptors only, so importing the module loads nothing.
 */
export function lazyBuiltinsPlugin(): Plugin {
  const require = createRequire(import.meta.url);
  return {
    name: 'gpu-sentinel-lazy-builtins',
    setup(b) {
      b.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
        const name = args.path.replace(/^node:/, '');
        if (!(LAZY_BUILTINS as readonly string[]).includes(name)) return undefined;
        // The getters' own `require` of the built-in: Node's, at run time.
        if (args.namespace === 'gpu-sentinel-lazy-builtin') return { path: args.path, external: true };
        return { path: name, namespace: 'gpu-sentinel-lazy-builtin' };
      });
      b.onLoad({ filter: /.*/, namespace: 'gpu-sentinel-lazy-builtin' }, (args) => {
        const id = JSON.stringify(`node:${args.path}`);
        const names = Object.keys(require(`node:${args.path}`) as object);
        return {
          contents: [
            'let loaded;',
            `for (const name of ${JSON.stringify(names)})`,
            `  Object.defineProperty(exports, name, { enumerable: true, get: () => (loaded ??= require(${id}))[name] });`,
          ].join('\n'),
          loader: 'js',
        };
      });
    },
  };
}

/**
 * The esbuild plugin that loads every Node built-in an ES module of the bundle imports through the
 * banner's CommonJS `require`, as a CommonJS bundle would. On Node.js 22 and later an ESM `import`
 * of a built-in builds its namespace by reading every export, which runs lazy getters:
 * `node:http`'s (`WebSocket`, `EventSource`) load undici and `worker_threads`; `require` returns
 * the exports object untouched. The SDK's ESM builds import built-ins (the IMDS credential provider,
 * which every EC2 host loads, imports `node:http`). Each built-in becomes one small CommonJS module,
 * `module.exports = require('node:<name>')`, whose values esbuild's interop reads only where they
 * are used. (It still reads each export's descriptor, and `node:util`'s lazy `setTraceSigInt` loads
 * `worker_threads` on that: only the `credential_process` chunk imports `node:util`, read when a
 * profile uses one.)
 */
function builtinsThroughRequirePlugin(): Plugin {
  return {
    name: 'gpu-sentinel-builtins-through-require',
    setup(b) {
      b.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
        if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined;
        if (!isBuiltin(args.path)) return undefined;
        return { path: args.path.replace(/^node:/, ''), namespace: 'gpu-sentinel-builtin' };
      });
      b.onLoad({ filter: /.*/, namespace: 'gpu-sentinel-builtin' }, (args) => ({
        contents: `module.exports = require(${JSON.stringify(`node:${args.path}`)});`,
        loader: 'js',
      }));
    },
  };
}

/** Options of {@link buildAgentBundle}. */
export interface BuildAgentBundleOptions {
  /** Output folder; emptied first. @default '<repo>/dist/agent' */
  readonly outDir?: string;
  /** Target CPU of the koffi native package copied. @default the building machine's (`process.arch`) */
  readonly arch?: AgentBundleArch;
  /** Also write `<outDir>/../gpu-sentinel-agent-<version>-linux-<arch>.tar.gz` (system `tar`). @default false */
  readonly tarball?: boolean;
  /**
   * Minify the bundle, with a linked source map (`<file>.map` next to each file, read only under
   * `node --enable-source-maps`) for stack traces. Less code to parse and keep: lower RSS.
   * @default true
   */
  readonly minify?: boolean;
}

/** What {@link buildAgentBundle} wrote. */
export interface AgentBundle {
  /** The output folder. */
  readonly outDir: string;
  /** Absolute path of `gpu-sentinel-agent.mjs`. */
  readonly entry: string;
  /** Size of the bundled entry `.mjs`, bytes (the chunks not counted). */
  readonly bundleBytes: number;
  /** The chunk files, relative to `outDir` (e.g. `chunks/credential-provider-node-AB12CD34.mjs`). */
  readonly chunks: readonly string[];
  /** The tarball, when asked for. */
  readonly tarball: string | undefined;
  /** esbuild's metafile (`inputs` keyed by path relative to the repository root), for checks of what the bundle loads. */
  readonly metafile: Metafile;
}

/**
 * Builds the host agent's deliverable: an ESM entry bundled by esbuild from
 * `agent/packaging/agent-main.ts` (platform node, target node20, a `createRequire` banner for
 * bundled CommonJS and for every Node built-in, which the bundle loads through `require`, never an
 * ESM import: see {@link builtinsThroughRequirePlugin}; `koffi` external, minified with linked
 * source maps, licence comments in `<file>.LEGAL.txt`) and its ESM chunks under `chunks/` (code
 * split off at dynamic `import()`s, parsed only when the agent uses it), koffi's runtime files (its
 * loaders made to `require` the built-ins they load: `KOFFI_BUILTIN_REWRITES`) and its native platform package under `node_modules/`,
 * plus install.sh, the systemd unit and the sample config. The folder runs on any
 * Linux host with Node.js ≥ 20: `node gpu-sentinel-agent.mjs agent --help`.
 *
 * @param options - output folder, architecture, tarball, minify
 * @returns the paths and the bundle's size
 * @throws {AgentError} when koffi's native package for `arch` is not installed
 * @throws {Error} when esbuild or tar fails
 * @example
 * await buildAgentBundle({ outDir: 'dist/agent', arch: 'x64', tarball: true });
 */
export async function buildAgentBundle(options: BuildAgentBundleOptions = {}): Promise<AgentBundle> {
  const outDir = options.outDir ?? join(ROOT, 'dist', 'agent');
  const arch = options.arch ?? (process.arch === 'arm64' ? 'arm64' : 'x64');
  const entry = join(outDir, AGENT_BUNDLE_FILE);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });

  const minify = options.minify ?? true;
  const result = await build({
    entryPoints: {
      [AGENT_BUNDLE_FILE.replace(/\.mjs$/, '')]: join(ROOT, 'agent', 'packaging', 'agent-main.ts'),
    },
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    splitting: true,
    chunkNames: `${AGENT_BUNDLE_CHUNKS_DIR}/[name]-[hash]`,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    // ESM builds first: a CommonJS package reached through a dynamic import() would come back as
    // `{ default }` only (no named exports), and ESM is tree-shaken where CommonJS is kept whole.
    mainFields: ['module', 'main'],
    minify,
    sourcemap: minify ? 'linked' : false,
    legalComments: 'linked',
    metafile: true,
    external: ['koffi'],
    plugins: [stubPlugin(), lazyBuiltinsPlugin(), builtinsThroughRequirePlugin()],
    banner: {
      js: [
        '#!/usr/bin/env node',
        `// gpu-sentinel-agent ${AGENT_VERSION}, bundled by agent/packaging/build-agent-bundle.ts`,
        "import { createRequire as __gsCreateRequire } from 'node:module';",
        'const require = __gsCreateRequire(import.meta.url);',
      ].join('\n'),
    },
    logLevel: 'silent',
  });
  if (result.errors.length > 0) throw new Error(`esbuild: ${result.errors.map((e) => e.text).join('; ')}`);
  chmodSync(entry, 0o755);
  const chunks = Object.keys(result.metafile.outputs)
    .map((out) => relative(outDir, out))
    .filter((out) => out.startsWith(`${AGENT_BUNDLE_CHUNKS_DIR}/`) && out.endsWith('.mjs'))
    .sort();

  copyKoffi(join(outDir, 'node_modules'), arch);
  for (const file of SHIPPED_FILES) copyFileSync(join(ROOT, 'agent', 'packaging', file), join(outDir, file));
  chmodSync(join(outDir, 'install.sh'), 0o755);
  chmodSync(join(outDir, 'install-dcgm-exporter.sh'), 0o755);
  writeFileSync(join(outDir, 'VERSION'), `${AGENT_VERSION} linux-${arch}\n`);

  let tarball: string | undefined;
  if (options.tarball) {
    tarball = join(dirname(outDir), `gpu-sentinel-agent-${AGENT_VERSION}-linux-${arch}.tar.gz`);
    execFileSync('tar', ['-czf', tarball, '-C', dirname(outDir), basename(outDir)]);
  }
  return {
    outDir,
    entry,
    bundleBytes: readFileSync(entry).length,
    chunks,
    tarball,
    metafile: result.metafile,
  };
}

/**
 * Copies koffi's runtime (package.json, licence, the JS loaders; not its C++ sources, docs or
 * build tooling) and `@koromix/koffi-linux-<arch>` into `nodeModules`, keeping the layout koffi's
 * loader looks for (`koffi/src/koffi/index.js` requires `@koromix/koffi-linux-<arch>`).
 *
 * @param nodeModules - the `node_modules` folder to write
 * @param arch - the target architecture
 * @param native - the folder of `@koromix/koffi-linux-<arch>` @default the installed one, next to koffi
 * @throws {AgentError} when the native package for `arch` is not installed
 */
export function copyKoffi(nodeModules: string, arch: AgentBundleArch, native?: string): void {
  const require = createRequire(join(ROOT, 'package.json'));
  const koffiDir = dirname(require.resolve('koffi'));
  const nativeName = `@koromix/koffi-linux-${arch}`;
  const nativeDir = native ?? join(dirname(koffiDir), ...nativeName.split('/'));
  if (!existsSync(join(nativeDir, 'package.json')))
    throw new AgentError(
      `Expected koffi's native package ${nativeName} in ${relative(ROOT, dirname(nativeDir))}, got nothing; install it (npm install --no-save --force ${nativeName}@${koffiVersion(koffiDir)}) or build on a linux-${arch} machine`,
    );
  const runtime = (src: string): boolean => {
    const rel = relative(koffiDir, src);
    if (rel === '') return true;
    if (['src', join('src', 'koffi'), join('src', 'koffi', 'src')].includes(rel)) return true;
    return (
      (/\.(c?js|json)$/.test(rel) || rel === 'LICENSE.txt') &&
      !/^(doc|lib|vendor)\b/.test(rel) &&
      !rel.includes('cnoke')
    );
  };
  cpSync(koffiDir, join(nodeModules, 'koffi'), { recursive: true, filter: runtime });
  cpSync(nativeDir, join(nodeModules, ...nativeName.split('/')), { recursive: true });
  requireBuiltinsInKoffi(join(nodeModules, 'koffi'));
}

/**
 * koffi's loaders (koffi 3.x), as shipped beside the bundle and the single executable, and each
 * line of them that loads a Node built-in in a way that runs the built-in's lazy exports, with what
 * replaces it: the same module object through `require`, nothing else read.
 * - `src/koffi/index.js`, the ES module loader the ESM bundle's `import koffi from 'koffi'` runs
 *   (its `exports` `import` condition). On Node.js 22 and later an ESM import of a built-in builds
 *   its namespace by reading every export: for `node:util` the lazy `setTraceSigInt`, which loads
 *   `worker_threads` (2.4 MB of RSS on Node 24.21); for `node:fs` the `promises` getter, which loads
 *   `fs/promises` with `readline` and the REPL's history, and the `ReadStream` and `Utf8Stream`
 *   getters (see {@link LAZY_BUILTINS}). koffi uses
 *   `util.deprecate` and `fs`'s sync calls only.
 * - `src/koffi/index.cjs`, the CommonJS loader the single executable requires: esbuild's
 *   `__toESM(require("node:util"))` reads the descriptor of every export of `node:util`, which runs
 *   its lazy data properties (`setTraceSigInt`, `parseArgs`, `diff`: `worker_threads` again: 0.6
 *   MiB of the single executable's peak RSS, BENCHMARKS.md, 2026-11-28 "the built-in modules the
 *   agent loads").
 */
const KOFFI_BUILTIN_REWRITES: readonly { file: string; line: string; replacement: string }[] = [
  {
    file: 'src/koffi/index.js',
    line: 'import util from "node:util";',
    replacement:
      'import { createRequire as __gsCreateRequire } from "node:module"; const util = __gsCreateRequire(import.meta.url)("node:util");',
  },
  {
    file: 'src/koffi/index.js',
    line: 'import fs2 from "node:fs";',
    replacement: 'const fs2 = __gsCreateRequire(import.meta.url)("node:fs");',
  },
  {
    file: 'src/koffi/index.js',
    line: 'import fs from "node:fs";',
    replacement: 'const fs = __gsCreateRequire(import.meta.url)("node:fs");',
  },
  {
    file: 'src/koffi/index.cjs',
    line: 'import_node_util = __toESM(require("node:util"));',
    replacement: 'import_node_util = { default: require("node:util") };',
  },
];

/**
 * Rewrites koffi's loaders, as copied, by {@link KOFFI_BUILTIN_REWRITES}.
 *
 * @param koffiDir - the copied `koffi` package folder
 * @throws {AgentError} when a loader no longer holds one of the lines exactly once (a koffi upgrade
 *   changed it: check what it imports, then update or drop the rewrite)
 */
function requireBuiltinsInKoffi(koffiDir: string): void {
  for (const { file, line, replacement } of KOFFI_BUILTIN_REWRITES) {
    const path = join(koffiDir, ...file.split('/'));
    const code = readFileSync(path, 'utf8');
    const found = code.split(line).length - 1;
    if (found !== 1)
      throw new AgentError(
        `Expected koffi's loader ${file} to hold \`${line}\` once, got ${found}; a koffi upgrade changed it: review KOFFI_BUILTIN_REWRITES in agent/packaging/build-agent-bundle.ts`,
      );
    writeFileSync(path, code.replace(line, replacement));
  }
}

/** koffi's version, from its package.json. */
function koffiVersion(koffiDir: string): string {
  return (JSON.parse(readFileSync(join(koffiDir, 'package.json'), 'utf8')) as { version: string }).version;
}
