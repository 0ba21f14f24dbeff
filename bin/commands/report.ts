import { resolve } from 'node:path';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { wasteCsv, wasteSummary } from '../../lambdas/local/waste-report';

/** Options of `gpu-sentinel report`. */
export interface ReportCommandOptions {
  /** DuckDB file written by `gpu-sentinel local`. */
  readonly db: string;
  /** Inclusive start, ISO 8601. @default 24 h before `to` */
  readonly from?: string;
  /** Exclusive end, ISO 8601. @default now */
  readonly to?: string;
  /** `text` (summary) or `csv` (one row per instance and GPU). @default 'text' */
  readonly format: 'text' | 'csv';
}

/**
 * `gpu-sentinel report`: the waste report over [from, to) from the local store.
 * @throws {Error} naming the option when a time is not ISO 8601 or the range is empty
 */
export async function runReportCommand(
  opts: ReportCommandOptions,
  write: (s: string) => void,
): Promise<number> {
  const to = opts.to ? parseTime('--to', opts.to) : new Date();
  const from = opts.from ? parseTime('--from', opts.from) : new Date(to.getTime() - 24 * 3600_000);
  if (from >= to)
    throw new Error(`Expected --from before --to, got ${from.toISOString()} >= ${to.toISOString()}`);
  const store = await DuckDbStore.open(resolve(opts.db));
  try {
    const rows = await store.queryWaste({ from, to });
    write(opts.format === 'csv' ? wasteCsv(rows) : `${wasteSummary(rows)}\n`);
  } finally {
    await store.close();
  }
  return 0;
}

function parseTime(option: string, value: string): Date {
  const t = Date.parse(value);
  if (Number.isNaN(t))
    throw new Error(`Expected ${option} to be an ISO 8601 time like 2026-11-21T00:00:00Z, got \`${value}\``);
  return new Date(t);
}
