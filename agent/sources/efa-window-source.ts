import { existsSync } from 'node:fs';
import { EFA_SYSFS_ROOT, EfaSource } from './efa';
import type { AgentSource, SourceContext, SourceSupport, WindowSink } from './source';

/**
 * EFA `hw_counters` ({@link EfaSource}) as a window {@link AgentSource}: the baseline is read at
 * open, and each flush window's counter deltas at its close (each read walks ~64 sysfs
 * directories on a p5, too costly per second). Unsupported when the RDMA class directory is absent.
 */
export class EfaWindowSource implements AgentSource {
  /** Source name in logs. */
  readonly name = 'efa';
  readonly #root: string;
  #efa: EfaSource | undefined;

  /** @param root - the sysfs RDMA class directory @default '/sys/class/infiniband' */
  constructor(root: string = EFA_SYSFS_ROOT) {
    this.#root = root;
  }

  /** Reads the baseline. @returns unsupported when `root` does not exist */
  open(context: SourceContext): SourceSupport {
    if (!existsSync(this.#root))
      return { supported: false, reason: `no ${this.#root}: no EFA or RDMA device` };
    this.#efa = new EfaSource({ root: this.#root, clock: context.clock, onWarning: context.warn });
    this.#efa.sample(context.clock());
    return { supported: true };
  }

  /** Reads every counter at `end` and writes the window's deltas. */
  window(into: WindowSink, start: Date, end: Date): void {
    const efa = this.#efa;
    if (efa === undefined) return;
    efa.sample(end);
    for (const w of efa.window(start, end)) into.efa(w);
  }

  /** Nothing to free (sysfs reads only). */
  close(): void {
    this.#efa = undefined;
  }
}
