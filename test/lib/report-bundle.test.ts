import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_BUNDLING } from '../../lib/finance-reports';
import { DEFAULT_REPORT_ENTRY } from '../../lib/gpu-sentinel-stack';

describe('the report Lambda bundle', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-report-bundle-'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('bundles with the stack’s esbuild settings and loads, Vega included', async () => {
    // Prepare
    const outfile = join(dir, 'index.mjs');
    // Act
    const result = await build({
      entryPoints: [DEFAULT_REPORT_ENTRY],
      bundle: true,
      platform: 'node',
      format: REPORT_BUNDLING.format,
      target: REPORT_BUNDLING.target,
      mainFields: [...REPORT_BUNDLING.mainFields],
      banner: { js: REPORT_BUNDLING.banner },
      external: [...REPORT_BUNDLING.externalModules],
      outfile,
      logLevel: 'silent',
    });
    const mod = (await import(pathToFileURL(outfile).href)) as { handler?: unknown };
    // Assess
    expect(result.errors).toEqual([]);
    expect(typeof mod.handler).toBe('function');
  }, 120_000);
});
