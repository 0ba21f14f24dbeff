import {
  close,
  fdatasync,
  fsync,
  ftruncate,
  mkdir as mkdirCallback,
  open as openCallback,
  read,
  readdir as readdirCallback,
  readFile as readFileCallback,
  rename as renameCallback,
  type Stats,
  stat as statCallback,
  unlink as unlinkCallback,
  write,
} from 'node:fs';

/**
 * The promise-returning file calls the agent's spool and process reader make, over `node:fs`'s
 * callback API, so the running agent never loads `node:fs/promises`. On Node.js 24 that module
 * brings `readline`, the REPL's history, `fs.watch` and `fs.Dir` with it (for
 * `FileHandle.readLines`, `fs.promises.watch`, `opendir`): 0.8 MiB of the single executable's peak
 * RSS, together with the other loaders of it the bundles defer (BENCHMARKS.md, 2026-11-28 "the
 * built-in modules the agent loads"). Each call does what its `fs.promises` namesake does (the
 * same libuv request, the same errors with their `code`: ENOENT, EEXIST, ENOSPC, EIO, …); the
 * handle is the subset of `FileHandle` the spool uses. The packaging tests assert the running
 * agent does not load `node:fs/promises` again.
 */

/** The `fs.promises.FileHandle` calls the spool makes, on a file descriptor of {@link open}. */
export interface AsyncFileHandle {
  /** The open file descriptor; -1 once closed. */
  readonly fd: number;
  /**
   * Reads up to `length` bytes into `buffer` at `offset`, from file position `position` (bytes).
   * @returns the bytes read (0 at the end of the file)
   * @throws {Error} the fs error (EBADF once closed, EIO, …)
   */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  /**
   * Writes `length` bytes of `buffer` from `offset` at file position `position` (bytes), or at the
   * current position (the end, for a file opened with `'a'`) when it is left out. One `write(2)`:
   * it may write fewer bytes; callers loop.
   * @returns the bytes written
   * @throws {Error} the fs error (ENOSPC, EIO, …)
   */
  write(buffer: Buffer, offset: number, length: number, position?: number): Promise<{ bytesWritten: number }>;
  /** Writes all of `data` (UTF-8 for a string) at the current position. @throws {Error} the fs error */
  writeFile(data: string | Buffer): Promise<void>;
  /** `fsync(2)`: data and metadata durable. @throws {Error} the fs error */
  sync(): Promise<void>;
  /** `fdatasync(2)`: data (and the size) durable. @throws {Error} the fs error */
  datasync(): Promise<void>;
  /** Cuts or extends the file to `length` bytes. @throws {Error} the fs error */
  truncate(length: number): Promise<void>;
  /** Closes the descriptor; a second call does nothing (no other file's descriptor is closed). @throws {Error} the fs error */
  close(): Promise<void>;
}

/** A Node callback that resolves with its result, or rejects with its error. */
function settle<T>(resolve: (value: T) => void, reject: (error: Error) => void) {
  return (error: Error | null, value: T): void => (error ? reject(error) : resolve(value));
}

/** A Node callback with no result: resolves, or rejects with its error. */
function done(resolve: () => void, reject: (error: Error) => void) {
  return (error: Error | null): void => (error ? reject(error) : resolve());
}

class FdHandle implements AsyncFileHandle {
  #fd: number;
  #closing: Promise<void> | undefined;

  constructor(fd: number) {
    this.#fd = fd;
  }

