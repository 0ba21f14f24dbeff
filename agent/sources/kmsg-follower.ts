import { constants } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import type { GpuEvent } from '../../lambdas/contract';
import { type KernelLogOptions, parseXidLine, toXidEvent } from './kmsg';

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

/** What the follower needs of an open file (a `fs/promises` `FileHandle` fits; tests inject fakes). */
export interface KmsgHandle {
  /** Reads at the current position (`position` null); `bytesRead` 0 = nothing now (EOF, no writer). */
  read(buffer: Buffer, offset: number, length: number, position: null): Promise<{ bytesRead: number }>;
  /** Closes the file. */
  close(): Promise<void>;
}

/** Options of {@link KmsgFollower}. */
export interface KmsgFollowerOptions {
  /** The kernel log (or a FIFO / a file appended to, in tests). @default '/dev/kmsg' */
  readonly path?: string;
  /** When the host booted: turns raw kmsg's µs-since-boot into dates (see {@link bootTimeFromProcStat}). */
  readonly bootTime: Date;
  /** Called once per Xid record, in log order. Must not throw. */
  readonly onXid: (event: GpuEvent) => void;
  /** Called once per condition: the log cannot be opened, records were lost, a read failed. @default no-op */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
  /** Wait between reads when nothing is buffered (EAGAIN or EOF), ms, 1..60000. @default 500 */
  readonly pollIntervalMs?: number;
  /** Time zone and year for text formats that lack them (dmesg -T, journalctl); raw kmsg needs none. */
  readonly logOptions?: KernelLogOptions;
  /** Opens `path` non-blocking for reading. @default `fs/promises` `open(path, O_RDONLY | O_NONBLOCK)` */
  readonly open?: (path: string) => Promise<KmsgHandle>;
}

/** Counters of a {@link KmsgFollower}. */
export interface KmsgFollowerStats {
  /** Log lines read (records, not continuation lines). */
  readonly lines: number;
  /** Xid events reported through `onXid`. */
  readonly xids: number;
  /** Times the kernel said records were overwritten before they were read (`EPIPE`). */
  readonly overruns: number;
}

/** Longest partial line kept while waiting for its newline, characters (a kmsg record is ≤ 8 KiB). */
const MAX_PENDING_CHARS = 64 * 1024;
/** Read buffer, bytes: larger than the kernel's largest record (`CONSOLE_EXT_LOG_MAX` 8 KiB), else EINVAL. */
const READ_BUFFER_BYTES = 16 * 1024;

/**
 * Reads the kernel log as records arrive, from the oldest buffered record on.
 *
 * Opens the file non-blocking and drains it; when nothing is left (EAGAIN on `/dev/kmsg`, EOF on a
 * FIFO or regular file) it waits `pollIntervalMs` and reads again, so it holds no libuv thread
 * while idle and `stop()` returns promptly. Lines are split on newlines (a FIFO may deliver
 * several or half a record per read); kmsg continuation lines (starting with a space) are
 * skipped. Never throws while running: failures are warned once per kind.
 *
 * @example
 * const follower = new KmsgFollower({ bootTime, onXid: (e) => { if (merger.add(e)) queue.push(e); } });
 * await follower.start();
 * // … at exit
 * await follower.stop();
 */
export class KmsgFollower {
  private readonly path: string;
  private readonly opts: KmsgFollowerOptions;
  private readonly pollIntervalMs: number;
  private readonly onWarning: (message: string, data?: Record<string, unknown>) => void;
  private readonly warned = new Set<string>();
  private readonly counts = { lines: 0, xids: 0, overruns: 0 };
  private handle: KmsgHandle | undefined;
  private loop: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');

  /**
   * @param opts - see {@link KmsgFollowerOptions}
   * @throws {RangeError} when `pollIntervalMs` is outside 1..60000 or `bootTime` is not a valid date
   */
  constructor(opts: KmsgFollowerOptions) {
    this.opts = opts;
    this.path = opts.path ?? KMSG_DEFAULT_PATH;
    this.pollIntervalMs = opts.pollIntervalMs ?? 500;
    this.onWarning = opts.onWarning ?? (() => {});
    if (!Number.isInteger(this.pollIntervalMs) || this.pollIntervalMs < 1 || this.pollIntervalMs > 60_000)
      throw new RangeError(
        `Expected \`pollIntervalMs\` to be an integer in 1..60000, got \`${this.pollIntervalMs}\``,
      );
    if (Number.isNaN(opts.bootTime.getTime()))
      throw new RangeError('Expected `bootTime` to be a valid date, got an invalid Date');
  }

  /** Lines read, Xids reported, overruns seen so far. */
  get stats(): KmsgFollowerStats {
    return { ...this.counts };
  }

  /**
   * Opens the log and starts following it in the background.
   *
   * @returns `true` when following; `false` when the log cannot be opened (e.g. EACCES without
   *   CAP_SYSLOG, or no such file), warned once; calling it again while following returns `true`
   */
  async start(): Promise<boolean> {
    if (this.loop) return true;
    this.stopped = false;
    try {
      this.handle = await (this.opts.open ?? defaultOpen)(this.path);
    } catch (cause) {
      this.warnOnce(
        'open',
        'cannot open the kernel log; kernel-log XIDs are off (NVML events still report XIDs)',
        {
          path: this.path,
          error: String(cause),
        },
      );
      return false;
    }
    this.loop = this.run(this.handle);
    return true;
  }

  /** Stops following and closes the file; resolves when both are done. Safe to call twice. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.wake?.();
    const loop = this.loop;
    this.loop = undefined;
    await loop;
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close().catch(() => {});
  }

  private async run(handle: KmsgHandle): Promise<void> {
    const buffer = Buffer.alloc(READ_BUFFER_BYTES);
    while (!this.stopped) {
      let bytesRead = 0;
      try {
        ({ bytesRead } = await handle.read(buffer, 0, buffer.length, null));
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
          this.warnOnce(`read:${code ?? String(cause)}`, 'reading the kernel log failed; retrying', {
            path: this.path,
            error: String(cause),
          });
      }
      if (this.stopped) break;
      if (bytesRead > 0) {
        this.consume(this.decoder.write(buffer.subarray(0, bytesRead)));
        continue;
      }
      await this.sleep();
    }
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
      const record = parseXidLine(line, this.opts.logOptions);
      if (!record) continue;
      const event = toXidEvent(record, { bootTime: this.opts.bootTime });
      if (!event) continue;
      this.counts.xids++;
      this.opts.onXid(event);
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
      this.timer = setTimeout(() => this.wake?.(), this.pollIntervalMs);
    });
  }

  private warnOnce(key: string, message: string, data: Record<string, unknown>): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.onWarning(message, data);
  }
}

function defaultOpen(path: string): Promise<KmsgHandle> {
  return openFile(path, constants.O_RDONLY | constants.O_NONBLOCK);
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
