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
import { createRequire } from 'node:module';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { AgentError } from '../errors';
import { AGENT_VERSION } from '../version';

/** Repository root, from this file's place in `agent/packaging/`. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** CPU architectures the bundle is built for (EC2 GPU instances: x64; Graviton g5g: arm64). */
export const AGENT_BUNDLE_ARCHES = ['x64', 'arm64'] as const;
/** Union of {@link AGENT_BUNDLE_ARCHES}. */
export type AgentBundleArch = (typeof AGENT_BUNDLE_ARCHES)[number];

/** Name of the bundled agent file inside the output folder. */
export const AGENT_BUNDLE_FILE = 'gpu-sentinel-agent.mjs';

/** Files of `agent/packaging/` shipped next to the bundle, for install.sh to lay down. */
const SHIPPED_FILES = [
  'install.sh',
  'install-common.sh',
  'gpu-sentinel-agent.service',
  'agent.sample.json',
  // dcgm-exporter for A100 hosts (no GPM): install-dcgm-exporter.sh lays down the other two.
  'install-dcgm-exporter.sh',
  'dcgm-exporter.service',
  'dcgm-counters.csv',
] as const;

/** Options of {@link buildAgentBundle}. */
export interface BuildAgentBundleOptions {
  /** Output folder; emptied first. @default '<repo>/dist/agent' */
  readonly outDir?: string;
  /** Target CPU of the koffi native package copied. @default the building machine's (`process.arch`) */
  readonly arch?: AgentBundleArch;
  /** Also write `<outDir>/../gpu-sentinel-agent-<version>-linux-<arch>.tar.gz` (system `tar`). @default false */
  readonly tarball?: boolean;
  /** Minify the bundle (smaller, unreadable stack traces). @default false */
  readonly minify?: boolean;
  /** Also return esbuild's metafile (every input file bundled, with its bytes), for checks of what the bundle loads. @default false */
  readonly metafile?: boolean;
}

/** What {@link buildAgentBundle} wrote. */
export interface AgentBundle {
  /** The output folder. */
  readonly outDir: string;
  /** Absolute path of `gpu-sentinel-agent.mjs`. */
  readonly entry: string;
  /** Size of the bundled `.mjs`, bytes. */
  readonly bundleBytes: number;
  /** The tarball, when asked for. */
  readonly tarball: string | undefined;
  /** esbuild's metafile (`inputs` keyed by path relative to the repository root), when asked for. */
  readonly metafile: Metafile | undefined;
}

/**
 * Builds the host agent's deliverable: one ESM file bundled by esbuild from
 * `agent/packaging/agent-main.ts` (platform node, target node20, a `createRequire` banner for
 * bundled CommonJS, `koffi` external), koffi's runtime files and its native platform package
 * under `node_modules/`, plus install.sh, the systemd unit and the sample config. The folder runs
 * on any Linux host with Node.js ≥ 20: `node gpu-sentinel-agent.mjs agent --help`.
 *
 * @param options - output folder, architecture, tarball, minify, metafile
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

  const result = await build({
    entryPoints: [join(ROOT, 'agent', 'packaging', 'agent-main.ts')],
    outfile: entry,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    minify: options.minify ?? false,
    legalComments: 'linked',
    external: ['koffi'],
    banner: {
      js: [
        '#!/usr/bin/env node',
        `// gpu-sentinel-agent ${AGENT_VERSION}, bundled by agent/packaging/build-agent-bundle.ts`,
        "import { createRequire as __gsCreateRequire } from 'node:module';",
        'const require = __gsCreateRequire(import.meta.url);',
      ].join('\n'),
    },
    logLevel: 'silent',
    metafile: options.metafile ?? false,
  });
  if (result.errors.length > 0) throw new Error(`esbuild: ${result.errors.map((e) => e.text).join('; ')}`);
  chmodSync(entry, 0o755);

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
  return { outDir, entry, bundleBytes: readFileSync(entry).length, tarball, metafile: result.metafile };
}

/**
 * Copies koffi's runtime (package.json, licence, the JS loaders; not its C++ sources, docs or
 * build tooling) and `@koromix/koffi-linux-<arch>` into `nodeModules`, keeping the layout koffi's
 * loader looks for (`koffi/src/koffi/index.js` requires `@koromix/koffi-linux-<arch>`).
 *
 * @throws {AgentError} when the native package for `arch` is not installed
 */
function copyKoffi(nodeModules: string, arch: AgentBundleArch): void {
  const require = createRequire(join(ROOT, 'package.json'));
  const koffiDir = dirname(require.resolve('koffi'));
  const nativeName = `@koromix/koffi-linux-${arch}`;
  const nativeDir = join(dirname(koffiDir), ...nativeName.split('/'));
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
}

/** koffi's version, from its package.json. */
function koffiVersion(koffiDir: string): string {
  return (JSON.parse(readFileSync(join(koffiDir, 'package.json'), 'utf8')) as { version: string }).version;
}
