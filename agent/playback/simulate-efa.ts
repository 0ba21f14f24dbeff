import type { EfaWindow } from '../../lambdas/contract';
import { PlaybackOptionsError } from '../errors';
import type { AgentSource, SourceContext, SourceSupport, WindowSink } from '../sources/source';

/**
 * Simulated EFA ports: the per-window counter deltas `EfaSource` would read from sysfs
 * `hw_counters` on a host whose fabric is healthy, or whose one port drops packets. Counter names
 * are the EFA driver's (port stats of r2.17+: `rx_drops`, `retrans_pkts`,
 * `retrans_timeout_events`, `impaired_remote_conn_events`, `unresponsive_remote_events`).
 */

/** One simulated EFA port. */
export interface SimulatedEfaPort {
  /** RDMA device name, e.g. `rdmap16s27`. */
  readonly device: string;
  /** Packets per second each way. */
  readonly pkts_per_s: number;
  /** Received packets dropped per second (0 on a healthy port). @default 0 */
  readonly rx_drops_per_s?: number;
  /** Retransmitted packets per second. @default 0 */
  readonly retrans_pkts_per_s?: number;
  /** Retransmission time-outs per minute. @default 0 */
  readonly retrans_timeouts_per_min?: number;
  /** Impaired remote connection events per minute. @default 0 */
  readonly impaired_remote_per_min?: number;
}

/** Bytes per EFA packet the simulation assumes (a full 8 KiB RDMA write segment). */
const BYTES_PER_PKT = 8192;

/**
 * Simulated EFA counters as a window {@link AgentSource}, as `EfaWindowSource` is on a host: the
 * counters start at open (the context's clock), and each window close moves them to its end and
 * writes each port's deltas since the previous window (fractions carried, so rates add up exactly
 * over time), port 1 of each device, in device order.
 */
export class SimulatedEfa implements AgentSource {
  /** Source name in logs. */
  readonly name = 'simulate-efa';
  readonly #ports: readonly SimulatedEfaPort[];
  readonly #totals: Map<string, number>[];
  readonly #taken: Map<string, number>[];
  #lastMs: number | undefined;

  /**
   * @param ports - 1..32 ports (a p5.48xlarge has 32 EFA devices)
   * @throws {PlaybackOptionsError} when there are no ports, too many, or a rate is negative
   */
  constructor(ports: readonly SimulatedEfaPort[]) {
    if (ports.length < 1 || ports.length > 32)
      throw new PlaybackOptionsError('efa', 'a list of 1..32 ports', ports.length);
    ports.forEach((p, i) => {
      for (const [k, v] of Object.entries(p))
        if (typeof v === 'number' && !(v >= 0))
          throw new PlaybackOptionsError(`efa[${i}].${k}`, 'a rate ≥ 0', v);
    });
    this.#ports = [...ports].sort((a, b) => a.device.localeCompare(b.device, 'en', { numeric: true }));
    this.#totals = this.#ports.map(() => new Map());
    this.#taken = this.#ports.map(() => new Map());
  }

  /** Starts the counters at the context's time. @returns supported, with the port count */
  open(context: SourceContext): SourceSupport {
    this.#advance(context.clock());
    return { supported: true, detail: `${this.#ports.length} simulated EFA ports` };
  }

  /** Moves the counters to `end` and writes each port's whole-count deltas since the previous window. */
  window(into: WindowSink, start: Date, end: Date): void {
    this.#advance(end);
    for (const w of this.#deltas(start, end)) into.efa(w);
  }

  /** Nothing to free. */
  close(): void {}

  /** Advances every counter to `now` at its rate. */
  #advance(now: Date): void {
    const nowMs = now.getTime();
    const dtS = this.#lastMs === undefined ? 0 : Math.max(0, (nowMs - this.#lastMs) / 1000);
    this.#lastMs = nowMs;
    this.#ports.forEach((p, i) => {
      const totals = this.#totals[i] as Map<string, number>;
      const add = (name: string, perS: number): void => {
        totals.set(name, (totals.get(name) ?? 0) + perS * dtS);
      };
      add('rx_pkts', p.pkts_per_s);
      add('tx_pkts', p.pkts_per_s);
      add('rx_bytes', p.pkts_per_s * BYTES_PER_PKT);
      add('tx_bytes', p.pkts_per_s * BYTES_PER_PKT);
      add('rx_drops', p.rx_drops_per_s ?? 0);
      add('retrans_pkts', p.retrans_pkts_per_s ?? 0);
      add('retrans_timeout_events', (p.retrans_timeouts_per_min ?? 0) / 60);
      add('impaired_remote_conn_events', (p.impaired_remote_per_min ?? 0) / 60);
      add('unresponsive_remote_events', 0);
    });
  }

  /** Each port's whole-count deltas since the previous window. */
  #deltas(start: Date, end: Date): EfaWindow[] {
    return this.#ports.map((p, i) => {
      const totals = this.#totals[i] as Map<string, number>;
      const taken = this.#taken[i] as Map<string, number>;
      const deltas: Record<string, number> = {};
      for (const [name, total] of [...totals].sort(([a], [b]) => (a < b ? -1 : 1))) {
        const whole = Math.floor(total);
        deltas[name] = whole - (taken.get(name) ?? 0);
        taken.set(name, whole);
      }
      return { start: start.toISOString(), end: end.toISOString(), device: p.device, port: 1, deltas };
    });
  }
}
