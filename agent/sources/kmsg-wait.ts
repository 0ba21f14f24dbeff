import { closeSync, fstatSync } from 'node:fs';
import koffi, { type KoffiFunc } from 'koffi';

/**
 * Waits in the background until a descriptor has something to read, at no CPU cost while it waits:
 * `poll(2)` on a libuv pool thread (koffi `.async`), woken by the kernel the moment a record is
 * logged. The kernel log follower (agent/sources/kmsg-follower.ts) uses it so an Xid or a lost GPU
 * in `/dev/kmsg` reaches the agent at once instead of at the next 1 s poll.
 *
 * Why `poll(2)` and not a blocking `read(2)`: a read blocked on `/dev/kmsg` cannot be cancelled
 * (closing the descriptor does not wake it), its pending libuv request keeps the event loop alive,
 * and at `process.exit` libuv joins its pool threads, so the process would hang until the kernel
 * logs its next line (measured: a blocked `fs.read` held a 2 s-old `process.exit` until `timeout`
 * killed it). The poll here also watches an `eventfd(2)`: {@link FdWaiter.stop} and the process's
 * `exit` event write it, and the thread returns at once. The reads themselves stay non-blocking,
 * on the main thread, in the follower's `pump()` (its `EPIPE` overrun handling unchanged): on
 * `/dev/kmsg` poll answers `POLLIN` while a record is unread and `POLLERR|POLLPRI` after an overrun
 * (kernel `devkmsg_poll`), and the next read reports the overrun as before.
 *
 * Thread pool: one libuv pool thread stays parked in `poll` for the agent's life, beside the NVML
 * event wait's (agent/sources/nvml/xid-events.ts), so 2 of libuv's default 4 (`UV_THREADPOOL_SIZE`
 * unset) are left for file system, DNS and zlib work; each of those waits at most for a free thread,
 * never for a kernel record.
 */

/** `poll(2)` event bits (Linux `<poll.h>`). */
const POLLIN = 0x1;
const POLLPRI = 0x2;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const POLLNVAL = 0x20;
/** `eventfd(2)` flags: `EFD_CLOEXEC | EFD_NONBLOCK` (Linux `<sys/eventfd.h>`). */
const EFD_FLAGS = 0o2000000 | 0o4000;
/** `struct pollfd` is `{ int fd; short events; short revents; }`: 8 bytes, revents at 6. */
const POLLFD_BYTES = 8;

/**
 * Default {@link FdWaiterOptions.timeoutMs}: 60 s. The eventfd wakes the wait at stop and exit, so
 * the timeout is only a bound on a thread left waiting by a path neither covers; one wake-up a
 * minute costs nothing measurable.
 */
export const DEFAULT_FD_WAIT_TIMEOUT_MS = 60_000;
/**
 * Default {@link FdWaiterOptions.pauseMs}: after a wake-up that read nothing (a FIFO whose writer
 * left answers `POLLHUP` until one comes back), the next wait starts this much later, never a hot loop.
 */
export const DEFAULT_FD_WAIT_PAUSE_MS = 1000;

/**
 * Default {@link FdWaiterOptions.minGapMs}: after a wake-up that read records, the next wait starts
 * 100 ms later, so a chatty kernel log costs at most 10 wake-ups a second (the reads of a burst are
 * batched), while the first record after a quiet spell, an Xid's usual case, is read at once.
 */
export const DEFAULT_FD_WAIT_MIN_GAP_MS = 100;

