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
  let bundled: string[];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-ingest-bundle-'));
    const result = await build({
      ...ingestEsbuildOptions(),
      entryPoints: [DEFAULT_INGEST_ENTRY],
      outfile: join(dir, 'index.js'),
      metafile: true,
    });
    bundled = Object.values(result.metafile.outputs).flatMap((o) =>
      Object.entries(o.inputs)
        .filter(([, input]) => input.bytesInOutput > 0)
        .map(([path]) => path),
    );
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

  it('keeps only the EC2 shapes the instance APIs reach (the SDK schema module tree-shaken): under 0.5 MB', async () => {
    // Act
    const file = join(dir, 'make-instance-apis.js');
    const text = await readFile(file, 'utf8');
    // Assess: 0.91 MB with every one of EC2's 3,400 shapes
    expect(text).toContain('DescribeInstancesRequest');
    expect(text).not.toContain('RunInstancesRequest');
    expect(Buffer.byteLength(text)).toBeLessThan(500_000);
  });

  it('leaves both stores and SNS out of index.js and imports their modules on first use', async () => {
    // Act
    const main = await readFile(join(dir, 'index.js'), 'utf8');
    // Assess: a deployment loads one store, on its first write; SNS on its first alert
    for (const module of ['make-athena-store', 'make-timestream-store', 'make-sns-sinks']) {
      expect(main).toContain(`import("./${module}.js")`);
    }
    for (const operation of ['PutRecordBatch', 'StartQueryExecution', 'WriteRecords', '"Publish"']) {
      expect(main.includes(operation), operation).toBe(false);
    }
  });

  it('builds each split module next to index.js with the stack’s hook command, exporting its maker', async () => {
    // Act
    const loaded = await Promise.all(
      INGEST_SPLIT_MODULES.map(
        async (m) => (await import(pathToFileURL(join(dir, m.outfile)).href)) as object,
      ),
    );
    // Assess
    expect(loaded.map((m) => Object.keys(m).filter((k) => k !== 'default'))).toEqual([
      ['makeInstanceApis'],
      ['makeAthenaStore'],
      ['makeTimestreamStore'],
      ['makeSnsSinks'],
    ]);
  });

  it('is pure ASCII, index.js and every split module, so V8 keeps each source one byte a character', async () => {
    // Prepare: a single non-ASCII character (a regex literal with a ≥ in it) stored the whole
    // 1.1 MB index.js two bytes a character: +1.1 MB of heap at every cold start
    const files = ['index.js', ...INGEST_SPLIT_MODULES.map((m) => m.outfile)];

    // Act
    const nonAscii = await Promise.all(
      files.map(async (f) => ({
        f,
        count: (await readFile(join(dir, f))).filter((byte) => byte > 0x7f).length,
      })),
    );

    // Assess
    expect(nonAscii.filter((n) => n.count > 0)).toEqual([]);
  });

  it("carries zod's English messages only, not its forty locales", () => {
    // Prepare: `import { z } from 'zod'` made esbuild build the whole namespace, locales included
    // (448 of the bundle's 1,131 KB); `import * as z` lets it keep what the schemas use
    const locales = bundled.filter((path) => /node_modules\/zod\/.*\/locales\//.test(path));

    // Act
    const names = locales.map((path) => path.split('/').pop()).filter((name) => name !== 'index.js');

    // Assess
    expect(bundled.some((path) => path.includes('node_modules/zod/'))).toBe(true);
    expect(names).toEqual(['en.js']);
  });

  it('loads and exports the Lambda handler', () => {
    // Act
    const mod = createRequire(import.meta.url)(join(dir, 'index.js')) as { handler?: unknown };
    // Assess
    expect(typeof mod.handler).toBe('function');
  });
});
