import { basename, dirname, join } from 'node:path';
import { open, rename, unlink } from '../async-fs';

/**
 * Makes the directory's entries (files created, renamed or removed in it) durable: `fsync` of the
 * directory itself, which POSIX requires after `open(O_CREAT)`, `rename` and `unlink`.
 *
 * @param dir - the directory
 * @throws {Error} the fs error (ENOENT, EIO, …)
 */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `file` atomically and durably: writes `<file>.tmp`, fsyncs it, renames it over `file`,
 * fsyncs the directory. After a crash at any point the file holds either the old or the new content,
 * never a mix (a stray `.tmp` may stay behind: callers remove it).
 *
 * @param file - the file to replace
 * @param data - its new content
 * @throws {Error} the fs error (ENOSPC, EIO, …); `file` is then unchanged
 */
export async function writeFileAtomic(file: string, data: string | Buffer): Promise<void> {
  const tmp = join(dirname(file), `${basename(file)}.tmp`);
  const handle = await open(tmp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(tmp, file);
  } catch (error) {
    await unlink(tmp).catch(() => undefined);
    throw error;
  }
  await syncDir(dirname(file));
}