/** Options of {@link FdWaiter.start}. */
export interface FdWaiterOptions {
  /** The descriptor to wait on, open for reading (non-blocking: the reads are the owner's). */
  readonly fd: number;
  /**
   * Called on the main thread each time the descriptor is ready: reads what is there.
   * @returns how many reads returned data (0 makes the next wait start after `pauseMs`)
   */
  readonly onReady: () => number;
  /** Longest single `poll(2)`, ms, 1..600,000. @default 60000 ({@link DEFAULT_FD_WAIT_TIMEOUT_MS}) */
  readonly timeoutMs?: number;
  /** Pause after a wake-up that read nothing, ms, 1..60,000 (never a hot loop). @default 1000 ({@link DEFAULT_FD_WAIT_PAUSE_MS}) */
  readonly pauseMs?: number;
  /** Pause after a wake-up that read something, ms, 0..60,000. @default 100 ({@link DEFAULT_FD_WAIT_MIN_GAP_MS}) */
  readonly minGapMs?: number;
}

/** The libc calls of the wait, bound once (undefined where libc cannot be bound, e.g. musl). */
interface LibcWait {
  readonly poll: KoffiFunc<(fds: Buffer, nfds: number, timeoutMs: number) => number>;
  readonly eventfd: (initval: number, flags: number) => number;
  readonly write: (fd: number, buffer: Buffer, count: number) => number;
}
let libcWait: LibcWait | null | undefined;

function bindLibcWait(): LibcWait | undefined {
  if (libcWait === undefined) {
    try {
      const libc = koffi.load('libc.so.6');
      libcWait = {
        poll: libc.func('int poll(void *fds, unsigned long nfds, int timeout)') as LibcWait['poll'],
        eventfd: libc.func('int eventfd(unsigned int initval, int flags)') as LibcWait['eventfd'],
        write: libc.func('long write(int fd, const void *buf, unsigned long count)') as LibcWait['write'],
      };
    } catch {
      libcWait = null;
    }
  }
  return libcWait ?? undefined;
}

/**
 * Whether a background wait serves `fd`: a character device (`/dev/kmsg`) or a FIFO (tests, a
 * log piped in). A regular file is always "ready" to `poll(2)`, so it is read at the owner's polls.
 */
export function canWaitOn(fd: number): boolean {
  try {
    const stat = fstatSync(fd);
    return stat.isCharacterDevice() || stat.isFIFO();
  } catch {
    return false;
  }
}

/**
 * One background wait on a descriptor (see the module comment): `poll(2)` on a pool thread, then
 * `onReady` on the main thread, then the next wait, until {@link stop}.
 *
 * @example
 * const waiter = FdWaiter.start({ fd, onReady: () => follower.pump() });
 * // … at exit
 * await waiter?.stop();
 */
export class FdWaiter {
  readonly #libc: LibcWait;
  readonly #onReady: () => number;
  readonly #timeoutMs: number;
  readonly #pauseMs: number;
  readonly #minGapMs: number;
  readonly #eventFd: number;
  /** `struct pollfd[2]`: the descriptor, then the eventfd. */
  readonly #fds = Buffer.alloc(2 * POLLFD_BYTES);
  readonly #wake = Buffer.alloc(8);
  readonly #onExit = (): void => this.#signal();
  #waiting = false;
  #stopping = false;
  #pause: ReturnType<typeof setTimeout> | undefined;
  #stopped: Promise<void> | undefined;
  #resolveStopped: (() => void) | undefined;
  #finished = false;

  private constructor(libc: LibcWait, eventFd: number, options: FdWaiterOptions, timeoutMs: number) {
    this.#libc = libc;
    this.#eventFd = eventFd;
    this.#onReady = options.onReady;
    this.#timeoutMs = timeoutMs;
    this.#pauseMs = options.pauseMs ?? DEFAULT_FD_WAIT_PAUSE_MS;
    this.#minGapMs = options.minGapMs ?? DEFAULT_FD_WAIT_MIN_GAP_MS;
    this.#fds.writeInt32LE(options.fd, 0);
    this.#fds.writeInt16LE(POLLIN | POLLPRI, 4);
    this.#fds.writeInt32LE(eventFd, POLLFD_BYTES);
    this.#fds.writeInt16LE(POLLIN, POLLFD_BYTES + 4);
    this.#wake.writeBigUInt64LE(1n);
  }

