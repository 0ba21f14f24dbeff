import { closeSync, constants, openSync, readSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import koffi from 'koffi';
import type { GpuEvent } from '../../lambdas/contract';
import { type KernelLogOptions, parseXidLine, toXidEvent } from './kmsg';
import { GpuLostDetector, toGpuLostEvent } from './kmsg-gpu-lost';
import { canWaitOn, FdWaiter } from './kmsg-wait';

/**
 * Follows the kernel log live and reports NVRM Xid lines as contract events
 * (`kind: 'xid'`, `source: 'kmsg'`). On Linux `/dev/kmsg` (kernel ≥ 3.5) gives one record per
 * `read()` (`prio,seq,usec,flags;message\n` then ` KEY=value` continuation lines), starts at the
 * oldest record still buffered (so the XIDs logged before the agent started come first), and
 * answers `EPIPE` once when records were overwritten before they were read; the next read goes
 * on from the oldest remaining record. Source: kernel `Documentation/ABI/testing/dev-kmsg`.
 */

/** The kernel log device. */
export const KMSG_DEFAULT_PATH = '/dev/kmsg';

/** What the follower needs of an open file, synchronous and non-blocking (tests inject fakes). */
export interface KmsgHandle {
  /**
   * Reads at the current position into `buffer`, never blocking.
   * @returns the bytes read; 0 = nothing now (EOF of a file or a FIFO without a writer)
   * @throws an error with `code` `EAGAIN` (nothing buffered on `/dev/kmsg`) or `EPIPE` (records
   *   overwritten before they were read), as `fs.readSync` does
   */
  read(buffer: Buffer): number;
  /** Closes the file. */
  close(): void;
  /**
   * The open descriptor, for a background wait ({@link KmsgFollower.follow}); absent (an injected
   * fake), the follower is read only by {@link KmsgFollower.pump}.
   */
  readonly fd?: number;
}

/** Options of {@link KmsgFollower}. */
export interface KmsgFollowerOptions {
  /** The kernel log (or a FIFO / a file appended to, in tests). @default '/dev/kmsg' */
  readonly path?: string;
  /** When the host booted: turns raw kmsg's µs-since-boot into dates (see {@link bootTimeFromProcStat}). */
  readonly bootTime: Date;
  /**
   * Called once per Xid record and once per line that says a GPU is gone (a `gpu_lost` event,
   * agent/sources/kmsg-gpu-lost.ts), in log order. Must not throw.
   */
  readonly onXid: (event: GpuEvent) => void;
  /** Called once per condition: the log cannot be opened, records were lost, a read failed. @default no-op */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
  /** Most reads of one {@link KmsgFollower.pump}, 1..1,000,000 (a history longer than that goes on at the next pump). @default 4096 */
  readonly maxReadsPerPump?: number;
  /** Time zone and year for text formats that lack them (dmesg -T, journalctl); raw kmsg needs none. */
  readonly logOptions?: KernelLogOptions;
  /** Opens `path` non-blocking for reading. @default `fs.openSync(path, O_RDONLY | O_NONBLOCK)` with `fs.readSync` */
  readonly open?: (path: string) => KmsgHandle;
}

/** Counters of a {@link KmsgFollower}. */
export interface KmsgFollowerStats {
  /** Log lines read (records, not continuation lines). */
  readonly lines: number;
  /** Xid events reported through `onXid`. */
  readonly xids: number;
  /** `gpu_lost` events reported through `onXid` (before the agent's one-per-GPU merge). */
  readonly gpuLost: number;
  /** Times the kernel said records were overwritten before they were read (`EPIPE`). */
  readonly overruns: number;
}

/** Longest partial line kept while waiting for its newline, characters (a kmsg record is ≤ 8 KiB). */
const MAX_PENDING_CHARS = 64 * 1024;
/** Read buffer, bytes: larger than the kernel's largest record (`CONSOLE_EXT_LOG_MAX` 8 KiB), else EINVAL. */
const READ_BUFFER_BYTES = 16 * 1024;
/** Default {@link KmsgFollowerOptions.maxReadsPerPump}: a full default kernel ring (≈ 1 MiB of records) in a few polls. */
const DEFAULT_MAX_READS_PER_PUMP = 4096;

/**
 * Reads the kernel log as records arrive, from the oldest buffered record on. Each {@link pump}
 * reads what is buffered now with non-blocking `read()`s on the calling thread and returns when
 * nothing is left (EAGAIN on `/dev/kmsg`, EOF on a FIFO or regular file). Who calls it:
 * {@link follow}'s background wait, the moment the kernel logs a record (`/dev/kmsg` and FIFOs:
 * no timer, no CPU while idle), else the owner on its own cadence (the agent: every 1 s poll).
 * Lines are split on newlines (a FIFO may deliver several or half a record per read); kmsg
 * continuation lines (starting with a space) are skipped. Never throws while running: failures
 * are warned once per kind.
 *
 * @example
 * const follower = new KmsgFollower({ bootTime, onXid: (e) => { if (merger.add(e)) queue.push(e); } });
 * follower.start();
 * follower.pump(); // the history
 * if (!follower.follow()) setInterval(() => follower.pump(), 1000);
 * // … at exit
 * await follower.stop();
 */
export class KmsgFollower {
  private readonly path: string;
  private readonly opts: KmsgFollowerOptions;
  private readonly maxReads: number;
  private readonly onWarning: (message: string, data?: Record<string, unknown>) => void;
  private readonly warned = new Set<string>();
  private readonly counts = { lines: 0, xids: 0, gpuLost: 0, overruns: 0 };
  private readonly buffer = Buffer.alloc(READ_BUFFER_BYTES);
  private handle: KmsgHandle | undefined;
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');
  private readonly lostDetector: GpuLostDetector;
  private waiter: FdWaiter | undefined;

  /** @throws {RangeError} when `maxReadsPerPump` is out of range or `bootTime` is invalid */
  constructor(opts: KmsgFollowerOptions) {
    this.opts = opts;
    this.path = opts.path ?? KMSG_DEFAULT_PATH;
    this.maxReads = opts.maxReadsPerPump ?? DEFAULT_MAX_READS_PER_PUMP;
    this.onWarning = opts.onWarning ?? (() => {});
    this.lostDetector = new GpuLostDetector(opts.logOptions);
    if (!Number.isInteger(this.maxReads) || this.maxReads < 1 || this.maxReads > 1_000_000)
      throw new RangeError(
        `Expected \`maxReadsPerPump\` to be an integer in 1..1000000, got \`${this.maxReads}\``,
      );
    if (Number.isNaN(opts.bootTime.getTime()))
      throw new RangeError('Expected `bootTime` to be a valid date, got an invalid Date');
  }

  /** Running counters (a copy). */
  get stats(): KmsgFollowerStats {
    return { ...this.counts };
  }

  /**
   * Opens the log (non-blocking). Idempotent.
   * @returns false (warned once) when it cannot be opened
   */
  start(): boolean {
    if (this.handle) return true;
    try {
      this.handle = (this.opts.open ?? defaultOpen)(this.path);
    } catch (cause) {
      this.warnOnce(
        'open',
        'cannot open the kernel log; kernel-log XIDs are off (NVML events still report XIDs)',
        { path: this.path, error: String(cause) },
      );
      return false;
    }
    return true;
  }

  /**
   * Reads every record buffered now (at most `maxReadsPerPump` reads) and reports its Xid lines
   * through `onXid`, in log order. Does nothing before {@link start} or after {@link stop}.
   * @returns the number of reads that returned data
   */
  pump(): number {
    const handle = this.handle;
    if (handle === undefined) return 0;
    let reads = 0;
    for (let i = 0; i < this.maxReads; i++) {
      let bytesRead: number;
      try {
        bytesRead = handle.read(this.buffer);
      } catch (cause) {
        const code = (cause as NodeJS.ErrnoException).code;
        if (code === 'EPIPE') {
          this.counts.overruns++;
          this.warnOnce(
            'epipe',
            'kernel log records were overwritten before they were read; some lines are lost',
            {
              path: this.path,
            },
          );
          continue;
        }
        if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK')
          this.warnOnce(
            `read:${code ?? String(cause)}`,
            'reading the kernel log failed; retrying at the next poll',
            {
              path: this.path,
              error: String(cause),
            },
          );
        break;
      }
      if (bytesRead <= 0) break;
      reads++;
      this.consume(this.decoder.write(this.buffer.subarray(0, bytesRead)));
    }
    return reads;
  }

  /**
   * Reads records **as they are logged**: a background `poll(2)` on the log's descriptor
   * (agent/sources/kmsg-wait.ts: a libuv pool thread, no CPU while it waits) calls {@link pump}
   * on the main thread the moment the kernel logs a record, so `onXid` sees an Xid within
   * milliseconds instead of at the owner's next poll. Only for `/dev/kmsg` (a character device) and
   * FIFOs: a regular file, an injected handle without `fd`, or a host where libc's `poll` cannot
   * be bound keeps being read at {@link pump} alone. Idempotent; call after {@link start}.
   * @returns true when the background wait runs (the owner's polls need not pump then)
   */
  follow(): boolean {
    if (this.waiter !== undefined) return true;
    const fd = this.handle?.fd;
    if (fd === undefined || !canWaitOn(fd)) return false;
    this.waiter = FdWaiter.start({ fd, onReady: () => this.pump() });
    return this.waiter !== undefined;
  }

  /** True while the background wait of {@link follow} runs. */
  get following(): boolean {
    return this.waiter !== undefined;
  }

  /**
   * Ends the background wait (its pool thread returns at once) and closes the log.
   * Idempotent; never rejects.
   * @returns when the wait's thread has returned (at once without {@link follow})
   */
  stop(): Promise<void> {
    const waiter = this.waiter;
    this.waiter = undefined;
    const handle = this.handle;
    this.handle = undefined;
    try {
      handle?.close();
    } catch {
      // Already closed: nothing to free.
    }
    // Closing the descriptor does not wake a poll(2) on another thread; the waiter's eventfd does.
    return waiter?.stop() ?? Promise.resolve();
  }

  private consume(text: string): void {
    const lines = (this.pending + text).split('\n');
    this.pending = lines.pop() ?? '';
    if (this.pending.length > MAX_PENDING_CHARS) {
      this.warnOnce('long', 'kernel log line longer than 64 KiB without a newline; dropped', {
        path: this.path,
      });
      this.pending = '';
    }
    for (const raw of lines) {
      if (raw === '' || raw.startsWith(' ')) continue;
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      this.counts.lines++;
      const lost = this.lostDetector.feed(line);
      const lostEvent = lost ? toGpuLostEvent(lost, { bootTime: this.opts.bootTime }) : undefined;
      const record = parseXidLine(line, this.opts.logOptions);
      const event = record ? toXidEvent(record, { bootTime: this.opts.bootTime }) : undefined;
      if (event) {
        this.counts.xids++;
        this.opts.onXid(event);
      }
      if (lostEvent) {
        this.counts.gpuLost++;
        this.opts.onXid(lostEvent);
      }
    }
  }

  private warnOnce(key: string, message: string, data: Record<string, unknown>): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.onWarning(message, data);
  }
}

