import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';

/**
 * The Lambda runtime of the pipeline's functions: the newest Node.js this aws-cdk-lib offers
 * (nodejs24.x; docs/aws.md §4). cdk-nag AwsSolutions-L1 flags older ones.
 */
export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_24_X;

/** esbuild target matching {@link LAMBDA_RUNTIME}. */
export const LAMBDA_BUNDLING_TARGET = 'node24';

/**
 * Modules kept out of every bundle: native or local-mode-only packages no Lambda handler loads
 * (koffi is the agent's NVML binding; DuckDB is the embedded local store).
 */
export const LAMBDA_EXTERNAL_MODULES: readonly string[] = [
  'koffi',
  '@duckdb/node-api',
  '@duckdb/node-bindings',
];

/**
 * How the pipeline's CommonJS Lambdas are bundled (esbuild through `NodejsFunction`): CommonJS for
 * `node24`, minified with a source map that maps to file and line without embedding the sources
 * (Node reads the map at load under `--enable-source-maps`: 1.6 MB instead of 4.2 MB parsed at
 * every cold start); packages' ES module builds first (`mainFields`), so esbuild keeps only the
 * SDK commands the code imports (the CommonJS builds cannot be tree-shaken); the
 * {@link LAMBDA_EXTERNAL_MODULES} left out. The fleet evaluator uses it as is; ingest adds its
 * split modules (`INGEST_BUNDLING` in ingest-function.ts); the report Lambda is ESM
 * (`REPORT_BUNDLING` in finance-reports.ts).
 */
export const LAMBDA_BUNDLING = {
  format: nodejs.OutputFormat.CJS,
  target: LAMBDA_BUNDLING_TARGET,
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  externalModules: LAMBDA_EXTERNAL_MODULES,
} as const;
