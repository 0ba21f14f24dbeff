import { join } from 'node:path';
import { build } from 'esbuild';
import { literalSchemaKeysPlugin } from './literal-schema-keys';

/**
 * Builds the ingest Lambda's split modules next to its `index.js` (run by the bundling hook,
 * `splitModuleCommands` in ingest-function.ts, with `npx tsx`): one esbuild build per module with
 * the bundle's settings, and the {@link literalSchemaKeysPlugin} so the AWS SDK keeps only the
 * shapes the module reaches. Its one argument is the base64 of a JSON {@link SplitBuild}.
 */
export interface SplitBuild {
  /** The project root as the bundling environment sees it. */
  readonly inputDir: string;
  /** The asset folder holding `index.js`. */
  readonly outputDir: string;
  /** Each module's entry (relative to `inputDir`) and output file name. */
  readonly modules: ReadonlyArray<{ readonly entry: string; readonly outfile: string }>;
  /** esbuild `format`. */
  readonly format: 'cjs' | 'esm';
  /** esbuild `target`, e.g. `node24`. */
  readonly target: string;
  /** esbuild `mainFields`. */
  readonly mainFields: readonly string[];
  /** Packages left out of every module. */
  readonly external: readonly string[];
}

/**
 * Builds every module of `spec`, minified, with a source map of file and line (no sources).
 *
 * @param spec - what to build, where
 * @throws {Error} esbuild's, when a module does not build
 */
export async function buildSplitModules(spec: SplitBuild): Promise<void> {
  for (const m of spec.modules) {
    await build({
      entryPoints: [join(spec.inputDir, m.entry)],
      bundle: true,
      platform: 'node',
      format: spec.format,
      target: spec.target,
      mainFields: [...spec.mainFields],
      minify: true,
      sourcemap: true,
      sourcesContent: false,
      external: [...spec.external],
      outfile: join(spec.outputDir, m.outfile),
      plugins: [literalSchemaKeysPlugin()],
      logLevel: 'warning',
    });
  }
}

const [arg] = process.argv.slice(2);
if (arg !== undefined && process.argv[1]?.endsWith('build-split-modules.ts')) {
  await buildSplitModules(JSON.parse(Buffer.from(arg, 'base64').toString('utf8')) as SplitBuild);
}