/** `read(2)` of libc through koffi, or undefined where libc cannot be bound (then `fs.readSync`). */
type LibcRead = (fd: number, buffer: Buffer, length: number) => number;
let libcRead: LibcRead | null | undefined;

/** Binds libc's `read` once: `-1` with errno instead of an exception per empty read. */
function bindLibcRead(): LibcRead | undefined {
  if (libcRead === undefined) {
    try {
      libcRead = koffi
        .load('libc.so.6')
        .func('long read(int fd, void *buf, unsigned long count)') as LibcRead;
    } catch {
      libcRead = null;
    }
  }
  return libcRead ?? undefined;
}

/** The `code` Node gives an errno (`EPIPE` for 32), from `os.constants.errno`. */
function errnoCode(errno: number): string {
  for (const [name, value] of Object.entries(osConstants.errno)) if (value === errno) return name;
  return `errno ${errno}`;
}

/**
 * Opens `path` with `O_RDONLY | O_NONBLOCK`. Reads go through libc's `read(2)` (koffi): an empty
 * `/dev/kmsg` answers -1/EAGAIN, returned as 0 here, where `fs.readSync` throws an Error (with its
 * stack) every idle poll: 0.7 µs a read instead of 9 µs. Other errors throw with Node's `code`
 * (`EPIPE`: records overwritten). Without a bindable libc it falls back to `fs.readSync`.
 */
