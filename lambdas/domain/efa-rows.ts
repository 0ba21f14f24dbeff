import type { Batch, EfaWindow } from '../contract';
import type { EfaWindowRow } from './types';

/** One `efa_windows` row being built: the windows of one device/port summed so far. */
interface Run {
  readonly device: string;
  readonly port: number;
  readonly start: string;
  end: string;
  endMs: number;
  /** The run's counter names, sorted and joined: a window with another set starts a new run. */
  readonly names: string;
  readonly deltas: Record<string, number>;
}

/** The window's counter names, sorted and joined with `,` (names are snake_case, never a comma). */
const namesOf = (w: EfaWindow): string => Object.keys(w.deltas).sort().join(',');

/** Whether adding `w`'s deltas to `run` keeps every sum a safe integer (exact in JSON and Parquet). */
function sumsStaySafe(run: Run, w: EfaWindow): boolean {
  for (const [name, n] of Object.entries(w.deltas)) {
    if ((run.deltas[name] ?? 0) + n > Number.MAX_SAFE_INTEGER) return false;
  }
  return true;
}

/** Whether `w` extends `run`: it starts where the run ends, has the same counters, and sums stay exact. */
const extendsRun = (run: Run, w: EfaWindow): boolean =>
  Date.parse(w.start) === run.endMs && namesOf(w) === run.names && sumsStaySafe(run, w);

/**
 * The `efa_windows` rows of one batch (docs/design.md §4, "EFA rows"): per EFA device and port, one
 * row per run of consecutive windows of the batch instead of one per 10 s window, so a p5 minute
 * (32 devices × 2 entries × 6 windows = 384 entries) stores 64 rows. The rules read the batch's
 * windows before this (`efa_drops` judges each 10 s window); only the store is coarser.
 *
 * A row's `start` is its first window's `start`, its `time` its last window's `end` (the contract's
 * strings, unchanged), and each counter's delta the sum over its windows. A run goes on only while
 * the next window of that device/port starts exactly where the run ends (`Date.parse` equal), has
 * the same counter names, and keeps every sum ≤ `Number.MAX_SAFE_INTEGER`; anything else starts a
 * new row. So a gap (agent restart, a window lost, a replay after an outage) is never claimed as
 * measured, and a counter in a row covers the row's whole span: a counter absent from a window
 * (the agent's first read of a device, a step too large after a reset) splits the run rather than
 * being summed over part of it. Same columns, same Glue table: only the row count changes.
 *
 * Deterministic for a given batch, so a batch retried as it was stores the same rows (`seq` is the
 * version). A batch the agent retries merged with newer windows (a 5xx after the store write) stores
 * each device/port's first row again with the same `start` and a later `time`: readers summing deltas
 * keep, per (`instance_id`, `device`, `port`, `start`), the row with the latest `time` (docs/design.md §4).
 *
 * @param batch - a validated batch (its `efa[]`, `host.instance_id`, `host.instance_type`, `seq`)
 * @returns the rows, by device/port in order of first appearance, each device/port's by time
 */
export function efaRowsOf(batch: Batch): EfaWindowRow[] {
  const byPort = new Map<string, EfaWindow[]>();
  for (const w of batch.efa ?? []) {
    const key = `${w.device}\u0000${w.port}`;
    const list = byPort.get(key);
    if (list === undefined) byPort.set(key, [w]);
    else list.push(w);
  }
  const runs: Run[] = [];
  for (const windows of byPort.values()) {
    const sorted = windows
      .map((w) => ({ w, startMs: Date.parse(w.start) }))
      .sort((a, b) => a.startMs - b.startMs)
      .map(({ w }) => w);
    let run: Run | undefined;
    for (const w of sorted) {
      if (run !== undefined && extendsRun(run, w)) {
        for (const [name, n] of Object.entries(w.deltas)) run.deltas[name] = (run.deltas[name] ?? 0) + n;
        run.end = w.end;
        run.endMs = Date.parse(w.end);
        continue;
      }
      run = {
        device: w.device,
        port: w.port,
        start: w.start,
        end: w.end,
        endMs: Date.parse(w.end),
        names: namesOf(w),
        deltas: { ...w.deltas },
      };
      runs.push(run);
    }
  }
  const { host } = batch;
  return runs.map((r) => ({
    time: r.end,
    start: r.start,
    instance_id: host.instance_id,
    instance_type: host.instance_type,
    device: r.device,
    port: r.port,
    seq: batch.seq,
    deltas: r.deltas,
  }));
}