  /**
   * Starts waiting on `options.fd`.
   * @returns the running waiter, or `undefined` when libc's `poll`/`eventfd` cannot be bound or
   *   the eventfd cannot be created (the owner then reads at its own polls, as before)
   * @throws {RangeError} when `timeoutMs`, `pauseMs` or `minGapMs` is out of range
   */
  static start(options: FdWaiterOptions): FdWaiter | undefined {
    const timeoutMs = options.timeoutMs ?? DEFAULT_FD_WAIT_TIMEOUT_MS;
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 600_000)
      throw new RangeError(`Expected \`timeoutMs\` to be an integer in 1..600000, got \`${timeoutMs}\``);
    for (const [name, min] of [
      ['pauseMs', 1],
      ['minGapMs', 0],
    ] as const) {
      const ms = options[name];
      if (ms !== undefined && (!Number.isInteger(ms) || ms < min || ms > 60_000))
        throw new RangeError(`Expected \`${name}\` to be an integer in ${min}..60000, got \`${ms}\``);
    }
    const libc = bindLibcWait();
    if (libc === undefined) return undefined;
    const eventFd = libc.eventfd(0, EFD_FLAGS);
    if (eventFd < 0) return undefined;
    const waiter = new FdWaiter(libc, eventFd, options, timeoutMs);
    // `process.exit` joins libuv's pool threads: wake ours first so the exit never hangs.
    process.on('exit', waiter.#onExit);
    waiter.#wait();
    return waiter;
  }

  /** True until {@link stop} finished. */
  get running(): boolean {
    return !this.#finished;
  }

  /**
   * Stops waiting: wakes the pool thread (eventfd) and resolves once it returned, then closes the
   * eventfd. Does not close the watched descriptor (the owner's). Idempotent; never rejects.
   */
  stop(): Promise<void> {
    if (this.#stopped === undefined) {
      this.#stopping = true;
      this.#stopped = new Promise<void>((resolve) => {
        this.#resolveStopped = resolve;
      });
      if (this.#pause !== undefined) clearTimeout(this.#pause);
      this.#pause = undefined;
      if (this.#waiting) this.#signal();
      else this.#finish();
    }
    return this.#stopped;
  }

  #signal(): void {
    if (!this.#finished) this.#libc.write(this.#eventFd, this.#wake, 8);
  }

  #wait(): void {
    if (this.#stopping) {
      this.#finish();
      return;
    }
    this.#fds.writeInt16LE(0, 6);
    this.#fds.writeInt16LE(0, POLLFD_BYTES + 6);
    this.#waiting = true;
    this.#libc.poll.async(this.#fds, 2, this.#timeoutMs, (error, ready) => {
      this.#waiting = false;
      if (this.#stopping) {
        this.#finish();
        return;
      }
      const revents = this.#fds.readInt16LE(6);
      if (error != null || ready < 0 || (revents & POLLNVAL) !== 0) {
        // EINTR or a descriptor gone: try again later, never in a hot loop.
        this.#pauseThenWait(this.#pauseMs);
        return;
      }
      if (ready === 0 || (revents & (POLLIN | POLLPRI | POLLERR | POLLHUP)) === 0) {
        this.#wait();
        return;
      }
      let reads = 0;
      try {
        reads = this.#onReady();
      } catch {
        // onReady must not throw (the follower never does); a throw must not end the wait.
      }
      this.#pauseThenWait(reads > 0 ? this.#minGapMs : this.#pauseMs);
    });
  }

  #pauseThenWait(ms: number): void {
    if (ms === 0) {
      this.#wait();
      return;
    }
    this.#pause = setTimeout(() => {
      this.#pause = undefined;
      this.#wait();
    }, ms);
    // The pause alone never keeps the process alive (a pending poll does, until stop()).
    this.#pause.unref();
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    process.off('exit', this.#onExit);
    try {
      closeSync(this.#eventFd);
    } catch {
      // Already closed.
    }
    this.#resolveStopped?.();
  }
}
