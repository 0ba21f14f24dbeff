import { readFileSync } from 'node:fs';
import { bootTimeFromProcStat, KmsgFollower, type KmsgFollowerOptions } from './kmsg-follower';
import type { AgentSource, SampleSink, SourceContext, SourceSupport } from './source';

/** Options of {@link KmsgSource}. */
export interface KmsgSourceOptions extends Omit<KmsgFollowerOptions, 'bootTime' | 'onXid' | 'onWarning'> {
  /** `/proc/stat`, for the boot time that dates raw kernel-log records. @default '/proc/stat' */
  readonly procStatPath?: string;
}

/**
 * XIDs from the kernel log ({@link KmsgFollower}) as an {@link AgentSource}: the history at open,
 * then each record as the kernel logs it ({@link KmsgFollower.follow}: a background `poll(2)` on
 * `/dev/kmsg`, no CPU while idle), or, where that wait cannot run (a regular file, no bindable
 * libc), at every poll (`sample`). Each Xid record, and each line that says a GPU is gone (a
 * `gpu_lost` event, agent/sources/kmsg-gpu-lost.ts), goes to `context.emit`, which flushes a
 * critical one at once: a kernel-log XID or lost GPU reaches the send within milliseconds (at
 * most one poll interval without the wait). Unsupported when the boot time is unknown (no `btime`
 * in `/proc/stat`) or the log cannot be opened (no CAP_SYSLOG, no such file).
 */
export class KmsgSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'kmsg';
  readonly #options: KmsgSourceOptions;
  #follower: KmsgFollower | undefined;

  /** @param options - the follower's options and `procStatPath` */
  constructor(options: KmsgSourceOptions = {}) {
    this.#options = options;
  }

  /** Opens the log and reads its history. @returns unsupported with the reason when it cannot */
  open(context: SourceContext): SourceSupport {
    const { procStatPath = '/proc/stat', ...follower } = this.#options;
    const bootTime = readBootTime(procStatPath);
    if (bootTime === undefined)
      return {
        supported: false,
        reason: `boot time unknown (no btime in ${procStatPath}); kernel-log XIDs off`,
      };
    this.#follower = new KmsgFollower({
      ...follower,
      bootTime,
      onXid: context.emit,
      onWarning: context.warn,
    });
    if (this.#follower.start()) {
      // The history still buffered (XIDs logged before the agent started) comes first.
      this.#follower.pump();
      const live = this.#follower.follow();
      return { supported: true, detail: live ? 'read as records come' : 'read at each poll' };
    }
    this.#follower = undefined;
    return { supported: false, reason: `cannot open ${follower.path ?? '/dev/kmsg'}; kernel-log XIDs off` };
  }

  /**
   * One poll: without the background wait, reads the records logged since the last poll
   * (non-blocking, on the calling thread) and emits their Xid lines through the context's `emit`;
   * with it, nothing (the wait already read them). Writes nothing into `into`.
   */
  sample(_into: SampleSink, _now: Date): void {
    const follower = this.#follower;
    if (follower !== undefined && !follower.following) follower.pump();
  }

  /** Ends the background wait and closes the log. Idempotent. @returns when the wait's thread returned */
  async close(): Promise<void> {
    const follower = this.#follower;
    this.#follower = undefined;
    await follower?.stop();
  }
}

function readBootTime(path: string): Date | undefined {
  try {
    return bootTimeFromProcStat(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}
