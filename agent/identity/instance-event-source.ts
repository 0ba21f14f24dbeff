import type { AgentSource, SourceContext, SourceSupport } from '../sources/source';
import type { ImdsClient } from './imds';
import { InstanceEventPoller } from './instance-events';

/** Options of {@link InstanceEventSource}. */
export interface InstanceEventSourceOptions {
  /** The IMDSv2 client. */
  readonly imds: Pick<ImdsClient, 'get'>;
  /** Poll interval, ms (a spot notice comes ~2 min ahead). @default 5000 */
  readonly pollIntervalMs?: number;
}

/**
 * IMDS spot interruption and rebalance notices ({@link InstanceEventPoller}) as an event-only
 * {@link AgentSource}: polled on the context's interval timer, each new notice to `context.emit`.
 */
export class InstanceEventSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'imds-events';
  readonly #options: InstanceEventSourceOptions;
  #stop: (() => void) | undefined;

  /** @param options - see {@link InstanceEventSourceOptions} */
  constructor(options: InstanceEventSourceOptions) {
    this.#options = options;
  }

  /** Starts the poll timer (the first poll after one interval). @returns supported */
  open(context: SourceContext): SourceSupport {
    const poller = new InstanceEventPoller({
      imds: this.#options.imds,
      clock: context.clock,
      onEvent: context.emit,
      onWarning: context.warn,
    });
    const { timers } = context;
    const handle = timers.setInterval(() => void poller.poll(), this.#options.pollIntervalMs ?? 5000);
    this.#stop = () => timers.clearInterval(handle);
    return { supported: true };
  }

  /** Stops the timer. Idempotent. */
  close(): void {
    this.#stop?.();
    this.#stop = undefined;
  }
}
