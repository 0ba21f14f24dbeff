import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { systemClock } from '../adapters/clock';
import { wasteCsv } from '../adapters/report-csv';
import { evaluateFleet, type FleetEvaluation } from '../app/evaluate-fleet';
import {
  DEFAULT_RULE_CONTEXT,
  type PriceOverrides,
  type PriceRates,
  type RemediationMode,
  type RuleContext,
} from '../domain';
import type { Log } from '../domain/ports';
import type { WasteReportRow } from '../domain/types';
import { createIngestHandler } from '../handlers/ingest-handler';
import { ConsoleAlertSink } from './console-alert-sink';
import { DryRunRemediator } from './dry-run-remediator';
import { DuckDbCurFleetReads } from './duckdb-cur-fleet';
import { DuckDbStore } from './duckdb-store';
import { JsonlDecisionSink } from './jsonl-decision-sink';
import { startLocalApi } from './local-api-server';
import { LocalRunningInstances } from './local-running-instances';

/** Options of {@link startLocalPipeline}. */
export interface LocalPipelineOptions {
  /** Folder for `alerts.jsonl`, `remediation.jsonl`, `waste.csv` (created; those files are replaced). */
  readonly outDir: string;
  /** DuckDB file. @default `<outDir>/gpu-sentinel.duckdb`, recreated each run */
  readonly dbPath?: string;
  /** Remediation mode; local mode never executes it (dry-run). @default 'replace' */
  readonly remediationMode?: RemediationMode;
  /** Grace period before a (dry-run) reboot or replacement, s (`--remediation-delay-s`). @default 0 */
  readonly remediationDelayS?: number;
  /** Price overrides by instance type, USD/hour. @default {} */
  readonly priceOverrides?: PriceOverrides;
  /** The deployment's rates (`--price-rates FILE`, the stack's `priceRates` shape). @default {} (list prices) */
  readonly priceRates?: PriceRates;
  /** Rule thresholds and XID policy (`gpu-sentinel local --rules FILE`). @default the defaults */
  readonly rules?: RuleContext;
  /** Structured log of the pipeline. */
  readonly log: Log;
  /** Console writer for alert lines. @default process.stdout.write */
  readonly write?: (line: string) => void;
  /**
   * How often the fleet evaluator runs on a timer, ms ≥ 1 (`gpu-sentinel local --fleet-interval`);
   * its alerts go to the same console and `alerts.jsonl`. @default undefined (no timer; call
   * `evaluateFleet` yourself)
   */
  readonly fleetIntervalMs?: number;
  /** The fleet evaluator's clock. @default systemClock */
  readonly clock?: () => Date;
  /**
   * A Cost and Usage Report 2.0 file or export folder (`gpu-sentinel local --cur`): the fleet
   * evaluator prices team waste from it, as it does in AWS (`DuckDbCurFleetReads`).
   * @default undefined (the prices stored at ingest)
   */
  readonly curPath?: string;
}

/** A running local pipeline: loopback API in front of the ingest handler, DuckDB store, console/JSONL sinks. */
export interface LocalPipeline {
  /** Base URL of the loopback API (`POST ${url}/v1/batches`). */
  readonly url: string;
  readonly store: DuckDbStore;
  readonly alerts: ConsoleAlertSink;
  readonly decisions: JsonlDecisionSink;
  /**
   * Runs the fleet evaluator once (docs/design.md §6): the instances that reported are the running
   * ones (see `LocalRunningInstances`), alerts to the console sink with the ingest lifecycle.
   * @param now - its clock @default the pipeline's clock
   */
  evaluateFleet(now?: Date): Promise<FleetEvaluation>;
  /** Queries the ledger over [from, to), writes `waste.csv`, returns the rows. */
  writeWasteReport(from: Date, to: Date): Promise<WasteReportRow[]>;
  /** Stops the server and closes the store. */
  close(): Promise<void>;
}

/**
 * Starts the embedded default (docs/design.md §12): the same ingest handler as the Lambda behind a real
 * HTTP server on 127.0.0.1, a DuckDB store, console + JSONL alert and decision sinks, and dry-run
 * remediation (decisions recorded, nothing executed). No AWS account needed.
 *
 * @throws when the folder cannot be written or the port cannot be bound
 */
export async function startLocalPipeline(options: LocalPipelineOptions): Promise<LocalPipeline> {
  await mkdir(options.outDir, { recursive: true });
  const alertsPath = join(options.outDir, 'alerts.jsonl');
  const decisionsPath = join(options.outDir, 'remediation.jsonl');
  const dbPath = options.dbPath ?? join(options.outDir, 'gpu-sentinel.duckdb');
  await Promise.all([
    writeFile(alertsPath, ''),
    writeFile(decisionsPath, ''),
    options.dbPath ? Promise.resolve() : rm(dbPath, { force: true }),
    options.dbPath ? Promise.resolve() : rm(`${dbPath}.wal`, { force: true }),
  ]);
  const store = await DuckDbStore.open(dbPath);
  const alerts = new ConsoleAlertSink(alertsPath, options.write);
  const decisions = new JsonlDecisionSink(decisionsPath);
  const handler = createIngestHandler({
    store,
    state: store,
    alerts,
    decisions,
    remediator: new DryRunRemediator(),
    log: options.log,
    remediationMode: options.remediationMode ?? 'replace',
    remediationDelayS: options.remediationDelayS ?? 0,
    dryRun: true,
    priceOverrides: options.priceOverrides,
    ...(options.priceRates !== undefined ? { priceRates: options.priceRates } : {}),
    rules: options.rules ?? DEFAULT_RULE_CONTEXT,
    callerCheck: 'none',
  });
  const api = await startLocalApi({ handler });
  const clock = options.clock ?? systemClock;
  const fleetDeps = {
    store,
    state: store,
    alerts,
    instances: new LocalRunningInstances(store),
    ...(options.curPath !== undefined
      ? { cur: new DuckDbCurFleetReads(store.session, options.curPath) }
      : {}),
    log: options.log,
    rules: options.rules ?? DEFAULT_RULE_CONTEXT,
  };
  // One evaluation at a time: a tick that finds the previous one still running is skipped.
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (running !== undefined) return;
    running = evaluateFleet(fleetDeps, clock())
      .catch((err: unknown) =>
        options.log.error('fleet evaluation failed', { error: (err as Error).message }),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const timer =
    options.fleetIntervalMs === undefined ? undefined : setInterval(tick, options.fleetIntervalMs);
  return {
    url: api.url,
    store,
    alerts,
    decisions,
    evaluateFleet: (now) => evaluateFleet(fleetDeps, now ?? clock()),
    async writeWasteReport(from, to) {
      const rows = await store.queryWaste({ from, to });
      await writeFile(join(options.outDir, 'waste.csv'), wasteCsv(rows));
      return rows;
    },
    async close() {
      if (timer !== undefined) clearInterval(timer);
      await running;
      await api.close();
      await store.close();
    },
  };
}
