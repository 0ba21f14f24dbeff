import { execSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INGEST_ENTRY } from '../../lib/gpu-sentinel-stack';
import { INGEST_SPLIT_MODULES, splitModuleCommands } from '../../lib/ingest-function';
import { ingestEsbuildOptions } from './ingest-esbuild';

const ROOT = join(import.meta.dirname, '..', '..');

describe('the ingest Lambda bundle', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-ingest-bundle-'));
    await build({
      ...ingestEsbuildOptions(),
      entryPoints: [DEFAULT_INGEST_ENTRY],
      outfile: join(dir, 'index.js'),
    });
    for (const command of splitModuleCommands(ROOT, dir)) execSync(command, { cwd: ROOT, stdio: 'pipe' });
  }, 120_000);

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('leaves EC2, Auto Scaling and IAM out of index.js and imports their module on first use', async () => {
    // Act
    const main = await readFile(join(dir, 'index.js'), 'utf8');
    // Assess
    expect(main).toContain('import("./make-instance-apis.js")');
    expect(main).not.toContain('DescribeInstances');
    expect(main).not.toContain('GetInstanceProfile');
  });

  it('builds each split module next to index.js with the stack’s hook command, exporting its maker', async () => {
    // Act
    const loaded = await Promise.all(
      INGEST_SPLIT_MODULES.map(
        async (m) => (await import(pathToFileURL(join(dir, m.outfile)).href)) as object,
      ),
    );
    // Assess
    expect(loaded.map((m) => Object.keys(m).filter((k) => k !== 'default'))).toEqual([['makeInstanceApis']]);
  });

  it('loads and exports the Lambda handler', () => {
    // Act
    const mod = createRequire(import.meta.url)(join(dir, 'index.js')) as { handler?: unknown };
    // Assess
    expect(typeof mod.handler).toBe('function');
  });
});
