import { MAX_DETAIL_CHARS } from '../../lambdas/contract/constants';
import type { GpuEvent } from '../../lambdas/contract/schema';
import { formatIsoMicros } from '../../lambdas/contract/timestamps';
import { systemClock } from '../clock';
import type { ImdsClient } from './imds';

/**
 * EC2 instance notices from IMDSv2, as contract events: the spot interruption notice
 * (`meta-data/spot/instance-action`, 404 until one is scheduled, then `{"action","time"}` about
 * 2 minutes ahead) and the rebalance recommendation (`meta-data/events/recommendations/rebalance`,
 * 404 until issued, then `{"noticeTime"}`). Source: docs/aws.md §1; AWS EC2 User Guide,
 * "Spot Instance interruption notices" and "EC2 instance rebalance recommendations".
 */

/** IMDS path (under `/latest/meta-data/`) of the spot interruption notice. */
export const SPOT_INSTANCE_ACTION_PATH = 'spot/instance-action';
/** IMDS path (under `/latest/meta-data/`) of the rebalance recommendation. */
export const REBALANCE_RECOMMENDATION_PATH = 'events/recommendations/rebalance';

/** Options of {@link InstanceEventPoller}. */
export interface InstanceEventPollerOptions {
  /** The IMDSv2 client (token handling, 404 → `undefined`). */
  readonly imds: Pick<ImdsClient, 'get'>;
  /** The clock: `at` of a spot notice (when it was seen). @default systemClock */
  readonly clock?: () => Date;
  /** Called once per new notice, in addition to `poll()`'s result. Must not throw. @default no-op */
  readonly onEvent?: (event: GpuEvent) => void;
  /** Called once per condition: IMDS unreachable, a notice that is not the documented JSON. @default no-op */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/**
 * Polls IMDS for spot interruption and rebalance notices and reports each notice **once**.
 *
 * A spot notice becomes `kind: 'spot_interruption'`, `source: 'imds'`, `at` = when it was first
 * seen (the clock; IMDS gives no issue time), `detail` = `action=<terminate|stop|hibernate>
 * time=<when the action happens>`; a changed action or time is a new notice. A rebalance
 * recommendation becomes `kind: 'rebalance_recommendation'`, `at` = its `noticeTime`, `detail` =
 * `noticeTime=<…>`. Poll every few seconds: the spot notice comes ~2 minutes ahead. `poll()` never
 * throws: IMDS failures and malformed notices are warned once and give no event.
 *
 * @example
 * const poller = new InstanceEventPoller({ imds: new ImdsClient(), onEvent: (e) => loop.push(e) });
 * setInterval(() => void poller.poll(), 5000);
 */
export class InstanceEventPoller {
  private readonly imds: Pick<ImdsClient, 'get'>;
  private readonly clock: () => Date;
  private readonly onEvent: (event: GpuEvent) => void;
  private readonly onWarning: (message: string, data?: Record<string, unknown>) => void;
  private readonly emitted = new Set<string>();
  private readonly warned = new Set<string>();

  /** @param opts - see {@link InstanceEventPollerOptions} */
  constructor(opts: InstanceEventPollerOptions) {
    this.imds = opts.imds;
    this.clock = opts.clock ?? systemClock;
    this.onEvent = opts.onEvent ?? (() => {});
    this.onWarning = opts.onWarning ?? (() => {});
  }

  /**
   * Reads both notices once.
   *
   * @returns the notices not reported before (0..2 events, each valid against the contract)
   */
  async poll(): Promise<GpuEvent[]> {
    const [spot, rebalance] = await Promise.all([
      this.read(SPOT_INSTANCE_ACTION_PATH),
      this.read(REBALANCE_RECOMMENDATION_PATH),
    ]);
    const events: GpuEvent[] = [];
    const add = (key: string, event: GpuEvent): void => {
      // The agent's own output, built from fields checked above: no runtime schema here (the API
      // enforces the contract, and the tests hold these events to EventSchema).
      if (this.emitted.has(key)) return;
      this.emitted.add(key);
      events.push(event);
    };
    if (spot !== undefined) {
      const notice = spot as { action?: unknown; time?: unknown };
      const time = typeof notice.time === 'string' ? isoOf(notice.time) : undefined;
      if (typeof notice.action !== 'string' || !/^[a-z]{1,32}$/.test(notice.action) || time === undefined)
        this.malformed(SPOT_INSTANCE_ACTION_PATH, spot);
      else
        add(`spot:${notice.action}:${time}`, {
          at: formatIsoMicros(this.clock().getTime()),
          kind: 'spot_interruption',
          source: 'imds',
          detail: `action=${notice.action} time=${time}`.slice(0, MAX_DETAIL_CHARS),
        });
    }
    if (rebalance !== undefined) {
      const raw = (rebalance as { noticeTime?: unknown }).noticeTime;
      const noticeTime = typeof raw === 'string' ? isoOf(raw) : undefined;
      if (noticeTime === undefined) this.malformed(REBALANCE_RECOMMENDATION_PATH, rebalance);
      else
        add(`rebalance:${noticeTime}`, {
          at: formatIsoMicros(Date.parse(noticeTime)),
          kind: 'rebalance_recommendation',
          source: 'imds',
          detail: `noticeTime=${noticeTime}`,
        });
    }
    for (const e of events) this.onEvent(e);
    return events;
  }

  /** GETs and JSON-parses one path; `undefined` on 404, IMDS failure (warned) or bad JSON (warned). */
  private async read(path: string): Promise<object | undefined> {
    let body: string | undefined;
    try {
      body = await this.imds.get(path);
    } catch (cause) {
      this.warnOnce(`imds:${path}`, 'IMDS did not answer; instance notices are not seen', {
        path,
        error: String(cause),
      });
      return undefined;
    }
    if (body === undefined) return undefined;
    try {
      const value: unknown = JSON.parse(body);
      if (typeof value === 'object' && value !== null) return value;
    } catch {
      // reported below
    }
    this.malformed(path, body);
    return undefined;
  }

  private malformed(path: string, value: unknown): void {
    this.warnOnce(`json:${path}`, 'IMDS notice is not the documented JSON; not reported', {
      path,
      value: (typeof value === 'string' ? value : JSON.stringify(value)).slice(0, 200),
    });
  }

  private warnOnce(key: string, message: string, data: Record<string, unknown>): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.onWarning(message, data);
  }
}

/** An RFC 3339 time as IMDS writes it (`2026-11-21T10:02:00Z`), normalised to `toISOString()`; `undefined` if unparsable. */
function isoOf(raw: string): string | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(raw)) return undefined;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