function defaultOpen(path: string): KmsgHandle {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const read = bindLibcRead();
  if (read === undefined)
    return {
      fd,
      read: (buffer) => readSync(fd, buffer, 0, buffer.length, null),
      close: () => closeSync(fd),
    };
  return {
    fd,
    read: (buffer) => {
      const n = read(fd, buffer, buffer.length);
      if (n >= 0) return n;
      const errno = koffi.errno();
      if (errno === osConstants.errno.EAGAIN || errno === osConstants.errno.EINTR) return 0;
      throw Object.assign(new Error(`read(${path}) failed: ${errnoCode(errno)}`), { code: errnoCode(errno) });
    },
    close: () => closeSync(fd),
  };
}

/**
 * Reads the boot time from the text of `/proc/stat` (line `btime <seconds since the epoch>`).
 * Whole seconds: raw kmsg times turned into dates with it can be up to 1 s early, within the
 * XID merge's default tolerance.
 *
 * @param text - the contents of `/proc/stat`
 * @returns the boot time, or `undefined` when no valid `btime` line is present
 * @example
 * bootTimeFromProcStat(readFileSync('/proc/stat', 'utf8')); // 2026-11-21T09:12:01.000Z
 */
export function bootTimeFromProcStat(text: string): Date | undefined {
  const m = /^btime\s+(\d{1,12})\s*$/m.exec(text);
  if (!m) return undefined;
  return new Date(Number(m[1]) * 1000);
}
