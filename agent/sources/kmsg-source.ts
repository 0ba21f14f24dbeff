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
 * then, at every poll (`sample`), the records logged since the last one, read without blocking on
 * the poll's own thread and tick (no timer or libuv request of its own); each Xid record, and each
 * line that says a GPU is gone (a `gpu_lost` event, agent/sources/kmsg-gpu-lost.ts), goes to
 * `context.emit`, so a kernel-log XID or lost GPU waits at most one poll interval. Unsupported when the boot time is unknown (no `btime` in
 * `/proc/stat`) or the log cannot be opened (no CAP_SYSLOG, no such file).
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
      return { supported: true };
    }
    this.#follower = undefined;
    return { supported: false, reason: `cannot open ${follower.path ?? '/dev/kmsg'}; kernel-log XIDs off` };
  }

  /**
   * One poll: reads the records logged since the last poll (non-blocking, on the calling thread)
   * and emits their Xid lines through the context's `emit`. Writes nothing into `into`.
   */
  sample(_into: SampleSink, _now: Date): void {
    this.#follower?.pump();
  }

  /** Closes the log. Idempotent. */
  close(): void {
    const follower = this.#follower;
    this.#follower = undefined;
    follower?.stop();
  }
}

function readBootTime(path: string): Date | undefined {
  try {
    return bootTimeFromProcStat(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}