  get fd(): number {
    return this.#fd;
  }

  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }> {
    return new Promise((resolve, reject) =>
      read(this.#fd, buffer, offset, length, position, (error, bytesRead) =>
        error ? reject(error) : resolve({ bytesRead }),
      ),
    );
  }

  write(
    buffer: Buffer,
    offset: number,
    length: number,
    position?: number,
  ): Promise<{ bytesWritten: number }> {
    return new Promise((resolve, reject) =>
      write(this.#fd, buffer, offset, length, position ?? null, (error, bytesWritten) =>
        error ? reject(error) : resolve({ bytesWritten }),
      ),
    );
  }

  async writeFile(data: string | Buffer): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let done = 0; done < bytes.length; ) {
      const { bytesWritten } = await this.write(bytes, done, bytes.length - done);
      done += bytesWritten;
    }
  }

  sync(): Promise<void> {
    return new Promise((resolve, reject) => fsync(this.#fd, done(resolve, reject)));
  }

  datasync(): Promise<void> {
    return new Promise((resolve, reject) => fdatasync(this.#fd, done(resolve, reject)));
  }

  truncate(length: number): Promise<void> {
    return new Promise((resolve, reject) => ftruncate(this.#fd, length, done(resolve, reject)));
  }

  close(): Promise<void> {
    if (this.#closing === undefined) {
      const fd = this.#fd;
      this.#fd = -1;
      this.#closing = new Promise((resolve, reject) => close(fd, done(resolve, reject)));
    }
    return this.#closing;
  }
}

/**
 * Opens `path` as `fs.promises.open` does.
 *
 * @param path - the file or directory
 * @param flags - `'r'`, `'r+'`, `'w'`, `'w+'`, `'wx'`, `'a'` (Node's flag strings)
 * @param mode - permissions of a created file @default 0o666 (less the umask)
 * @returns the open file
 * @throws {Error} the fs error (ENOENT, EEXIST, EACCES, …)
 */
export function open(path: string, flags: string, mode?: number): Promise<AsyncFileHandle> {
  return new Promise((resolve, reject) =>
    openCallback(path, flags, mode ?? 0o666, (error, fd) =>
      error ? reject(error) : resolve(new FdHandle(fd)),
    ),
  );
}

/** `fs.promises.rename`: moves `from` to `to` (atomically within a file system). @throws {Error} the fs error */
export function rename(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => renameCallback(from, to, done(resolve, reject)));
}

/** `fs.promises.unlink`: removes a file. @throws {Error} the fs error (ENOENT when it is not there) */
export function unlink(path: string): Promise<void> {
  return new Promise((resolve, reject) => unlinkCallback(path, done(resolve, reject)));
}

/**
 * `fs.promises.mkdir`: creates a directory.
 * @param options - `recursive`: its parents too, and no error when it exists
 * @throws {Error} the fs error (EEXIST when it exists and not `recursive`)
 */
export function mkdir(path: string, options: { readonly recursive: boolean }): Promise<void> {
  return new Promise((resolve, reject) =>
    mkdirCallback(path, { recursive: options.recursive }, done(resolve, reject)),
  );
}

/** `fs.promises.readdir`: the names in a directory (not `.` nor `..`), in the order the OS gives. @throws {Error} the fs error */
export function readdir(path: string): Promise<string[]> {
  return new Promise((resolve, reject) => readdirCallback(path, settle(resolve, reject)));
}

/** `fs.promises.stat`: the file's metadata (symbolic links followed). @throws {Error} the fs error */
export function stat(path: string): Promise<Stats> {
  return new Promise((resolve, reject) => statCallback(path, settle(resolve, reject)));
}

/**
 * `fs.promises.readFile`: a whole file.
 * @returns its bytes, or its text decoded as UTF-8 when `encoding` is `'utf8'`
 * @throws {Error} the fs error (ENOENT, EISDIR, …)
 */
export function readFile(path: string): Promise<Buffer>;
export function readFile(path: string, encoding: 'utf8'): Promise<string>;
export function readFile(path: string, encoding?: 'utf8'): Promise<Buffer | string> {
  return new Promise((resolve, reject) =>
    encoding === undefined
      ? readFileCallback(path, settle<Buffer>(resolve, reject))
      : readFileCallback(path, encoding, settle<string>(resolve, reject)),
  );
}
