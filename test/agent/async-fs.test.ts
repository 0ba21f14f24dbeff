import { existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from '../../agent/async-fs';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-async-fs-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('async-fs file handle', () => {
  it('writes at positions and at the end of an appended file, reads back, truncates', async () => {
    // Prepare
    const file = join(dir, 'handle.bin');
    const created = await open(file, 'wx');
    await created.writeFile('abcdef');
    await created.sync();
    await created.close();

    // Act
    const appended = await open(file, 'a');
    const { bytesWritten } = await appended.write(Buffer.from('XYZ!'), 1, 2);
    await appended.datasync();
    await appended.close();
    const patched = await open(file, 'r+');
    await patched.write(Buffer.from('__'), 0, 2, 1);
    await patched.truncate(7);
    const bytes = Buffer.alloc(16);
    const { bytesRead } = await patched.read(bytes, 0, 16, 0);
    await patched.close();

    // Assess: 'a' appends whatever the position, a position writes in place
    expect(bytesWritten).toBe(2);
    expect(bytes.subarray(0, bytesRead).toString()).toBe('a__defY');
    expect(readFileSync(file, 'utf8')).toBe('a__defY');
  });

  it('closes once: a second close neither fails nor closes a descriptor the process opened since', async () => {
    // Prepare
    const file = join(dir, 'close.txt');
    writeFileSync(file, 'kept');
    const handle = await open(file, 'r');
    const fd = handle.fd;
    await handle.close();
    const reused = openSync(file, 'r');

    // Act
    await handle.close();
    const bytes = Buffer.alloc(4);
    readSync(reused, bytes, 0, 4, 0);

    // Assess: the descriptor number came back to the new open, and still reads
    expect(handle.fd).toBe(-1);
    expect(reused).toBe(fd);
    expect(bytes.toString()).toBe('kept');
  });

  it('rejects with the fs error and its code', async () => {
    // Prepare
    const file = join(dir, 'exists.txt');
    writeFileSync(file, '');

    // Act
    const errors = await Promise.all([
      open(file, 'wx').catch((e: NodeJS.ErrnoException) => e.code),
      open(join(dir, 'missing', 'x'), 'r').catch((e: NodeJS.ErrnoException) => e.code),
      readFile(join(dir, 'missing.txt')).catch((e: NodeJS.ErrnoException) => e.code),
      unlink(join(dir, 'missing.txt')).catch((e: NodeJS.ErrnoException) => e.code),
      stat(join(dir, 'missing.txt')).catch((e: NodeJS.ErrnoException) => e.code),
      mkdir(file, { recursive: false }).catch((e: NodeJS.ErrnoException) => e.code),
    ]);

    // Assess
    expect(errors).toEqual(['EEXIST', 'ENOENT', 'ENOENT', 'ENOENT', 'ENOENT', 'EEXIST']);
  });
});

describe('async-fs paths', () => {
  it('makes folders, lists, renames, reads as text and bytes, stats, removes', async () => {
    // Prepare
    const nested = join(dir, 'a', 'b');

    // Act
    await mkdir(nested, { recursive: true });
    await mkdir(nested, { recursive: true });
    writeFileSync(join(nested, 'one.tmp'), 'héllo');
    await rename(join(nested, 'one.tmp'), join(nested, 'one'));
    const names = await readdir(nested);
    const text = await readFile(join(nested, 'one'), 'utf8');
    const bytes = await readFile(join(nested, 'one'));
    const { size } = await stat(join(nested, 'one'));
    await unlink(join(nested, 'one'));

    // Assess
    expect(names).toEqual(['one']);
    expect(text).toBe('héllo');
    expect(bytes).toEqual(Buffer.from('héllo'));
    expect(size).toBe(6);
    expect(existsSync(join(nested, 'one'))).toBe(false);
  });
});
