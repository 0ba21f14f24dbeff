import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FLEET_ENTRY } from '../../lib/gpu-sentinel-stack';
import { LAMBDA_BUNDLING } from '../../lib/lambda-bundling';
import { ingestEsbuildOptions } from './ingest-esbuild';

describe('the fleet evaluator Lambda bundle', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-fleet-bundle-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('bundles with the stack’s esbuild settings and loads without the local-mode packages', async () => {
    // Prepare
    const outfile = join(dir, 'index.js');
    // Act
    const result = await build({
      ...ingestEsbuildOptions(LAMBDA_BUNDLING.externalModules),
      entryPoints: [DEFAULT_FLEET_ENTRY],
      outfile,
    });
    const mod = createRequire(import.meta.url)(outfile) as { handler?: unknown };
    // Assess
    expect(result.errors).toEqual([]);
    expect(typeof mod.handler).toBe('function');
  });
});
