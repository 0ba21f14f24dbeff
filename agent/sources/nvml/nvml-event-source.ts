import type { AgentSource, SampleSink, SourceContext, SourceSupport } from '../source';
import { NvmlEventWatcher, type NvmlEventWatcherOptions } from './xid-events';

/** Options of {@link NvmlEventSource}: the watcher's, less what the context gives. */
export type NvmlEventSourceOptions = Omit<NvmlEventWatcherOptions, 'onEvent' | 'clock'>;

/**
 * NVML XID and double-bit ECC events ({@link NvmlEventWatcher}) as an {@link AgentSource}: its
 * events go to `context.emit`, either as a background wait returns them (`waitTimeoutMs` > 0) or,
 * with `waitTimeoutMs: 0`, when each poll drains what the driver holds. Unsupported
 * (the kernel log stays the only XID source) when the event set cannot be created or no GPU
 * registers.
 */
export class NvmlEventSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'nvml-events';
  readonly #options: NvmlEventSourceOptions;
  #watcher: NvmlEventWatcher | undefined;

  /** @param options - `libraryPath`, `logger`, `waitTimeoutMs` (see {@link NvmlEventWatcherOptions}) */
  constructor(options: NvmlEventSourceOptions) {
    this.#options = options;
  }

  /** Starts the event wait loop on a pool thread. @returns unsupported with the reason when it cannot start */
  open(context: SourceContext): SourceSupport {
    try {
      this.#watcher = NvmlEventWatcher.start({
        ...this.#options,
        onEvent: context.emit,
        clock: context.clock,
      });
    } catch (err) {
      return {
        supported: false,
        reason: `NVML XID events unavailable (${(err as Error).message}); the kernel log is the only XID source`,
        level: 'warn',
      };
    }
    if (!this.#watcher.running)
      return {
        supported: false,
        reason: 'no GPU registered for NVML events; the kernel log is the only XID source',
        level: 'warn',
      };
    return { supported: true };
  }

  /**
   * One poll: with `waitTimeoutMs: 0` (no background wait), takes the events the driver holds now
   * (`NvmlEventWatcher.drain`) and emits them; with a background wait, nothing to do.
   */
  sample(_into: SampleSink, _now: Date): void {
    this.#watcher?.drain();
  }

  /** Stops the wait loop; resolves when the thread is done. Idempotent. */
  async close(): Promise<void> {
    const watcher = this.#watcher;
    this.#watcher = undefined;
    await watcher?.stop();
  }
}
