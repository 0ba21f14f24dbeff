import { readFileSync } from 'node:fs';
import { bootTimeFromProcStat, KmsgFollower, type KmsgFollowerOptions } from './kmsg-follower';
import type { AgentSource, SourceContext, SourceSupport } from './source';

/** Options of {@link KmsgSource}. */
export interface KmsgSourceOptions extends Omit<KmsgFollowerOptions, 'bootTime' | 'onXid' | 'onWarning'> {
  /** `/proc/stat`, for the boot time that dates raw kernel-log records. @default '/proc/stat' */
  readonly procStatPath?: string;
}

/**
 * XIDs from the kernel log ({@link KmsgFollower}) as an event-only {@link AgentSource}: each Xid
 * record goes to `context.emit`. Unsupported when the boot time is unknown (no `btime` in
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

  /** Opens the log and follows it in the background. @returns unsupported with the reason when it cannot */
  async open(context: SourceContext): Promise<SourceSupport> {
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
    if (await this.#follower.start()) return { supported: true };
    this.#follower = undefined;
    return { supported: false, reason: `cannot open ${follower.path ?? '/dev/kmsg'}; kernel-log XIDs off` };
  }

  /** Stops following and closes the log. Idempotent. */
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
