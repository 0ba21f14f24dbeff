import type { BuildOptions } from 'esbuild';
import { INGEST_BUNDLING } from '../../lib/ingest-function';

/**
 * esbuild options equal to the stack's `INGEST_BUNDLING` (what `NodejsFunction` passes to esbuild),
 * for tests and benchmarks that bundle the ingest handler (or, with `LAMBDA_BUNDLING`'s externals,
 * the fleet evaluator: same settings) themselves.
 *
 * @param external - modules left out of the output
 * @default external `INGEST_BUNDLING.externalModules`
 */
export function ingestEsbuildOptions(
  external: readonly string[] = INGEST_BUNDLING.externalModules,
): BuildOptions {
  return {
    bundle: true,
    platform: 'node',
    format: INGEST_BUNDLING.format,
    target: INGEST_BUNDLING.target,
    mainFields: [...INGEST_BUNDLING.mainFields],
    minify: INGEST_BUNDLING.minify,
    sourcemap: INGEST_BUNDLING.sourceMap,
    sourcesContent: INGEST_BUNDLING.sourcesContent,
    external: [...external],
    logLevel: 'silent',
  };
}
